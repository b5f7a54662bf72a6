;;;; The 784-256-10 MLP of examples/mlp.lisp as one staged step: forward,
;;;; cross-entropy loss and the gradients of the four parameters.
(stage-function train-step ((x (128 784)) (y (128) :i32)
                            (w1 (784 256) :param) (b1 (256) :param)
                            (w2 (256 10) :param) (b2 (10) :param))
  (let* ((h (relu (+ (matmul x w1) b1)))
         (logits (+ (matmul h w2) b2)))
    (cross-entropy logits y)))
