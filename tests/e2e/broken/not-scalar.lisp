;; expect: E-OBJECTIVE-NOT-SCALAR 7 1
;; The loss is not reduced to a scalar.
(require "sexpgpu/nn")
(require "sexpgpu/optim")
(defloader train :source (synthetic :regression :features 8 :examples 64 :seed 1) :batch 8)
(defmodel net (x) (nn:linear x 1 :name "fc"))
(defun objective (batch ctx) (mse (net (getf batch :x)) (getf batch :y) :reduction :none))
(defun optimizer () (optim:sgd :lr 0.1))
(defrun :steps 10)
