;;;; The resume test's run: a small classifier on synthetic blobs, shuffled,
;;;; AdamW with a schedule, checkpoints every 200 steps. Killed at a random
;;;; moment and resumed, it must end with the bytes of an uninterrupted run.
(require "sexpgpu/nn")
(require "sexpgpu/optim")

(defknob steps 5000 :type integer :min 1)

(defloader train :source (synthetic :blobs :classes 4 :features 16 :examples 2000 :seed 3)
  :split (0.0 0.9) :batch 32 :shuffle t)
(defloader val :source (synthetic :blobs :classes 4 :features 16 :examples 2000 :seed 3)
  :split (0.9 1.0) :batch 50)

(defmodel net (x)
  (nn:linear (nn:dropout (relu (nn:linear x 64 :name "fc1")) 0.1) 4 :name "fc2"))

(defun objective (batch ctx)
  (let ((logits (net (getf batch :x))))
    (metric :acc (mean (= (argmax logits :axis -1) (getf batch :y))))
    (cross-entropy logits (getf batch :y))))

(defun evaluate (batch ctx)
  (let ((logits (net (getf batch :x))))
    (metric :loss (cross-entropy logits (getf batch :y)))
    (metric :acc (mean (= (argmax logits :axis -1) (getf batch :y))))))

(defeval val :loader val :every 500)

(defun optimizer ()
  (optim:adamw :lr (optim:warmup-cosine 3e-3 :warmup 20) :weight-decay 0.01))

(defrun :steps steps :seed 7 :log-every 20 :clip-norm 1.0
  :checkpoint (:every 200 :keep 2))
