;;;; Passes: the scalar arithmetic folds, the repeated subexpression is
;;;; computed once, the unused branch disappears, and the elementwise chain
;;;; is one fusion group.
(stage-function chain ((x (1024)))
  (let ((unused (exp x))
        (scale (* 2.0 (+ 1.0 0.5))))
    (declare (ignore unused))
    (+ (tanh (* x scale)) (tanh (* x scale)) 1.0)))
