;; expect: E-LOADER-SOURCE 7 1
;; Stage batches of 7 then 32 without :drop-last: entered at any multiple of
;; 7, the epoch of 1000 can end in a remainder of any size below 32, each a
;; compiled step: 32 shapes, more than the 16 a loader may have.
(require "sexpgpu/nn")
(require "sexpgpu/optim")
(defloader train :source (synthetic :blobs :classes 3 :features 4 :examples 1000 :seed 1)
  :batch 32 :stages ((:warm :batch 7) (:main)))
(defmodel net (x) (nn:linear x 3 :name "fc"))
(defun objective (batch ctx) (cross-entropy (net (getf batch :x)) (getf batch :y)))
(defun optimizer () (optim:sgd :lr 0.1))
(defcurriculum
  (stage :warm :until (>= (ctx :step) 10))
  (stage :main))
(defrun :steps 100)
