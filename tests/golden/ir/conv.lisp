;;;; A small convolutional classifier step: conv, ReLU, pool, linear, loss.
(stage-function conv-step ((x (8 1 28 28)) (y (8) :i32)
                           (k (4 1 3 3) :param) (w (784 10) :param))
  (let* ((h (max-pool2d (relu (conv2d x k :padding 1)) 2))
         (logits (matmul (flatten h :start 1) w)))
    (cross-entropy logits y)))
