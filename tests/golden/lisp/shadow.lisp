;;;; A definition that replaces a CL, builtin or prelude name (W-SHADOW) is
;;;; the file's own (language.md, "Modules and require"): the file's code
;;;; sees it, the prelude's functions and macro expansions and the modules'
;;;; code keep the original.

(defun car (x) (list :mine x))
;!W-SHADOW
(car '(1 2))
;=> (:mine (1 2))
(funcall #'car 3)
;=> (:mine 3)
(defun car (x) (list :mine-again x))
(car 4)
;=> (:mine-again 4)
;; The prelude's dolist expands into CL's car; the body is the file's own.
(let ((seen nil)) (dolist (x '((1) (2)) (nreverse seen)) (push (car x) seen)))
;=> ((:mine-again (1)) (:mine-again (2)))
(loop for x in '(1 2 3) collect x)
;=> (1 2 3)
(destructuring-bind (a b) '(1 2) (list a b))
;=> (1 2)
;; The prelude's functions call CL's car.
(split-string "a,b" #\,)
;=> ("a" "b")
(require "./modules/uses-car.lisp" :as u)
(u:firsts '((1 2) (3 4)))
;=> (1 3)
(u:heads '((1 2) (3 4)))
;=> (1 3)
;; A macro of the file's own: its expansion is the file's, so it sees the file's car.
(defmacro first-of (x) `(car ,x))
(first-of '(5))
;=> (:mine-again (5))
;; A prelude macro replaced: the file's uses get the new one, the prelude's own uses keep CL's.
(defmacro when (test &body body) `(list :my-when ,test ,@body))
;!W-SHADOW
(when t 1)
;=> (:my-when t 1)
(let ((n 0)) (dotimes (i 3 n) (incf n i)))
;=> 3
(unless nil 7)
;=> 7
