;;;; sexpgpu/nn: layers, attention and initialisers, written over the tensor
;;;; builtins and defparam (docs/nn.md). A layer takes its input first and
;;;; :name (a scope) last, and declares its parameters under that scope.
;;;; Shapes follow the builtins: a linear weight is (in out) and y = x·W + b
;;;; over the last axis; convolutions are NCHW with weights (out in kh kw).
;;;; Default initialisers are PyTorch's. This file is library code: an error
;;;; inside a layer points at the user's call of it.

(defmodule nn
  (:export linear embedding positional layer-norm rms-norm mlp causal-self-attention
   attention transformer-block conv2d dropout activate
   normal uniform zeros ones constant xavier-uniform xavier-normal
   kaiming-uniform kaiming-normal fans))

;;; The tensor builtins that this module's own definitions of the same names
;;; shadow inside it, taken before the shadowing definitions.
(defvar %normal #'normal)
(defvar %uniform #'uniform)
(defvar %zeros #'zeros)
(defvar %ones #'ones)
(defvar %layer-norm #'layer-norm)
(defvar %rms-norm #'rms-norm)
(defvar %attention #'attention)
(defvar %conv2d #'conv2d)
(defvar %dropout #'dropout)
(defvar %embedding #'embedding)

;;; Initialisers: each returns a function of the shape (a list of integers)
;;; that stages the initial values, described for `explain`.

(defun %short (x)
  "X to three significant digits, as explain shows initialiser arguments."
  (if (or (integerp x) (zerop x))
      x
      (let ((scale (expt 10.0 (- 2 (floor (log (abs x) 10))))))
        (/ (round (* x scale)) scale))))

(defun normal (&key (mean 0) (std 1))
  "Normal draws of mean MEAN and standard deviation STD."
  (describe-init (lambda (shape) (funcall %normal shape :mean mean :std std))
                 (if (zerop mean)
                     (format nil "normal(std=~a)" (%short std))
                     (format nil "normal(mean=~a, std=~a)" (%short mean) (%short std)))))

(defun uniform (&key (low -1) (high 1))
  "Uniform draws in [LOW, HIGH)."
  (describe-init (lambda (shape) (funcall %uniform shape :low low :high high))
                 (if (= low (- high))
                     (format nil "uniform(±~a)" (%short high))
                     (format nil "uniform(~a, ~a)" (%short low) (%short high)))))

(defvar %zeros-init (describe-init (lambda (shape) (funcall %zeros shape)) "zeros"))
(defvar %ones-init (describe-init (lambda (shape) (funcall %ones shape)) "ones"))

(defun zeros (&optional (shape nil shape-p))
  "The zeros initialiser; with SHAPE, a tensor of zeros (so #'nn:zeros is one too)."
  (if shape-p (funcall %zeros-init shape) %zeros-init))

(defun ones (&optional (shape nil shape-p))
  "The ones initialiser; with SHAPE, a tensor of ones (so #'nn:ones is one too)."
  (if shape-p (funcall %ones-init shape) %ones-init))

(defun constant (value)
  "Every element VALUE."
  (describe-init (lambda (shape) (full shape value)) (format nil "constant(~a)" value)))

(defun fans (shape)
  "The fan-in and fan-out of SHAPE, as two values: (in out) for a 2-D (linear)
weight; in·k and out·k for (out in k...) (convolution) weights."
  (let ((dims (if (listp shape) shape (list shape))))
    (cond ((< (length dims) 2)
           (%shape-error "fans: shape ~a has fewer than 2 dimensions, so no fan-in and fan-out"
                         dims))
          ((= (length dims) 2) (values (first dims) (second dims)))
          (t (let ((field (product (cddr dims))))
               (values (* (second dims) field) (* (first dims) field)))))))

(defun %fan (shape mode)
  (multiple-value-bind (fan-in fan-out) (fans shape)
    (if (eq mode :fan-out) fan-out fan-in)))

(defun %check-mode (mode)
  (unless (member mode '(:fan-in :fan-out))
    (error 'type-error :format-control "kaiming: :mode is :fan-in or :fan-out, not ~(~s~)"
           :format-arguments (list mode))))

(defun xavier-uniform (&key (gain 1))
  "Uniform in ±gain·√(6/(fan-in + fan-out)) (Glorot)."
  (describe-init (lambda (shape)
                   (multiple-value-bind (fan-in fan-out) (fans shape)
                     (let ((bound (* gain (sqrt (/ 6.0 (+ fan-in fan-out))))))
                       (funcall %uniform shape :low (- bound) :high bound))))
                 (format nil "xavier-uniform(gain=~a)" gain)))

(defun xavier-normal (&key (gain 1))
  "Normal of std gain·√(2/(fan-in + fan-out)) (Glorot)."
  (describe-init (lambda (shape)
                   (multiple-value-bind (fan-in fan-out) (fans shape)
                     (funcall %normal shape :std (* gain (sqrt (/ 2.0 (+ fan-in fan-out)))))))
                 (format nil "xavier-normal(gain=~a)" gain)))

(defun %mode-name (mode)
  (if (eq mode :fan-out) "fan-out" "fan-in"))

(defun %kaiming-std (shape a mode)
  (/ (sqrt (/ 2.0 (+ 1 (* a a)))) (sqrt (%fan shape mode))))

(defun kaiming-uniform (&key (a 0) (mode :fan-in))
  "Uniform in ±√3·gain/√fan with gain √(2/(1+a²)) (He; a is the leaky slope)."
  (%check-mode mode)
  (describe-init (lambda (shape)
                   (let ((bound (* (sqrt 3.0) (%kaiming-std shape a mode))))
                     (funcall %uniform shape :low (- bound) :high bound)))
                 (format nil "kaiming-uniform(a=~a, ~a)" (%short a) (%mode-name mode))))

(defun kaiming-normal (&key (a 0) (mode :fan-in))
  "Normal of std gain/√fan with gain √(2/(1+a²)) (He)."
  (%check-mode mode)
  (describe-init (lambda (shape) (funcall %normal shape :std (%kaiming-std shape a mode)))
                 (format nil "kaiming-normal(a=~a, ~a)" (%short a) (%mode-name mode))))

(defun %bound-init (fan)
  "uniform(±1/√fan): PyTorch's default for linear and convolution layers."
  (let ((bound (/ 1 (sqrt fan))))
    (uniform :low (- bound) :high bound)))

;;; Activations

(defun activate (x activation)
  "X through ACTIVATION: :relu :gelu :gelu-tanh :silu :tanh, or a function of x."
  (case activation
    (:relu (relu x))
    (:gelu (gelu x))
    (:gelu-tanh (gelu x :approximate :tanh))
    (:silu (silu x))
    (:tanh (tanh x))
    (t (if (functionp activation)
           (funcall activation x)
           (error 'type-error
                  :format-control "activation ~(~s~) is not :relu, :gelu, :gelu-tanh, :silu, :tanh or a function"
                  :format-arguments (list activation))))))

;;; Layers

(defun %last-dim (x what)
  (if (< (rank x) 1)
      (%shape-error "~a: the input ~a has no last axis" what x)
      (dim x -1)))

(defun linear (x out &key (bias t) init name)
  "x·W + b over the last axis: W (in out), b (out); both uniform(±1/√in) by default."
  (scope name
    (let* ((in (%last-dim x "linear"))
           (y (matmul x (defparam weight (list in out) :init (or init (%bound-init in))))))
      (if bias
          (+ y (defparam bias (list out) :init (%bound-init in)))
          y))))

(defun embedding (ids vocab dim &key init name)
  "Rows of the table `weight` (vocab dim), normal(0, 1) by default, by integer IDS."
  (scope name
    (funcall %embedding (defparam weight (list vocab dim) :init (or init (normal))) ids)))

(defun positional (n dim &key (max n) init name)
  "The first N rows of the learned table `weight` (max dim), normal(0, 0.02) by default."
  (scope name
    (when (> n max)
      (%shape-error "positional: ~a positions but the table has ~a (:max)" n max))
    (let ((table (defparam weight (list max dim) :init (or init (normal :std 0.02)))))
      (if (= n max) table (slice table (list (list 0 n) nil))))))

(defun layer-norm (x &key (eps 1e-5) (affine t) name)
  "Layer normalisation over the last axis; with AFFINE, `weight` (ones) and `bias` (zeros)."
  (scope name
    (let ((d (%last-dim x "layer-norm")))
      (if affine
          (funcall %layer-norm x (defparam weight (list d) :init (ones))
                   (defparam bias (list d) :init (zeros)) :eps eps)
          (funcall %layer-norm x (funcall %ones d) (funcall %zeros d) :eps eps)))))

(defun rms-norm (x &key (eps 1e-5) (affine t) name)
  "x·rsqrt(mean(x²) + eps) over the last axis; with AFFINE, times `weight` (ones)."
  (scope name
    (let ((d (%last-dim x "rms-norm")))
      (funcall %rms-norm x (if affine (defparam weight (list d) :init (ones)) (funcall %ones d))
               :eps eps))))

(defun mlp (x hidden &key out (activation :gelu) name)
  "linear `fc` to HIDDEN, ACTIVATION, linear `proj` to OUT (default: x's width)."
  (scope name
    (let ((width (%last-dim x "mlp")))
      (linear (activate (linear x hidden :name "fc") activation) (or out width) :name "proj"))))

(defun %heads (x heads)
  "(B T W) as (B H T W/H): the heads of each position, contiguous in W."
  (let ((s (shape x)))
    (permute (reshape x (list (first s) (second s) heads (floor (third s) heads))) '(0 2 1 3))))

(defun %merge-heads (y)
  "(B H T D) back to (B T H·D)."
  (let ((s (shape y)))
    (reshape (permute y '(0 2 1 3)) (list (first s) (third s) (* (second s) (fourth s))))))

(defun %check-attention (x heads kv)
  (unless (= (rank x) 3)
    (%shape-error "attention: the input is ~a; it must be (batch time width)" x))
  (unless (and (integerp heads) (> heads 0) (zerop (mod (dim x -1) heads)))
    (%shape-error "attention: the width ~a is not a multiple of ~a heads" (dim x -1) heads))
  (when (and kv (not (and (= (rank kv) 3) (= (dim kv 0) (dim x 0)))))
    (%shape-error "attention: :kv is ~a; it must be (batch time width) with the batch of ~a" kv x)))

(defun attention (x heads &key causal kv name)
  "Multi-head attention of X (B T W): linear `qkv` (or `q`, and `kv` over the
sequence KV), the fused attention op per head, linear `proj` back to W."
  (scope name
    (%check-attention x heads kv)
    (let* ((width (dim x -1))
           (parts (if kv
                      (cons (linear x width :name "q")
                            (split (linear kv (* 2 width) :name "kv") width :axis -1))
                      (split (linear x (* 3 width) :name "qkv") width :axis -1)))
           (y (funcall %attention (%heads (first parts) heads) (%heads (second parts) heads)
                       (%heads (third parts) heads) :causal causal)))
      (linear (%merge-heads y) width :name "proj"))))

(defun causal-self-attention (x heads &key name)
  "attention with :causal t: `qkv` and `proj` (GPT-2's c_attn and c_proj)."
  (attention x heads :causal t :name name))

(defun dropout (x p)
  "X with elements zeroed with probability P (nil or 0: none); off in evaluation."
  (if (and p (> p 0)) (funcall %dropout x p) x))

(defun transformer-block (x heads &key causal (mlp-ratio 4) dropout (activation :gelu) name)
  "Pre-norm block: x + attn(ln1(x)), then + mlp(ln2(x)) with hidden MLP-RATIO·width;
DROPOUT on each residual branch."
  (scope name
    (let* ((hidden (let ((h (* mlp-ratio (%last-dim x "transformer-block"))))
                     (if (integerp h) h (round h))))
           (x (+ x (dropout (attention (layer-norm x :name "ln1") heads :causal causal :name "attn")
                            dropout))))
      (+ x (dropout (mlp (layer-norm x :name "ln2") hidden :activation activation :name "mlp")
                    dropout)))))

(defun %pair (v what)
  (cond ((integerp v) (list v v))
        ((and (consp v) (= (length v) 2)) v)
        (t (error 'type-error :format-control "~a: ~s is not an integer or a list of two"
                  :format-arguments (list what v)))))

(defun conv2d (x out-channels kernel &key (stride 1) (padding 0) (bias t) init name)
  "NCHW convolution: `weight` (out in kh kw) and `bias` (out), both uniform(±1/√(in·kh·kw))."
  (scope name
    (unless (= (rank x) 4)
      (%shape-error "conv2d: the input is ~a; it must be (batch channels height width)" x))
    (let* ((k (%pair kernel "conv2d kernel"))
           (in (dim x 1))
           (fan (* in (first k) (second k)))
           (y (funcall %conv2d x (defparam weight (list out-channels in (first k) (second k))
                                   :init (or init (%bound-init fan)))
                       :stride stride :padding padding)))
      (if bias
          (+ y (reshape (defparam bias (list out-channels) :init (%bound-init fan))
                        (list 1 out-channels 1 1)))
          y))))
