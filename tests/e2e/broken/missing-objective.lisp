;; expect: E-CONTRACT-MISSING 0 0
;; A run file without its objective.
(require "sexpgpu/nn")
(require "sexpgpu/optim")
(defloader train :source (synthetic :regression :features 8 :examples 64 :seed 1) :batch 8)
(defmodel net (x) (nn:linear x 1 :name "fc"))
(defun optimizer () (optim:sgd :lr 0.1))
(defrun :steps 10)
