;; expect: E-EVAL-LEAK 9 1
;; The evaluation pass reads the train loader itself.
(require "sexpgpu/nn")
(require "sexpgpu/optim")
(defloader train :source (synthetic :blobs :classes 3 :features 4 :examples 300 :seed 1) :batch 10)
(defmodel net (x) (nn:linear x 3 :name "fc"))
(defun objective (batch ctx) (cross-entropy (net (getf batch :x)) (getf batch :y)))
(defun evaluate (batch ctx) (metric :loss (objective batch ctx)))
(defeval val :loader train :every 5)
(defun optimizer () (optim:sgd :lr 0.1))
(defrun :steps 10)
