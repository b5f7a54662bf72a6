;; expect: E-LOADER-FIELD 8 58
;; expect: E-UNBOUND 9 36
;; Two independent mistakes, one in the objective and one in the optimizer: one check reports both.
(require "sexpgpu/nn")
(require "sexpgpu/optim")
(defloader train :source (synthetic :regression :features 8 :examples 64 :seed 1) :batch 8)
(defmodel net (x) (nn:linear x 1 :name "fc"))
(defun objective (batch ctx) (mse (net (field batch :x)) (field batch :label)))
(defun optimizer () (optim:sgd :lr learning-rate))
(defrun :steps 10)
