;;;; Fashion-MNIST with a small convolutional network: two 3x3 convolutions
;;;; with max pooling, then two linear layers.
;;;; Data: Debian's dataset-fashion-mnist package (/usr/share/datasets/fashion-mnist).
(require "sexpgpu/nn")
(require "sexpgpu/optim")

(defknob channels 16 :doc "channels of the first convolution (the second has twice as many)"
  :type integer :min 1)
(defknob lr 2e-3 :doc "peak learning rate" :type float :min 0.0)
(defknob epochs 3 :doc "passes over the training set" :type integer :min 1)
(defvariant quick :doc "one epoch" (:epochs 1))

(defloader train
  :source (idx "fashion-mnist/train-images-idx3-ubyte.gz"
               "fashion-mnist/train-labels-idx1-ubyte.gz")
  :batch 128 :shuffle t :drop-last t)

(defloader test
  :source (idx "fashion-mnist/t10k-images-idx3-ubyte.gz"
               "fashion-mnist/t10k-labels-idx1-ubyte.gz")
  :batch 1000)

(defmodel convnet (x)
  (let* ((h (max-pool2d (relu (nn:conv2d x channels 3 :padding 1 :name "conv1")) 2))
         (h (max-pool2d (relu (nn:conv2d h (* 2 channels) 3 :padding 1 :name "conv2")) 2))
         (h (relu (nn:linear (flatten h :start 1) 128 :name "fc1"))))
    (nn:linear h 10 :name "fc2")))

(defun prepare (batch ctx)
  (let ((x (getf batch :x)))
    (list :x (/ (cast (reshape x (list (dim x 0) 1 28 28)) :f32) 255.0)
          :y (getf batch :y))))

(defun objective (batch ctx)
  (let ((logits (convnet (getf batch :x))))
    (metric :acc (mean (= (argmax logits :axis -1) (getf batch :y))))
    (cross-entropy logits (getf batch :y))))

(defun evaluate (batch ctx)
  (let ((logits (convnet (getf batch :x))))
    (metric :loss (cross-entropy logits (getf batch :y)))
    (metric :acc (mean (= (argmax logits :axis -1) (getf batch :y))))))

(defeval test :loader test :every 500 :batches :all)

(defun optimizer ()
  (optim:adamw :lr (optim:warmup-cosine lr :warmup 100) :weight-decay 0.01))

(defrun
  :epochs epochs
  :seed 0
  :log-every 50
  :checkpoint (:every 1000 :keep 2)
  :target ("test/acc" :>= 0.89))
