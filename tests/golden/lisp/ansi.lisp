;;;; Departures from SBCL that the public ANSI test suite found (issue 16,
;;;; tests/ansi/run_ansi.py over the whole suite), one group per fix. Every
;;;; expectation is SBCL 2.2.9's value for the form.

;;; setf of values, subseq, apply
(let ((x nil) (y nil) (z nil)) (setf (values x y z) (values 1 2 3)))
;=> 1
;=> 2
;=> 3
(let ((x nil) (y nil)) (setf (values x y) (values 1 2 3)) (list x y))
;=> (1 2)
(let ((x (list 'a 'b))) (setf (values (car x) (cadr x)) (values 1 2)) x)
;=> (1 2)
(multiple-value-list (setf (values) (values)))
;=> nil
(let (a b) (setf (values a b) (floor 7 2)) (list a b))
;=> (3 1)
(let ((x (list 0 1 2 3 4))) (setf (subseq x 1 3) '(a b c)) x)
;=> (0 a b 3 4)
(let ((s (copy-seq "abcdef"))) (list (setf (subseq s 4) "xyz") s))
;=> ("xyz" "abcdxy")
(let ((v (vector 0 1 2 3))) (setf (apply #'aref v '(2)) 'z) v)
;=> #(0 1 z 3)
;;; psetf, psetq: each place's subforms, then its value, left to right
(let ((x (vector nil nil nil nil)) (i 0)) (psetf (aref x (incf i)) (incf i)) (list x i))
;=> (#(nil 2 nil nil) 2)
(let ((a (copy-seq #(0 1 2 3 4 5 6 7 8 9))) (i 0)) (psetf (aref a (incf i)) (aref a (incf i)) (aref a (incf i)) (aref a (incf i))) (list a i))
;=> (#(0 2 2 4 4 5 6 7 8 9) 4)
(let ((y 2) (z 3) u x a b c) (psetf (values a b c) (values 1 2 3) (values u x) (values y z)) (list a b c u x))
;=> (1 2 3 2 3)
(let ((a 1) (b 2)) (psetq a b b a) (list a b))
;=> (2 1)
(let ((a (copy-seq #(0 1 2 3 4 5))) (i 0)) (symbol-macrolet ((x (aref a (incf i))) (y (aref a (incf i)))) (psetq x (aref a (incf i)) y (aref a (incf i)))) (list a i))
;=> (#(0 2 2 4 4 5) 4)
;;; incf and decf of a variable read it after the delta
(let ((x 0)) (list (incf x (setf x 1)) x))
;=> (2 2)
(let ((x 0)) (list (decf x (setf x 1)) x))
;=> (0 0)
;;; multiple-value-setq
(multiple-value-setq nil (values 'a 'b))
;=> a
(let ((i 0) (x (list nil))) (symbol-macrolet ((y (car (progn (incf i) x)))) (multiple-value-setq (y) i)) x)
;=> (1)
;;; ecase: t and otherwise are keys, not an otherwise clause
(handler-case (ecase 1 (t :t)) (type-error () :type-error))
;=> :type-error
(ecase t (t :t))
;=> :t
(ecase 'otherwise (otherwise :otherwise))
;=> :otherwise
;;; eval-when: the body runs for :execute
(eval-when () :bad)
;=> nil
(eval-when (:compile-toplevel :load-toplevel) :bad)
;=> nil
(eval-when (:execute) :good)
;=> :good
(let ((x :good)) (values (eval-when (:load-toplevel) (setq x :bad)) x))
;=> nil
;=> :good
;;; free special declarations
(let ((x 1)) (declare (special x)) (let ((x 2)) (defun %ansi-f (&optional (y x)) (declare (special x)) (list y x)) (%ansi-f)))
;=> (2 1)
(let ((x :dynamic)) (declare (special x)) (let ((x :lexical)) (labels ((f () x)) (declare (special x)) (list (f) x))))
;=> (:lexical :dynamic)
(let ((x :good)) (declare (special x)) (let ((x :bad)) (symbol-macrolet () (declare (special x)) x)))
;=> :good
(let ((x :good)) (declare (special x)) (let ((x :bad)) (dolist (e nil x) (declare (special x)))))
;=> :good
(handler-case (symbol-macrolet ((x 10)) (declare (special x)) 20) (error () :error))
;=> :error
;;; #n= and #n#
((lambda (#1=#:foo) #1#) 17)
;=> 17
((lambda (&key #1=#:foo) #1#) :foo 12)
;=> 12
'(#1=(a b) #1# #2=x #2#)
;=> ((a b) (a b) x x)
;;; bit vectors
#*0110
;=> #*0110
#5*01
;=> #*01111
(list (length #*101) (aref #*101 0) (typep #*101 'bit-vector) (typep #*101 'simple-bit-vector) (typep #*1 '(vector bit)) (typep #*1 'simple-vector))
;=> (3 1 t t t nil)
(type-of #*101)
;=> (simple-bit-vector 3)
(concatenate 'bit-vector '(0 1 1) nil #(1 0 1) #())
;=> #*011101
(map 'bit-vector #'identity '(0 0 1))
;=> #*001
(map '(simple-bit-vector 3) #'- '(1 1 0) '(1 0 0))
;=> #*010
(coerce '(1 0 1) 'bit-vector)
;=> #*101
(make-array 4 :element-type 'bit :initial-element 1)
;=> #*1111
(make-array 2 :element-type 'bit)
;=> #*00
(equal #*101 (coerce '(1 0 1) 'bit-vector))
;=> t
(equal #*101 #(1 0 1))
;=> nil
(let ((b (make-array 3 :element-type 'bit))) (setf (aref b 1) 1) b)
;=> #*010
(handler-case (setf (aref (copy-seq #*00) 0) 2) (type-error () :type-error))
;=> :type-error
(reverse #*0011)
;=> #*1100
(remove 0 #*01011)
;=> #*111
;;; typep over compound array types
(list (typep "abc" '(vector t)) (typep "abc" '(vector character)) (typep (vector 1) '(vector t)) (typep "abc" '(array character (3))) (typep "abc" '(array * 1)) (typep "abc" '(simple-string 3)))
;=> (nil t t t t t)
(list (typep (make-array 2 :fill-pointer 1) 'simple-vector) (typep (make-array 2 :fill-pointer 1) '(vector t)) (typep (make-array 2 :fill-pointer 1 :element-type 'character) 'simple-string) (typep "ab" 'simple-string))
;=> (nil t nil t)
(handler-case (typep nil '(values)) (error () :error))
;=> :error
(handler-case (coerce '(a b c) '(vector * 2)) (error () :error))
;=> :error
(coerce '(a b) '(vector * 2))
;=> #(a b)
;;; fboundp takes function names only
(handler-case (fboundp '(setf)) (type-error () :type-error))
;=> :type-error
(handler-case (fboundp '(setf foo bar)) (type-error () :type-error))
;=> :type-error
(fboundp '(setf %ansi-nothing))
;=> nil
;;; warn: a condition type must be a warning's
(handler-case (warn 'simple-condition) (type-error () :type-error))
;=> :type-error
;;; write-to-string checks its keywords
(handler-case (write-to-string nil :radix) (error () :error))
;=> :error
(write-to-string 12 :radix nil)
;=> "12"
;;; char-code-limit
char-code-limit
;=> 1114112
;;; documentation
(progn (defvar *%ansi-v* 1 "The variable.") (documentation '*%ansi-v* 'variable))
;=> "The variable."
(progn (defun %ansi-g () "The function." 1) (list (documentation '%ansi-g 'function) (documentation #'%ansi-g t)))
;=> ("The function." "The function.")
(documentation (gensym) 'function)
;=> nil
;;; defvar evaluates its value only when the variable is unbound
(let ((x 0)) (defvar *%ansi-w* (incf x)) (defvar *%ansi-w* (incf x)) (list *%ansi-w* x))
;=> (1 1)
;;; format at its edges
(format nil (concatenate 'string "~{~" (string #\Newline) "~}") nil)
;=> ""
(format nil (concatenate 'string "~@{~" (string #\Newline) "~}"))
;=> ""
(format nil "~100000000000000000000000000000[a~;b~]" 3)
;=> ""
(format nil "~2,,,,1000000000000000000r" 17)
;=> "10001"
(format nil "~:d" 1234567)
;=> "1,234,567"
(handler-case (format nil "~<X~:;Y~>~W" nil) (error () :error))
;=> :error
(handler-case (format nil "~< ~W ~>" nil) (error () :error))
;=> :error
(format nil "~<~a~;~a~>" 1 2)
;=> "12"
;;; macro lambda lists: () is a pattern for an empty list
(macrolet ((%m (()) :good)) (%m ()))
;=> :good
(macrolet ((%m ((a) ()) a)) (%m (1) ()))
;=> 1
;;; an object is of the type type-of names
(macrolet ((%m (&environment env) (typep env (type-of env)))) (%m))
;=> t
;;; nested values places: a subplace's first store takes the value
(let ((a t) (b t) (c t)) (setf (values a (values b c)) (values 0 1 2)) (list a b c))
;=> (0 1 nil)
;;; a function type in a declaration
(flet ((%f () nil)) (let ((f #'%f)) (declare (type (function () null) f)) (funcall f)))
;=> nil
