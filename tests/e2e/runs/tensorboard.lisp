;;;; The tensorboard sink's test run: a small classifier on synthetic blobs
;;;; with every kind of series a run reports (the loss, a training metric, a
;;;; scheduled learning rate, the runtime's measurements) and an evaluation
;;;; pass, logged often, with checkpoints to resume from.
(require "sexpgpu/nn")
(require "sexpgpu/optim")

(defloader train :source (synthetic :blobs :classes 3 :features 4 :examples 600 :seed 1)
  :split (0.0 0.8) :batch 32 :shuffle t)
(defloader held-out :source (synthetic :blobs :classes 3 :features 4 :examples 600 :seed 1)
  :split (0.8 1.0) :batch 40)

(defmodel classifier (x)
  (nn:linear (relu (nn:linear x 16 :name "hidden")) 3 :name "out"))

(defun objective (batch ctx)
  (let ((logits (classifier (getf batch :x))))
    (metric :acc (mean (= (argmax logits :axis -1) (getf batch :y))))
    (cross-entropy logits (getf batch :y))))

(defun evaluate (batch ctx)
  (let ((logits (classifier (getf batch :x))))
    (metric :loss (cross-entropy logits (getf batch :y)))
    (metric :acc (mean (= (argmax logits :axis -1) (getf batch :y))))))

(defeval held-out :loader held-out :every 10)
(defun optimizer () (optim:adamw :lr (optim:warmup-cosine 1e-2 :warmup 10)))
(defrun :steps 40 :log-every 5 :checkpoint (:every 20 :keep 2))
