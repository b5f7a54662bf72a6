;; expect: E-SHAPE 7 6
;; The model multiplies 8 features by a 3-row matrix.
(require "sexpgpu/nn")
(require "sexpgpu/optim")
(defloader train :source (synthetic :regression :features 8 :examples 64 :seed 1) :batch 8)
(defmodel net (x)
  (+ (matmul x (defparam w '(3 1))) 0.0))
(defun objective (batch ctx) (mse (net (getf batch :x)) (getf batch :y)))
(defun optimizer () (optim:sgd :lr 0.1))
(defrun :steps 10)
