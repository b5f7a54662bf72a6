;; expect: W-UNUSED-PARAM 7 3
;; The model declares a parameter the loss never reaches: the warning is at its defparam.
(require "sexpgpu/nn")
(require "sexpgpu/optim")
(defloader train :source (synthetic :regression :features 8 :examples 64 :seed 1) :batch 8)
(defmodel net (x)
  (defparam extra '(3))
  (nn:linear x 1 :name "fc"))
(defun objective (batch ctx) (mse (net (field batch :x)) (field batch :y)))
(defun optimizer () (optim:sgd :lr 0.1))
(defrun :steps 10)
