;;;; Models and parameters (docs/models.md) and sexpgpu/nn (docs/nn.md) at
;;;; the edges: nested models, block exits, names with dots, the scope after
;;;; an error, keys, ties, probes, and errors inside the library.

(require "sexpgpu/nn")
;=> t

;; A model inside a model: both names in the path. A docstring and a
;; declaration may lead the body; return-from leaves the model's block.
(defmodel inner (x)
  "The inner model."
  (declare (ignorable x))
  (nn:linear x 2 :name "fc"))

;=> inner
(defmodel outer (x)
  (let ((h (inner x)))
    (when (= (dim h -1) 2) (return-from outer (values h :early)))
    :late))

;=> outer
(outer (zeros '(3 4)))
;=> #<tensor f32[3,2]>
;=> :early
(param-paths)
;=> ("outer.inner.fc.weight" "outer.inner.fc.bias")
(current-scope)
;=> ""

;; The scope is popped when the body signals.
(handler-case (scope "half" (nn:linear (zeros '()) 3))
  (error () (current-scope)))

;=> ""

;; Names: a string with dots is several segments, a symbol its lower-case name.
(scope 'Top (defparam "a.b" 2))
;=> #<tensor f32[2]>
(getf (param-info "top.a.b") :path)
;=> "top.a.b"
(defparam "" 2)
;!E-TYPE
(defparam 3 2)
;!E-TYPE
(defparam nil 2)
;!E-TYPE

;; Keys.
(defparam frozen '(2 2) :trainable nil :tags (:no-decay :embedding) :dtype :f64)
;=> #<tensor f64[2,2]>
(list (getf (param-info "frozen") :trainable) (getf (param-info "frozen") :tags))
;=> (nil (:no-decay :embedding))
(defparam tagged 2 :tags '(:a))
;=> #<tensor f32[2]>
(defparam tagged2 2 :tags :solo)
;=> #<tensor f32[2]>
(getf (param-info "tagged2") :tags)
;=> (:solo)
(defparam named-init 2 :init 'nn-missing-function)
;!E-UNBOUND
(defun my-init (shape) (ones shape))
;=> my-init
(defparam by-name 2 :init 'my-init)
;=> #<tensor f32[2]>
(getf (param-info "by-name") :init)
;=> "my-init"
(defparam odd 2 :init)
;!E-ARITY

;; Ties share the target's storage, trainability and dtype.
(defparam tied-frozen '(2 2) :tie "frozen")
;=> #<tensor f64[2,2]>
(getf (param-info "tied-frozen") :trainable)
;=> nil
(defparam tied-trained '(2 2) :tie "frozen" :trainable t)
;!E-TYPE
(defparam frozen '(2 2) :dtype :f64 :tie "tied-frozen")
;!E-PARAM-REDECLARED

;; param
(param "top.a.b")
;=> #<tensor f32[2]>
(param "top.a")
;!E-PARAM-UNKNOWN
(param 7)
;!E-TYPE

;; Probes are staged tensors only.
(probe "p" (list 1 2))
;!E-TYPE
(probe 3 (zeros 2))
;!E-TYPE

;; describe-init checks its arguments.
(describe-init 3 "x")
;!E-TYPE
(describe-init #'ones 'x)
;!E-TYPE

;; nn: shapes that do not fit, reported at these forms.
(nn:attention (zeros '(2 8)) 2)
;!E-SHAPE
(nn:attention (zeros '(2 4 8)) 2 :kv (zeros '(3 4 8)))
;!E-SHAPE
(nn:conv2d (zeros '(1 3 8 8)) 4 '(1 2 3))
;!E-TYPE
(nn:kaiming-uniform :mode :fan-sideways)
;!E-TYPE
(nn:transformer-block (zeros '(2 4 8)) 2 :mlp-ratio 1.5 :name "b15")
;=> #<tensor f32[2,4,8]>
(getf (param-info "b15.mlp.fc.weight") :shape)
;=> (8 12)
