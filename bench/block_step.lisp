;;;; A small pre-norm transformer block (batch 8, 64 tokens, width 128, 4
;;;; heads, MLP 512): forward, a mean-square loss and every parameter's
;;;; gradient (bench/cpu_vs_torch.py builds the same in PyTorch).
(defun heads (x n)
  (destructuring-bind (b tt c) (shape x)
    (transpose (reshape x (list b tt n (floor c n))) 1 2)))

(defun unheads (x)
  (destructuring-bind (b h tt d) (shape x)
    (reshape (transpose x 1 2) (list b tt (* h d)))))

(stage-function block ((x (8 64 128))
                       (ln1-w (128) :param) (ln1-b (128) :param)
                       (qkv-w (128 384) :param) (proj-w (128 128) :param)
                       (ln2-w (128) :param) (ln2-b (128) :param)
                       (fc-w (128 512) :param) (out-w (512 128) :param))
  (let* ((qkv (split (matmul (layer-norm x ln1-w ln1-b) qkv-w) 128 :axis -1))
         (att (attention (heads (first qkv) 4) (heads (second qkv) 4) (heads (third qkv) 4)
                         :causal t))
         (x (+ x (matmul (unheads att) proj-w)))
         (x (+ x (matmul (gelu (matmul (layer-norm x ln2-w ln2-b) fc-w)) out-w))))
    (mean (square x))))
