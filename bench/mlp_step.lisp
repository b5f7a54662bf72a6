;;;; The 784-256-10 MLP at batch 128: forward, cross-entropy and the
;;;; gradients of its four parameters (bench/cpu_vs_torch.py).
(stage-function mlp ((x (128 784)) (y (128) :i32)
                     (w1 (784 256) :param) (b1 (256) :param)
                     (w2 (256 10) :param) (b2 (10) :param))
  (cross-entropy (+ (matmul (relu (+ (matmul x w1) b1)) w2) b2) y))
