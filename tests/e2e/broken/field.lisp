;; expect: E-LOADER-FIELD 7 58
;; The regression batch has :x and :y, not :label.
(require "sexpgpu/nn")
(require "sexpgpu/optim")
(defloader train :source (synthetic :regression :features 8 :examples 64 :seed 1) :batch 8)
(defmodel net (x) (nn:linear x 1 :name "fc"))
(defun objective (batch ctx) (mse (net (field batch :x)) (field batch :label)))
(defun optimizer () (optim:sgd :lr 0.1))
(defrun :steps 10)
