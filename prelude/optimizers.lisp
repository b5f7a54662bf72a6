;;;; Writing optimizers (run-file.md, "Writing optimizers" and "Optimizer
;;;; groups"): defoptimizer, defstate, optimizer-update, group and selector,
;;;; over the builtins of core/runfile/optimizer.cpp and selector.cpp.
;;;;
;;;; (defoptimizer NAME LAMBDA-LIST [DOC] FORM...) defines the constructor
;;;; NAME. Its defstate forms and its one optimizer-update form are taken
;;;; out; any other form runs when the constructor is called (to check the
;;;; hyperparameters). The constructor returns
;;;;   (%make-optimizer 'NAME (list STATE...) (list (cons "lr" lr) ...) UPDATE 'UPDATE-FORM)
;;;; where UPDATE is (lambda (P G CTX STATE-NAME...) ...): each
;;;; hyperparameter rebound to (%hyper "name" name CTX), so a schedule (a
;;;; function of ctx) arrives as a staged scalar; the body's value is the new
;;;; parameter, and the states' values after it (setf of a state sets its
;;;; next value) are the new states: it returns (NEW-P NEW-STATE...).

(defun %form-named-p (form name)
  (and (consp form) (eq (car form) name)))

(defun %lambda-list-variables (lambda-list)
  "The variables LAMBDA-LIST binds, in order, supplied-p variables left out."
  (let ((vars '()))
    (dolist (item lambda-list (nreverse vars))
      (cond ((member item lambda-list-keywords))
            ((symbolp item) (push item vars))
            ((consp item)
             (let ((var (car item)))
               (push (if (consp var) (second var) var) vars)))))))

(defun %optimizer-form-error (name control &rest args)
  (error 'type-error
         :format-control (concatenate 'string "defoptimizer ~(~a~): " control)
         :format-arguments (cons name args)))

(defun %state-declaration (optimizer form)
  (let ((spec (cdr form)))
    (unless (and spec (symbolp (car spec)) (car spec) (evenp (length (cdr spec))))
      (%optimizer-form-error optimizer "~s is not (defstate NAME &key init dtype shape)" form))
    (let ((init :zeros) (dtype :f32) (shape nil))
      (loop for (key value) on (cdr spec) by #'cddr
            do (case key
                 (:init (setf init value))
                 (:dtype (setf dtype value))
                 (:shape (setf shape value))
                 (t
                  (%optimizer-form-error optimizer
                                         "defstate ~(~a~): ~s is not :init, :dtype or :shape"
                                         (car spec) key))))
      `(list ,(string-downcase (symbol-name (car spec))) ,init ,dtype ,shape ',form))))

(defun %update-lambda (optimizer form hypers states)
  (let ((args (second form)))
    (unless (and (listp args) (= (length args) 3) (every #'symbolp args))
      (%optimizer-form-error optimizer "optimizer-update takes (P G CTX), not ~s" args))
    (dolist (name (append args states))
      (when (or (member name hypers) (> (count name (append args states)) 1))
        (%optimizer-form-error optimizer "~(~a~) names two things: a state, an argument of ~
                                          optimizer-update or a hyperparameter"
                               name)))
    `(lambda (,@args ,@states)
       (let ,(mapcar (lambda (v) `(,v (%hyper ,(string-downcase (symbol-name v)) ,v ,(third args))))
                     hypers)
         (list (progn ,@(cddr form)) ,@states)))))

(defmacro defoptimizer (name lambda-list &body body)
  "Defines NAME, a constructor of optimizers: (defoptimizer NAME LAMBDA-LIST
(defstate ...)... (optimizer-update (P G CTX) BODY...)). Calling NAME binds
the hyperparameters of LAMBDA-LIST and returns an optimizer value; its
update is staged once per parameter, with the states bound to staged
tensors and scheduled hyperparameters as staged scalars."
  (let* ((doc (when (and (stringp (car body)) (cdr body)) (list (pop body))))
         (states (remove-if-not (lambda (f) (%form-named-p f 'defstate)) body))
         (updates (remove-if-not (lambda (f) (%form-named-p f 'optimizer-update)) body))
         (others (remove-if (lambda (f) (or (%form-named-p f 'defstate)
                                            (%form-named-p f 'optimizer-update)))
                            body)))
    (unless (symbolp name) (%optimizer-form-error name "the name must be a symbol"))
    (unless (= (length updates) 1)
      (%optimizer-form-error name "needs exactly one (optimizer-update (P G CTX) BODY...), not ~d"
                             (length updates)))
    `(defun ,name ,lambda-list
       ,@doc
       ,@others
       (%make-optimizer ',name
                        (list ,@(mapcar (lambda (s) (%state-declaration name s)) states))
                        (list ,@(mapcar (lambda (v) `(cons ,(string-downcase (symbol-name v)) ,v))
                                        (%lambda-list-variables lambda-list)))
                        ,(%update-lambda name (first updates) (%lambda-list-variables lambda-list)
                                         (mapcar #'second states))
                        ',(first updates)))))

(defmacro defstate (name &rest options)
  "(defstate NAME &key (init :zeros) (dtype :f32) shape) declares a
per-parameter state of the optimizer; only inside defoptimizer."
  (declare (ignore options))
  (error 'type-error
         :format-control "defstate ~(~a~) outside defoptimizer: states belong to an optimizer"
         :format-arguments (list name)))

(defmacro optimizer-update (args &body body)
  "(optimizer-update (P G CTX) BODY...) is an optimizer's update; only
inside defoptimizer."
  (declare (ignore args body))
  (error 'type-error :format-control "optimizer-update outside defoptimizer"
         :format-arguments nil))

(defmacro selector (expression)
  "The selector value of a selector EXPRESSION (not evaluated as Lisp): t,
a glob string, (path GLOB...), (name NAME...), (ndim N), (shape-is (A B)),
(tag :k), (and ...), (or ...), (not ...); any other form is evaluated and
must give a selector or a predicate of the parameter's plist."
  (%selector-form expression))

(defmacro group (name &key (select t) use)
  "An optimizer group for (defun optimizer ...): the trainable parameters
SELECT takes (a selector expression) that no earlier group took are trained
by USE. NAME, a symbol or string (or a form giving one), names its series:
lr/NAME."
  `(%make-group ,(if (and (symbolp name) (not (keywordp name))) `',name name)
                (selector ,select) ,use))
