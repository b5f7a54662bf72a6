;;;; The PyTorch parity test's run: examples/mlp.lisp's model and optimizer
;;;; on Fashion-MNIST in file order (no shuffle), so PyTorch can see the
;;;; same batches. tests/e2e/torch_parity.py trains the same 20 steps from
;;;; this run's initial parameters and compares every step's loss.
(require "sexpgpu/nn")
(require "sexpgpu/optim")

(defloader train
  :source (idx "fashion-mnist/train-images-idx3-ubyte.gz"
               "fashion-mnist/train-labels-idx1-ubyte.gz")
  :batch 128 :drop-last t)

(defmodel mlp (x)
  (let ((h (relu (nn:linear x 256 :name "fc1"))))
    (nn:linear h 10 :name "fc2")))

(defun prepare (batch ctx)
  (list :x (/ (cast (flatten (getf batch :x) :start 1) :f32) 255.0)
        :y (getf batch :y)))

(defun objective (batch ctx)
  (cross-entropy (mlp (getf batch :x)) (getf batch :y)))

(defun optimizer ()
  (optim:adamw :lr (optim:warmup-cosine 1e-3 :warmup 10 :total 40) :weight-decay 0.01))

(defrun :steps 20 :seed 0 :log-every 1)
