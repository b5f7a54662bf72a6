;; expect: E-REQUIRE-NOT-FOUND 5 1
;; expect: E-REQUIRE-NOT-FOUND 6 1
;; Two requires that fail: the uses of what they would have given (blocks:width,
;; dense) are consequences, not further errors.
(require "./modules/no-such-blocks.lisp" :as blocks)
(require "./modules/no-such-layers.lisp" :only (dense))
(require "sexpgpu/optim")
(defparameter *width* (blocks:width))
(defloader train :source (synthetic :regression :features 8 :examples 64 :seed 1) :batch 8)
(defmodel net (x) (dense x *width*))
(defun objective (batch ctx) (mse (net (field batch :x)) (field batch :y)))
(defun optimizer () (optim:sgd :lr 0.1))
(defrun :steps 10)
