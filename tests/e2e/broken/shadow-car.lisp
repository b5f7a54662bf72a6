;; expect: W-SHADOW 6 1
;; The file's own car replaces CL's in the file alone: the prelude's macros
;; (dolist, defmodel) and sexpgpu/nn keep meaning CL's car, so the file compiles.
(require "sexpgpu/nn")
(require "sexpgpu/optim")
(defun car (x) (list :mine x))
(defparameter *mine* (car 1))
(defparameter *count* (let ((n 0)) (dolist (x '(1 2 3) n) (incf n x))))
(defloader train :source (synthetic :regression :features 8 :examples 64 :seed 1) :batch 8)
(defmodel net (x) (nn:linear x 1 :name "fc"))
(defun objective (batch ctx) (mse (net (field batch :x)) (field batch :y)))
(defun optimizer () (optim:sgd :lr 0.1))
(defrun :steps 10)
