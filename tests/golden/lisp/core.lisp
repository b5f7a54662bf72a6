;;;; Special forms, functions and bindings, control, multiple values.

(quote a)
;=> a
(if nil 1 2)
;=> 2
(let ((x 1) (y 2)) (+ x y))
;=> 3
(let* ((x 1) (y (+ x 1))) y)
;=> 2
(defun fact (n) (if (= n 0) 1 (* n (fact (- n 1)))))
(fact 10)
;=> 3628800
(funcall (lambda (&optional (a 1 a-p) &rest r &key b) (list a a-p r b)) 5 :b 2)
;=> (5 t (:b 2) 2)
(values 1 2 3)
;=> 1
;=> 2
;=> 3
(block b (return-from b 7) 8)
;=> 7
(catch 'tag (throw 'tag 9) 10)
;=> 9
(let ((x 0)) (tagbody top (incf x) (if (< x 5) (go top))) x)
;=> 5
(undefined-function-xyz 1)
;!E-UNBOUND
(car 3)
;!E-TYPE
((lambda (a b) a) 1)
;!E-ARITY
(error "boom ~a" 1)
;!E-USER
(handler-case (error "boom ~a" 1) (error (c) (princ-to-string c)))
;=> "boom 1"
(defun deep (n) (deep (+ n 1)))
(deep 0)
;!E-STACK
(labels ((ev (n) (if (= n 0) t (od (- n 1)))) (od (n) (if (= n 0) nil (ev (- n 1))))) (ev 10))
;=> t
(flet ((f (x) (* x 2))) (f 4))
;=> 8
(multiple-value-list (values 1 2))
;=> (1 2)
(multiple-value-bind (a b) (values 1 2) (list b a))
;=> (2 1)
(let ((l (list 1 2 3))) (setf (car l) 10 (cadr l) 20) l)
;=> (10 20 3)
(defvar *dyn* 1)
(defun get-dyn () *dyn*)
(let ((*dyn* 2)) (get-dyn))
;=> 2
(get-dyn)
;=> 1
(let ((x 1)) (unwind-protect (setq x 2) (setq x 3)) x)
;=> 3
`(a ,(+ 1 2) ,@(list 4 5) . b)
;=> (a 3 4 5 . b)
(in-package :foo)
;!E-UNSUPPORTED
(throw 'nobody-catches 1)
;!E-CONTROL
(return-from nowhere 1)
;!E-CONTROL
(let ((k nil)) (block b (setq k (lambda () (return-from b 1)))) (funcall k))
;!E-CONTROL
(tagbody (go missing))
;!E-CONTROL
(handler-case (throw 'nobody 1) (control-error () :caught))
;=> :caught
(warn "careful: ~a" 1)
;!W-USER
(princ-to-string :key)
;=> "KEY"
(prin1-to-string :key)
;=> ":KEY"
;;; Places evaluate their subforms once, left to right, in the lexical environment.
(let ((p (list 'a 1)) (foo nil)) (setf (getf p 'b (setq foo t)) 3) (list foo p))
;=> (t (b 3 a 1))
(macrolet ((m (z) z)) (let ((x 1)) (setf (m x) 2) x))
;=> 2
(macrolet ((second-of (l) `(car (cdr ,l)))) (let ((l (list 1 2 3))) (incf (second-of l) 10) l))
;=> (1 12 3)
(let ((n 0) (v (vector (list :a 1 :b 2)))) (remf (aref v (progn (incf n) 0)) :a) (list n v))
;=> (1 #((:b 2)))
(let ((x (list 'a 'b 'c 'd))) (list (remf x (progn (setq x (list 'e 'f)) 'a)) x))
;=> (nil (e f))
(let ((v (vector 1 2 3)) (i -1)) (rotatef (aref v (incf i)) (aref v (incf i))) (list v i))
;=> (#(2 1 3) 1)
(let ((a 1) (b 2) (c 3)) (rotatef a b c) (list a b c))
;=> (2 3 1)
(let ((a 1) (b 2) (c 3)) (list (shiftf a b c 9) a b c))
;=> (1 2 3 9)
(let ((v (vector 10 20)) (i 0)) (list (shiftf (aref v (incf i)) 5) v i))
;=> (20 #(10 5) 1)
(let ((l (list 1 2 3))) (list (pop (cdr l)) l))
;=> (2 (1 3))
(let ((x 0) (x 1)) x)
;!E-TYPE
(handler-case (let ((x 0) (x 1)) x) (program-error () :refused))
;=> :refused
(count 'a nil :bad t :allow-other-keys nil :allow-other-keys t)
;!E-ARITY
(count 'a '(a b a) :bad t :allow-other-keys t :allow-other-keys nil)
;=> 2
(defun %read-x () (symbol-value 'x))
(handler-case (let* ((x 1) (x (1+ (%read-x)))) (declare (special x)) x) (unbound-variable () :unbound))
;=> :unbound
(let* ((x 1) (y (1+ x))) (declare (special y)) (list x y))
;=> (1 2)
;;; Sizes the file chooses are checked against the heap before allocating.
(make-array 1000000000)
;!E-EVAL-LIMIT
(make-array 100000000000000)
;!E-EVAL-LIMIT
(make-sequence 'list 1000000000)
;!E-EVAL-LIMIT
(adjust-array (make-array 1 :adjustable t) 2000000000)
;!E-EVAL-LIMIT
(make-string 1000000000)
;!E-EVAL-LIMIT
(length (make-array 1000))
;=> 1000
;;; Symbols and types, as SBCL.
(symbol-name '#:|abc|)
;=> "abc"
(let ((s (make-symbol "x"))) (setf (get s 'a) 1) (remprop s 'a))
;=> (a 1)
(let ((*gensym-counter* 5)) (symbol-name (gensym)))
;=> "G5"
(gensym -1)
;!E-TYPE
(list (typep "abc" '(string 4)) (typep "abc" '(string 3)) (typep (vector 1 2) '(vector t 2)))
;=> (nil t t)
(list (typep #\a 'extended-char) (type-of #\Newline) (type-of #\Tab) (type-of (code-char 955)))
;=> (nil standard-char base-char extended-char)
(typep 1 '(integer a b))
;!E-TYPE
