;; expect: E-LOADER-SOURCE 5 1
;; The images file does not exist.
(require "sexpgpu/nn")
(require "sexpgpu/optim")
(defloader train
  :source (idx "no-such-dataset/train-images-idx3-ubyte.gz" "no-such-dataset/train-labels-idx1-ubyte.gz")
  :batch 128)
(defmodel net (x) (nn:linear (flatten (cast x :f32) :start 1) 10 :name "fc"))
(defun objective (batch ctx) (cross-entropy (net (getf batch :x)) (getf batch :y)))
(defun optimizer () (optim:sgd :lr 0.1))
(defrun :steps 10)
