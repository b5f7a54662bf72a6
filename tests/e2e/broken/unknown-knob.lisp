;; expect: E-KNOB-UNKNOWN 6 1
;; A variant sets a knob nobody declared.
(require "sexpgpu/nn")
(require "sexpgpu/optim")
(defknob width 16 :type integer)
(defvariant wide (:widht 64))
(defloader train :source (synthetic :regression :features 8 :examples 64 :seed 1) :batch 8)
(defmodel net (x) (nn:linear (relu (nn:linear x width :name "a")) 1 :name "b"))
(defun objective (batch ctx) (mse (net (getf batch :x)) (getf batch :y)))
(defun optimizer () (optim:sgd :lr 0.1))
(defrun :steps 10)
