(defmodule optim
  (:export sgd adam adamw lion muon adafactor
   constant linear-warmup warmup-cosine warmup-linear warmup-stable-decay
   step-decay exponential))

;;;; sexpgpu/optim: the standard optimizers and learning-rate schedules
;;;; (docs/optim.md), written with defoptimizer. Each optimizer follows one
;;;; published implementation step for step (named in its docstring), and
;;;; tests/unit/test_optimizers.cpp checks it against that implementation's
;;;; trajectories (tests/optim_reference/).
;;;;
;;;; Hyperparameters may be schedules, which arrive in an update as staged
;;;; scalars: so the code tests "is this the number 0" (zero-p) rather than
;;;; (zerop x), and writes piecewise schedules with min and max, which work
;;;; on numbers and staged scalars alike.

(defun zero-p (x)
  "True when X is the number 0 (a schedule never is): a term that can be left out."
  (and (numberp x) (zerop x)))

(defun as-float (x)
  (if (numberp x) (float x) (cast x :f32)))

(defun rms (x)
  (sqrt (mean (square x))))

;;; ---- SGD ------------------------------------------------------------------------

(defoptimizer sgd (&key (lr 1e-3) (momentum 0) (dampening 0) nesterov (weight-decay 0))
  "Stochastic gradient descent, as torch.optim.SGD: L2 weight decay added to
the gradient, a momentum buffer that starts as the first gradient, and
Nesterov momentum. Without momentum the buffer is an unused scalar."
  (when (and nesterov (or (zero-p momentum) (not (zero-p dampening))))
    (error 'type-error :format-control "sgd: Nesterov momentum needs a momentum and no dampening"
           :format-arguments nil))
  (defstate buf :shape (lambda (shape) (if (zero-p momentum) '() shape)))
  (optimizer-update (p g ctx)
    (let ((d (if (zero-p weight-decay) g (+ g (* weight-decay p)))))
      (unless (zero-p momentum)
        (let ((next (+ (* momentum buf) (* (- 1 dampening) d))))
          ;; PyTorch's buffer is the first gradient itself, undamped.
          (setf buf (if (zero-p dampening) next (where (= (funcall ctx :step) 0) d next)))
          (setf d (if nesterov (+ d (* momentum buf)) buf))))
      (- p (* lr d)))))

;;; ---- Adam and AdamW -------------------------------------------------------------

(defun bias-correction (beta k)
  "1 - beta^k, computed as -expm1(k·ln beta): in f32, 1 - 0.999^k would lose
most of its digits to the subtraction."
  (if (zero-p beta) 1 (- (expm1 (* k (log beta))))))

(defun adam-direction (m v b1 b2 eps ctx)
  "m̂ / (√v̂ + eps) with PyTorch's bias corrections at step k = (ctx :step) + 1:
m / (1 - b1^k) / (√v / √(1 - b2^k) + eps)."
  (let ((k (+ (funcall ctx :step) 1)))
    (/ (/ m (bias-correction b1 k))
       (+ (/ (sqrt v) (sqrt (bias-correction b2 k))) eps))))

(defoptimizer adam (&key (lr 1e-3) (betas '(0.9 0.999)) (eps 1e-8) (weight-decay 0))
  "Adam (Kingma and Ba, 2015) as torch.optim.Adam: weight decay is L2, added
to the gradient."
  (defstate m)
  (defstate v)
  (optimizer-update (p g ctx)
    (let ((g (if (zero-p weight-decay) g (+ g (* weight-decay p))))
          (b1 (first betas))
          (b2 (second betas)))
      (setf m (+ (* b1 m) (* (- 1 b1) g)))
      (setf v (+ (* b2 v) (* (- 1 b2) (square g))))
      (- p (* lr (adam-direction m v b1 b2 eps ctx))))))

(defoptimizer adamw (&key (lr 1e-3) (betas '(0.9 0.999)) (eps 1e-8) (weight-decay 1e-2))
  "AdamW (Loshchilov and Hutter, 2019) as torch.optim.AdamW: weight decay is
decoupled, p·(1 - lr·weight-decay) before the Adam step."
  (defstate m)
  (defstate v)
  (optimizer-update (p g ctx)
    (let ((b1 (first betas))
          (b2 (second betas)))
      (setf m (+ (* b1 m) (* (- 1 b1) g)))
      (setf v (+ (* b2 v) (* (- 1 b2) (square g))))
      (- (* p (- 1 (* lr weight-decay)))
         (* lr (adam-direction m v b1 b2 eps ctx))))))

;;; ---- Lion -----------------------------------------------------------------------

(defoptimizer lion (&key (lr 1e-4) (betas '(0.9 0.99)) (weight-decay 0))
  "Lion (Chen et al. 2023, 'Symbolic Discovery of Optimization Algorithms',
Algorithm 2): the sign of b1·m + (1 - b1)·g, decoupled weight decay, then
m ← b2·m + (1 - b2)·g."
  (defstate m)
  (optimizer-update (p g ctx)
    (let* ((b1 (first betas))
           (b2 (second betas))
           (direction (sign (+ (* b1 m) (* (- 1 b1) g)))))
      (setf m (+ (* b2 m) (* (- 1 b2) g)))
      (- (* p (- 1 (* lr weight-decay))) (* lr direction)))))

;;; ---- Muon -----------------------------------------------------------------------

(defun newton-schulz (g steps)
  "An approximately semi-orthogonal matrix near G: Keller Jordan's quintic
Newton-Schulz iteration X ← aX + (bA + cA²)X, A = XXᵀ, (a b c) = (3.4445
-4.7750 2.0315), from X = G/(‖G‖_F + 1e-7), on the wide orientation."
  (let* ((tall (> (dim g 0) (dim g 1)))
         (x (if tall (transpose g) g))
         (x (/ x (+ (norm x) 1e-7))))
    (dotimes (i steps)
      (let* ((a (matmul x (transpose x)))
             (b (+ (* -4.7750 a) (* 2.0315 (matmul a a)))))
        (setf x (+ (* 3.4445 x) (matmul b x)))))
    (if tall (transpose x) x)))

(defoptimizer muon (&key (lr 0.02) (momentum 0.95) (nesterov t) (ns-steps 5) (weight-decay 0))
  "Muon (Keller Jordan, github.com/KellerJordan/Muon, muon.py): the momentum
m ← β·m + (1 - β)·g, the Nesterov blend (1 - β)·g + β·m (or m), orthogonalised
by ns-steps Newton-Schulz steps, scaled by √max(1, rows/cols); decoupled
weight decay. For 2-D parameters only."
  (defstate buf)
  (optimizer-update (p g ctx)
    (unless (= (rank p) 2)
      (%shape-error "muon updates 2-D parameters only, and this one has shape ~a: select (ndim 2) ~
                     for muon's group and give the rest another"
                    (shape p)))
    (setf buf (+ (* momentum buf) (* (- 1 momentum) g)))
    (let ((update (newton-schulz (if nesterov (+ (* (- 1 momentum) g) (* momentum buf)) buf)
                                 ns-steps))
          (scale (sqrt (max 1.0 (/ (float (dim p 0)) (dim p 1))))))
      (- (* p (- 1 (* lr weight-decay))) (* lr scale update)))))

;;; ---- Adafactor ------------------------------------------------------------------

(defun factored-p (shape)
  (>= (length shape) 2))

(defun machine-epsilon (dtype)
  "torch.finfo(dtype).eps: Adafactor's default eps1."
  (case dtype
    (:bf16 0.0078125)
    (:f16 0.0009765625)
    (:f64 2.220446049250313d-16)
    (t 1.1920928955078125e-7)))

(defoptimizer adafactor (&key (lr 1e-2) (beta2-decay -0.8) (eps '(nil 1e-3)) (clip-threshold 1.0)
                         (weight-decay 0))
  "Adafactor (Shazeer and Stern, 2018) as torch.optim.Adafactor (PyTorch 2.5):
for a parameter of 2 or more dimensions the second moment is factored into
row (…, R, 1) and column (…, 1, C) means of g², for others kept whole (in
`row`; `col` is then an unused scalar). Relative step size min(lr, 1/√k)
scaled by max(eps2, RMS(p)), update clipped to RMS clip-threshold, decoupled
weight decay p·(1 - lr·weight-decay). eps1 nil is the dtype's machine epsilon."
  (defstate row :shape (lambda (s) (if (factored-p s) (append (butlast s) '(1)) s)))
  (defstate col
    :shape (lambda (s) (if (factored-p s) (append (butlast s 2) (list 1 (car (last s)))) '())))
  (optimizer-update (p g ctx)
    (let* ((eps1 (or (first eps) (machine-epsilon (dtype p))))
           (eps2 (second eps))
           (k (as-float (+ (funcall ctx :step) 1)))
           (decay (pow k beta2-decay))
           (alpha (* (max eps2 (rms p)) (min lr (/ 1 (sqrt k)))))
           (p (if (zero-p weight-decay) p (* p (- 1 (* lr weight-decay)))))
           (v (cond ((factored-p (shape p))
                     (setf row (+ row (* decay (- (mean (square g) :axis -1 :keepdims t) row))))
                     (setf col (+ col (* decay (- (mean (square g) :axis -2 :keepdims t) col))))
                     (/ (matmul row col) (max (mean row :axis -2 :keepdims t) eps1)))
                    (t (setf row (+ row (* decay (- (square g) row)))))))
           (update (* g (rsqrt (max v (* eps1 eps1)))))
           (denom (if clip-threshold (max 1.0 (/ (rms update) clip-threshold)) 1.0)))
      (- p (* (/ alpha denom) update)))))

;;; ---- schedules ------------------------------------------------------------------
;;; Each returns a function of ctx: called with #'ctx in a run it stages a
;;; scalar; called with a function that returns numbers it computes one.

(defun step-of (ctx)
  (as-float (funcall ctx :step)))

(defun total-of (total ctx)
  (as-float (or total (funcall ctx :steps))))

(defun clamp01 (x)
  (max 0.0 (min 1.0 x)))

(defun warmup-factor (step warmup)
  "step/warmup, at most 1: 0 at step 0, 1 from step WARMUP on."
  (if (zero-p warmup) 1.0 (min 1.0 (/ step warmup))))

(defun fraction-left (final progress)
  "From 1 at progress 0 down to FINAL at progress 1, linearly."
  (+ final (* (- 1 final) (- 1 progress))))

(defun constant (value)
  "The schedule that is VALUE at every step."
  (lambda (ctx) (declare (ignore ctx)) value))

(defun linear-warmup (peak &key (warmup 0))
  "0 at step 0 to PEAK at step WARMUP, linearly, then PEAK."
  (lambda (ctx) (* peak (warmup-factor (step-of ctx) warmup))))

(defun warmup-cosine (peak &key (warmup 0) total (final 0))
  "Linear warm-up to PEAK over WARMUP steps, then half a cosine down to
FINAL·PEAK at step TOTAL (default: the run's steps), then FINAL·PEAK."
  (lambda (ctx)
    (let* ((step (step-of ctx))
           (progress (clamp01 (/ (- step warmup) (max 1.0 (- (total-of total ctx) warmup))))))
      (* peak (warmup-factor step warmup)
         (+ final (* (- 1 final) 0.5 (+ 1 (cos (* pi progress)))))))))

(defun warmup-linear (peak &key (warmup 0) total (final 0))
  "Linear warm-up to PEAK over WARMUP steps, then a straight line down to
FINAL·PEAK at step TOTAL (default: the run's steps), then FINAL·PEAK."
  (lambda (ctx)
    (let* ((step (step-of ctx))
           (progress (clamp01 (/ (- step warmup) (max 1.0 (- (total-of total ctx) warmup))))))
      (* peak (warmup-factor step warmup) (fraction-left final progress)))))

(defun warmup-stable-decay (peak &key (warmup 0) decay total (final 0))
  "Linear warm-up to PEAK over WARMUP steps, PEAK until DECAY steps before
TOTAL (default: the run's steps; DECAY defaults to a fifth of it), then a
straight line down to FINAL·PEAK at TOTAL."
  (lambda (ctx)
    (let* ((step (step-of ctx))
           (total (total-of total ctx))
           (decay (if decay (as-float decay) (* 0.2 total)))
           (progress (clamp01 (/ (- step (- total decay)) (max 1.0 decay)))))
      (* peak (warmup-factor step warmup) (fraction-left final progress)))))

(defun step-decay (value &key every (factor 0.1))
  "VALUE·FACTOR^⌊step/EVERY⌋, as torch.optim.lr_scheduler.StepLR."
  (unless (and (integerp every) (plusp every))
    (error 'type-error :format-control "step-decay: :every must be a positive integer, not ~s"
           :format-arguments (list every)))
  (lambda (ctx) (* value (expt factor (floor (/ (step-of ctx) every))))))

(defun exponential (value &key rate)
  "VALUE·RATE^step, as torch.optim.lr_scheduler.ExponentialLR."
  (unless (realp rate)
    (error 'type-error :format-control "exponential: :rate must be a number, not ~s"
           :format-arguments (list rate)))
  (lambda (ctx) (* value (expt rate (step-of ctx)))))
