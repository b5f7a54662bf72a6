;; expect: E-CTX-KEY 8 6
;; ctx has no :learning-rate.
(require "sexpgpu/nn")
(require "sexpgpu/optim")
(defloader train :source (synthetic :regression :features 8 :examples 64 :seed 1) :batch 8)
(defmodel net (x) (nn:linear x 1 :name "fc"))
(defun objective (batch ctx)
  (* (ctx :learning-rate) (mse (net (getf batch :x)) (getf batch :y))))
(defun optimizer () (optim:sgd :lr 0.1))
(defrun :steps 10)
