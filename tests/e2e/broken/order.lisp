;; expect: W-ORDER 8 1
;; The optimizer comes before the objective: a warning, and the file still compiles.
(require "sexpgpu/nn")
(require "sexpgpu/optim")
(defloader train :source (synthetic :regression :features 8 :examples 64 :seed 1) :batch 8)
(defmodel net (x) (nn:linear x 1 :name "fc"))
(defun optimizer () (optim:sgd :lr 0.1))
(defun objective (batch ctx) (mse (net (getf batch :x)) (getf batch :y)))
(defrun :steps 10)
