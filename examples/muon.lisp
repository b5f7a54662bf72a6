;;;; A character-level transformer trained with Muon: the hidden weight
;;;; matrices take Muon's orthogonalised updates, the embeddings, norms and
;;;; biases take AdamW. Compare with charlm.lisp, which uses AdamW throughout.
;;;; Data: Debian's fortunes package (/usr/share/games/fortunes).
(require "sexpgpu/nn")
(require "sexpgpu/optim")

(defknob depth 2 :type integer :min 1)
(defknob width 64 :type integer :min 8)
(defknob heads 2 :type integer :min 1)
(defknob seq-len 64 :type integer :min 2)
(defknob muon-lr 0.02 :doc "Muon's learning rate for the hidden matrices" :type float :min 0.0)
(defknob adam-lr 3e-3 :doc "AdamW's learning rate for everything else" :type float :min 0.0)
(defknob steps 300 :type integer :min 1)
(defknob corpus '("/usr/share/games/fortunes/cookie" "/usr/share/games/fortunes/computers"
                  "/usr/share/games/fortunes/definitions" "/usr/share/games/fortunes/people")
  :type list :doc "text files, read as one stream")

(defloader train :source (text corpus :seq-len seq-len) :split (0.0 0.9) :batch 32 :shuffle t)
(defloader val :source (text corpus :seq-len seq-len) :split (0.9 1.0) :batch 32)

(defmodel lm (tokens)
  (let ((x (+ (nn:embedding tokens 256 width :name "embed" :init (nn:normal :std 0.02))
              (nn:positional (dim tokens 1) width :name "pos"))))
    (dotimes (i depth)
      (setq x (nn:transformer-block x heads :causal t :name (list "blocks" i))))
    (matmul (nn:layer-norm x :name "ln-f") (transpose (param "lm.embed.weight")))))

(defun objective (batch ctx)
  (cross-entropy (lm (getf batch :x)) (getf batch :y)))

(defun evaluate (batch ctx)
  (metric :loss (cross-entropy (lm (getf batch :x)) (getf batch :y))))

(defeval val :loader val :every 100 :batches 20)

(defun optimizer ()
  (list (group :hidden :select (and (ndim 2) (not "lm.embed.*") (not "lm.pos.*"))
               :use (optim:muon :lr (optim:warmup-cosine muon-lr :warmup 20) :momentum 0.95))
        (group :rest :select t
               :use (optim:adamw :lr (optim:warmup-cosine adam-lr :warmup 20)
                                 :betas '(0.9 0.95) :weight-decay 0.0))))

(defrun :steps steps :seed 0 :clip-norm 1.0 :log-every 50
  :checkpoint (:every 100 :keep 1)
  :target ("val/loss" :<= 2.8))
