;;;; The run file's contract forms (run-file.md): defeval, defcurriculum,
;;;; defdiagnostic and defrun hand their options to core/runfile/context.cpp.

(defmacro defeval (name &rest options)
  "Declare an evaluation pass: its :loader, :every, :batches, :at-start, :at-end and :fn."
  `(%defeval ',name ',options))

(defmacro defcurriculum (&rest stages)
  "Declare the training stages, each (stage NAME [:until CONDITION]), tried in order."
  `(%defcurriculum
    (list ,@(mapcar (lambda (s)
                      (unless (and (consp s) (eq (car s) 'stage) (keywordp (cadr s)))
                        (error "defcurriculum takes (stage :NAME [:until CONDITION]) forms, not ~s"
                               s))
                      (destructuring-bind (name &key until) (cdr s)
                        `(list ,name ,(if until `(lambda () ,until) nil))))
                    stages))))

(defmacro defdiagnostic (name &rest options)
  "Declare a diagnostic: :over, :value (staged per tensor), :reduce and :select."
  `(%defdiagnostic ',name ',options))

(defmacro defrun (&rest options)
  "Declare the run: steps or epochs, microbatches, precision, seed, checkpoints and more."
  `(%defrun ',options))

(defmacro with-numerics ((&key compute) &body body)
  "Run BODY with matrix products in COMPUTE (:f32, an f32 island, or :bf16)."
  `(%with-numerics ,compute (lambda () ,@body)))
