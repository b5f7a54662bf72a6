;;;; A pre-norm transformer block (GPT-2 style): causal self-attention and a
;;;; GELU MLP, each behind a layer norm and a residual connection.
(defun split-heads (x heads)
  (destructuring-bind (b tt c) (shape x)
    (transpose (reshape x (list b tt heads (floor c heads))) 1 2)))

(defun merge-heads (x)
  (destructuring-bind (b h tt d) (shape x)
    (reshape (transpose x 1 2) (list b tt (* h d)))))

(stage-function block ((x (2 16 64))
                       (ln1-w (64) :param) (ln1-b (64) :param)
                       (qkv-w (64 192) :param) (proj-w (64 64) :param)
                       (ln2-w (64) :param) (ln2-b (64) :param)
                       (fc-w (64 256) :param) (out-w (256 64) :param))
  (let* ((qkv (matmul (layer-norm x ln1-w ln1-b) qkv-w))
         (parts (split qkv 64 :axis -1))
         (att (attention (split-heads (first parts) 4)
                         (split-heads (second parts) 4)
                         (split-heads (third parts) 4)
                         :causal t))
         (x (+ x (matmul (merge-heads att) proj-w)))
         (x (+ x (matmul (gelu (matmul (layer-norm x ln2-w ln2-b) fc-w)) out-w))))
    (mean (square x))))
