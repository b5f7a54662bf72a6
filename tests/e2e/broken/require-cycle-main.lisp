;; expect: E-REQUIRE-CYCLE 3 1
;; The module requires this run file back (at its line 3): a cycle, found before anything else about the file.
(require "./modules/back-to-main.lisp")
(require "sexpgpu/nn")
(require "sexpgpu/optim")
(defloader train :source (synthetic :regression :features 8 :examples 64 :seed 1) :batch 8)
(defmodel net (x) (nn:linear x 1 :name "fc"))
(defun objective (batch ctx) (mse (net (field batch :x)) (field batch :y)))
(defun optimizer () (optim:sgd :lr 0.1))
(defrun :steps 10)
