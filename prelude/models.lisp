;;;; The run file's models (run-file.md, "Models and parameters"): defmodel,
;;;; defparam and scope, over the builtins of core/runfile/model.cpp
;;;; (%call-model, %defparam, %call-in-scope). docs/models.md is their page.

(defun %model-body-parts (body)
  "BODY's leading docstring and declarations, and the forms after them, as two
values. A lone string is a form, not a docstring (as for defun)."
  (let ((head nil))
    (when (and (stringp (car body)) (cdr body))
      (push (pop body) head))
    (do () ((not (and (consp (car body)) (eq (caar body) 'declare))))
      (push (pop body) head))
    (values (nreverse head) body)))

(defmacro defmodel (name lambda-list &body body)
  "Define the model NAME: a function whose parameters are declared under the
path segment NAME (mlp.fc1.weight). Calling it outside any staged contract
function is a trace of its own."
  (multiple-value-bind (head forms) (%model-body-parts body)
    `(defun ,name ,lambda-list
       ,@head
       (%call-model ',name (lambda () ,@forms)))))

(defmacro scope (segments &body body)
  "Evaluate BODY with the path SEGMENTS pushed: a string (dots separate
segments), an integer, a list of them, or nil for none."
  `(%call-in-scope ,segments (lambda () ,@body)))

(defmacro defparam (name shape &rest options)
  "Declare the parameter NAME (a symbol, unevaluated, or a string) of SHAPE at
the current scope and return it as a staged tensor. Options: :init (a function
of the shape; default normal(0, 0.02)), :dtype (:f32), :trainable (t), :tags,
:tie (another parameter's path, whose storage this one shares)."
  `(%defparam ',name ,shape ',(%option-form options :init) ,@(%quote-tags options)))

(defun %quote-tags (options)
  "OPTIONS with a literal list of tag keywords quoted: :tags (:no-decay) reads
as written, though a keyword is no function."
  (do ((tail options (cddr tail))
       (out nil (list* (if (and (eq (car tail) :tags) (consp (cadr tail))
                                (keywordp (car (cadr tail))))
                           (list 'quote (cadr tail))
                           (cadr tail))
                       (car tail) out)))
      ((or (null tail) (null (cdr tail))) (append (nreverse out) tail))))

(defun %option-form (options key)
  "The form written after KEY in the plist OPTIONS, or nil."
  (do ((tail options (cddr tail)))
      ((or (null tail) (null (cdr tail))) nil)
    (when (eq (car tail) key) (return (cadr tail)))))
