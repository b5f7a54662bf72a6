;;;; Staged tensors: introspection, creation, the generic arithmetic, shape
;;;; and dtype errors at the form, and every builtin's result type.

(defvar x (zeros '(128 784)))
x
;=> #<tensor f32[128,784]>
(shape x)
;=> (128 784)
(list (rank x) (numel x) (dtype x) (dim x -1) (dim x 0))
;=> (2 100352 :f32 784 128)
(tensorp x)
;=> t
(tensorp 3)
;=> nil
(dim x 2)
;!E-SHAPE
(shape 3)
;!E-TYPE
(ones 5 :dtype :i64)
;=> #<tensor i64[5]>
(full '(2 3) 7 :dtype :bf16)
;=> #<tensor bf16[2,3]>
(zeros '(2 -1))
;!E-SHAPE
(zeros '(2 3) :dtype :f8)
;!E-DTYPE
(zeros-like x :dtype :f64)
;=> #<tensor f64[128,784]>
(full-like x 2.5)
;=> #<tensor f32[128,784]>
(arange 10)
;=> #<tensor i32[10]>
(arange 0 1 0.25)
;=> #<tensor f32[4]>
(arange 2 9 3 :dtype :f64)
;=> #<tensor f64[3]>
(arange 0 5 0)
;!E-SHAPE
(constant '((1 2 3) (4 5 6)))
;=> #<tensor f32[2,3]>
(constant 3 :dtype :i32)
;=> #<tensor i32[]>
(constant '((1 2) (3)))
;!E-SHAPE
(eye 4)
;=> #<tensor f32[4,4]>
(tril-mask 5)
;=> #<tensor bool[5,5]>
(triu-mask 5 :offset 1)
;=> #<tensor bool[5,5]>

;; Random draws
(normal '(3 4) :std 0.02)
;=> #<tensor f32[3,4]>
(uniform '(2) :low -1 :high 1 :dtype :f64)
;=> #<tensor f64[2]>
(bernoulli '(8) 0.5)
;=> #<tensor f32[8]>
(bernoulli '(8) 1.5)
;!E-TYPE
(dropout x 0.1)
;=> #<tensor f32[128,784]>
(dropout x 1)
;!E-TYPE

;; Generic arithmetic stages when any operand is a tensor
(defvar b (zeros 784))
(+ x b)
;=> #<tensor f32[128,784]>
(+ x 1 b 2.5)
;=> #<tensor f32[128,784]>
(* 2 x)
;=> #<tensor f32[128,784]>
(- x)
;=> #<tensor f32[128,784]>
(/ x)
;=> #<tensor f32[128,784]>
(/ (ones 3 :dtype :i32) 2)
;=> #<tensor f32[3]>
(* (ones 3 :dtype :i32) 0.5)
;=> #<tensor f32[3]>
(+ (ones 3 :dtype :i32) 2)
;=> #<tensor i32[3]>
(+ (ones 3 :dtype :bf16) (ones 3))
;=> #<tensor f32[3]>
(1+ b)
;=> #<tensor f32[784]>
(+ x (zeros 10))
;!E-SHAPE
(+ 1 2)
;=> 3
(< b 0)
;=> #<tensor bool[784]>
(< 0 b 1)
;=> #<tensor bool[784]>
(= b b)
;=> #<tensor bool[784]>
(max b 0.0)
;=> #<tensor f32[784]>
(max x :axis 1)
;=> #<tensor f32[128]>
(max x)
;=> #<tensor f32[]>
(min x b 0)
;=> #<tensor f32[128,784]>
(max 1 5 3)
;=> 5
(floor b)
;=> #<tensor f32[784]>
(floor b 2)
;!E-ARITY
(round (ones 4 :dtype :i32))
;=> #<tensor i32[4]>
(mod b 3)
;=> #<tensor f32[784]>
(expt b 2)
;=> #<tensor f32[784]>
(atan b b)
;=> #<tensor f32[784]>
(signum b)
;=> #<tensor f32[784]>
(abs (ones 3 :dtype :i64))
;=> #<tensor i64[3]>
(exp (ones 3 :dtype :i32))
;=> #<tensor f32[3]>
(log b)
;=> #<tensor f32[784]>
(list (exp 0) (log 1) (sqrt 4) (floor 7 2))
;=> (1.0 0.0 2.0 3)

;; Elementwise builtins of the op table
(list (relu b) (gelu b) (gelu b :approximate :tanh) (silu b) (sigmoid b) (softplus b))
;=> (#<tensor f32[784]> #<tensor f32[784]> #<tensor f32[784]> #<tensor f32[784]> #<tensor f32[784]> #<tensor f32[784]>)
(list (square b) (rsqrt b) (log1p b) (expm1 b) (reciprocal b) (neg b) (sign b) (ceil b))
;=> (#<tensor f32[784]> #<tensor f32[784]> #<tensor f32[784]> #<tensor f32[784]> #<tensor f32[784]> #<tensor f32[784]> #<tensor f32[784]> #<tensor f32[784]>)
(gelu b :approximate :fast)
;!E-TYPE
(isfinite b)
;=> #<tensor bool[784]>
(logical-not (< b 0))
;=> #<tensor bool[784]>
(logical-and (< b 0) (> b -1))
;=> #<tensor bool[784]>
(list (pow b 2) (maximum b 1) (minimum b 1) (atan2 b 1))
;=> (#<tensor f32[784]> #<tensor f32[784]> #<tensor f32[784]> #<tensor f32[784]>)
(where (> x 0) x 0)
;=> #<tensor f32[128,784]>
(where x x 0)
;!E-DTYPE
(clamp x -1 1)
;=> #<tensor f32[128,784]>
(cast x :bf16)
;=> #<tensor bf16[128,784]>

;; A staged :bool tensor has no truth value; other tensors are true
(if (> b 0) 1 2)
;!E-STAGED-BRANCH
(when (< b 0) 1)
;!E-STAGED-BRANCH
(not (< b 0))
;!E-STAGED-BRANCH
(if b 1 2)
;=> 1
(or nil b)
;=> #<tensor f32[784]>

;; Reductions
(sum x)
;=> #<tensor f32[]>
(sum x :axis 0)
;=> #<tensor f32[784]>
(sum x :axis -1 :keepdims t)
;=> #<tensor f32[128,1]>
(mean (ones '(2 3) :dtype :i32) :axis '(0 1))
;=> #<tensor f32[]>
(var x :axis 1 :correction 0)
;=> #<tensor f32[128]>
(list (std x) (prod x :axis 0) (logsumexp x :axis 1) (norm x))
;=> (#<tensor f32[]> #<tensor f32[784]> #<tensor f32[128]> #<tensor f32[]>)
(argmax x :axis -1)
;=> #<tensor i32[128]>
(argmin x)
;=> #<tensor i32[]>
(sum x :axis 2)
;!E-SHAPE
(sum x :axis '(0 -2))
;!E-SHAPE
(sum (< b 0))
;=> #<tensor i32[]>

;; Shape ops
(reshape x '(-1 28 28))
;=> #<tensor f32[128,28,28]>
(reshape x '(100 -1))
;!E-SHAPE
(reshape x '(-1 -1))
;!E-SHAPE
(transpose x)
;=> #<tensor f32[784,128]>
(permute (zeros '(2 3 4)) '(2 0 1))
;=> #<tensor f32[4,2,3]>
(expand (zeros '(1 3)) '(5 3))
;=> #<tensor f32[5,3]>
(broadcast-to (zeros '(2 3)) '(5 3))
;!E-SHAPE
(squeeze (zeros '(1 3 1)))
;=> #<tensor f32[3]>
(squeeze (zeros '(1 3 1)) 0)
;=> #<tensor f32[3,1]>
(squeeze (zeros '(2 3)) 0)
;!E-SHAPE
(unsqueeze b 0)
;=> #<tensor f32[1,784]>
(flatten (zeros '(2 3 4 5)) :start 1)
;=> #<tensor f32[2,60]>
(concat (list (zeros '(2 3)) (zeros '(4 3))))
;=> #<tensor f32[6,3]>
(concat (list (zeros '(2 3)) (zeros '(2 4))) :axis 1)
;=> #<tensor f32[2,7]>
(concat (list (zeros '(2 3)) (zeros '(2 4))))
;!E-SHAPE
(stack (list b b b))
;=> #<tensor f32[3,784]>
(stack (list b b) :axis 1)
;=> #<tensor f32[784,2]>
(mapcar #'shape (split (zeros '(10 4)) '(3 7)))
;=> ((3 4) (7 4))
(mapcar #'shape (split (zeros '(10 4)) 4))
;=> ((4 4) (4 4) (2 4))
(split (zeros '(10 4)) '(3 3))
;!E-SHAPE
(slice x '((0 64) (nil nil 2)))
;=> #<tensor f32[64,392]>
(slice x '(nil (-10 nil)))
;=> #<tensor f32[128,10]>
(index (zeros '(5 6)) (arange 3) :axis 1)
;=> #<tensor f32[5,3]>
(take (zeros '(1000 64)) (zeros '(8 16) :dtype :i32))
;=> #<tensor f32[8,16,64]>
(embedding (zeros '(1000 64)) (zeros '(8 16) :dtype :i64))
;=> #<tensor f32[8,16,64]>
(take (zeros '(1000 64)) (zeros '(8 16)))
;!E-DTYPE
(one-hot (arange 4) 10)
;=> #<tensor f32[4,10]>
(pad (zeros '(2 3)) '((1 1)))
;=> #<tensor f32[2,5]>
(pad (zeros '(2 3)) '((1 0) (2 2)) :value -1)
;=> #<tensor f32[3,7]>
(repeat (zeros '(2 3)) '(2 1 2))
;=> #<tensor f32[2,2,6]>
(flip x 1)
;=> #<tensor f32[128,784]>

;; Linear algebra
(matmul x (zeros '(784 256)))
;=> #<tensor f32[128,256]>
(matmul x (zeros '(256 10)))
;!E-SHAPE
(matmul (zeros '(8 4 16 32)) (zeros '(32 64)))
;=> #<tensor f32[8,4,16,64]>
(outer (zeros 3) (zeros 4))
;=> #<tensor f32[3,4]>
(dot (zeros 3) (zeros 3))
;=> #<tensor f32[]>
(einsum "ij,jk->ik" x (zeros '(784 256)))
;=> #<tensor f32[128,256]>
(einsum "bhqd,bhkd->bhqk" (zeros '(2 4 8 16)) (zeros '(2 4 8 16)))
;=> #<tensor f32[2,4,8,8]>
(einsum "ij->ji" x)
;=> #<tensor f32[784,128]>
(einsum "ij->" x)
;=> #<tensor f32[]>
(einsum "i,i->" b b)
;=> #<tensor f32[]>
(einsum "ij,jk->ik" x x)
;!E-SHAPE
(einsum "ii->i" (zeros '(3 3)))
;!E-SHAPE

;; Neural ops
(softmax x)
;=> #<tensor f32[128,784]>
(log-softmax x :axis 0)
;=> #<tensor f32[128,784]>
(cross-entropy (zeros '(128 10)) (zeros 128 :dtype :i32))
;=> #<tensor f32[]>
(cross-entropy (zeros '(4 8 10)) (zeros '(4 8) :dtype :i32) :reduction :none :ignore-index -1)
;=> #<tensor f32[4,8]>
(cross-entropy (zeros '(128 10)) (zeros 64 :dtype :i32))
;!E-SHAPE
(cross-entropy (zeros '(128 10)) (zeros 128))
;!E-DTYPE
(mse b b)
;=> #<tensor f32[]>
(mse b 0 :reduction :none)
;=> #<tensor f32[784]>
(layer-norm x b b)
;=> #<tensor f32[128,784]>
(layer-norm x (zeros 10) b)
;!E-SHAPE
(rms-norm x b :eps 1e-5)
;=> #<tensor f32[128,784]>
(attention (zeros '(2 4 16 8)) (zeros '(2 4 16 8)) (zeros '(2 4 16 8)) :causal t)
;=> #<tensor f32[2,4,16,8]>
(attention (zeros '(2 4 16 8)) (zeros '(2 4 16 8)) (zeros '(2 4 16 8)) :mask (tril-mask 16))
;=> #<tensor f32[2,4,16,8]>
(attention (zeros '(2 4 16 8)) (zeros '(2 4 16 4)) (zeros '(2 4 16 8)))
;!E-SHAPE
(conv2d (zeros '(8 3 32 32)) (zeros '(16 3 3 3)) :padding 1)
;=> #<tensor f32[8,16,32,32]>
(conv2d (zeros '(8 4 32 32)) (zeros '(8 2 3 3)) :stride 2 :groups 2)
;=> #<tensor f32[8,8,15,15]>
(conv2d (zeros '(8 3 32 32)) (zeros '(16 4 3 3)))
;!E-SHAPE
(max-pool2d (zeros '(8 16 32 32)) 2)
;=> #<tensor f32[8,16,16,16]>
(avg-pool2d (zeros '(8 16 32 32)) 3 :stride 1 :padding 1)
;=> #<tensor f32[8,16,32,32]>
(stop-gradient x)
;=> #<tensor f32[128,784]>

;; stage-function: a function with declared inputs; with :param inputs its
;; first result is a loss and the gradients follow.
(stage-function affine ((x (4 3)) (w (3 2) :param) (b (2) :param))
  (mean (square (+ (matmul x w) b))))
;=> :affine
(stage-function affine ((x (4 3))) x)
;!E-USER
(stage-function nonscalar ((x (4 3)) (w (3 2) :param))
  (matmul x w))
;!E-OBJECTIVE-NOT-SCALAR
(stage-function cut ((x (4)) (w (4) :param))
  (sum (cast (> w x) :f32)))
;!E-NONDIFF
(stage-function unused ((x (4)) (w (4) :param) (v (4) :param))
  (sum (* x w)))
;!W-UNUSED-PARAM
(stage-function with-ids ((ids (8) :i32) (table (100 4) :param))
  (sum (take table ids)))
;=> :with-ids
(stage-function carried ((y (4)))
  (+ y x))
;!E-TYPE
(arange 0 1e30 1e-30)
;!E-SHAPE
(stage-function no-outputs ((x (2))) (values))
;=> :no-outputs
(stage-function no-loss ((x (2)) (w (2) :param)) (values))
;!E-OBJECTIVE-NOT-SCALAR
