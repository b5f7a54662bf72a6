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
