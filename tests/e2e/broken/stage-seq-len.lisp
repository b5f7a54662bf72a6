;; expect: E-LOADER-SOURCE 5 1
;; A stage's :seq-len on a source that has no sequence length.
(require "sexpgpu/nn")
(require "sexpgpu/optim")
(defloader train :source (synthetic :blobs :classes 3 :features 4 :examples 300 :seed 1)
  :batch 10 :stages ((:short :seq-len 8) (:long)))
(defmodel net (x) (nn:linear x 3 :name "fc"))
(defun objective (batch ctx) (cross-entropy (net (getf batch :x)) (getf batch :y)))
(defun optimizer () (optim:sgd :lr 0.1))
(defcurriculum
  (stage :short :until (>= (ctx :step) 5))
  (stage :long))
(defrun :steps 10)
