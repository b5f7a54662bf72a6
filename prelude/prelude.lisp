;;;; The prelude: loaded before every file. The Common Lisp macros that are
;;;; not special forms here, written in the Lisp itself, plus a few helpers.
;;;; docs/prelude.md lists every definition; tests/golden/lisp covers each.

;;; Definitions

(defmacro defun (name lambda-list &body body)
  `(progn (%defun ',name (%named-lambda ,name ,lambda-list ,@body)) ',name))

;; The form that records a variable's docstring (if any) for documentation;
;; written without when, which is defined below.
(defun %variable-doc-form (name doc)
  (if doc `((setf (gethash ',name *%variable-documentation*) ,doc)) nil))

(defmacro defvar (name &optional (value nil value-p) doc)
  ;; the value form is evaluated only when the variable has no value
  `(progn
     ,(if value-p
          `(if (boundp ',name) (%defvar ',name nil nil nil) (%defvar ',name ,value nil t))
          `(%defvar ',name nil nil nil))
     ,@(%variable-doc-form name doc)
     ',name))

(defmacro defparameter (name value &optional doc)
  `(progn (%defvar ',name ,value t t) ,@(%variable-doc-form name doc) ',name))

(defmacro defconstant (name value &optional doc)
  `(progn (%defconstant ',name ,value) ,@(%variable-doc-form name doc) ',name))

;; Docstrings of variables, for documentation (a function's is in the function).
(defvar *%variable-documentation* (make-hash-table :test 'eq))

(defun documentation (x doc-type)
  "The docstring of X: a function's or macro's (doc-type function or t), a variable's (variable); nil if none."
  (cond ((eq doc-type 'variable) (values (gethash x *%variable-documentation*)))
        ((functionp x) (%function-documentation x))
        ((not (member doc-type '(function t))) nil)
        ((symbolp x) (%function-documentation x))
        ((and (consp x) (eq (car x) 'setf) (fboundp x)) (%function-documentation (fdefinition x)))
        (t nil)))

(defmacro declaim (&rest specs)
  `(progn ,@(mapcar (lambda (s) `(proclaim ',s)) specs) nil))

;;; Conditionals

(defmacro when (test &body body)
  `(if ,test (progn ,@body) nil))

(defmacro unless (test &body body)
  `(if ,test nil (progn ,@body)))

(defmacro and (&rest forms)
  (cond ((null forms) t)
        ((null (cdr forms)) (car forms))
        (t `(if ,(car forms) (and ,@(cdr forms)) nil))))

(defmacro or (&rest forms)
  (if (null forms)
      nil
      (if (null (cdr forms))
          (car forms)
          (let ((g (gensym)))
            `(let ((,g ,(car forms)))
               (if ,g ,g (or ,@(cdr forms))))))))

(defmacro cond (&rest clauses)
  (if (null clauses)
      nil
      (let ((clause (car clauses)))
        (if (null (cdr clause))
            (let ((g (gensym)))
              `(let ((,g ,(car clause)))
                 (if ,g ,g (cond ,@(cdr clauses)))))
            `(if ,(car clause)
                 (progn ,@(cdr clause))
                 (cond ,@(cdr clauses)))))))

(defmacro case (key &rest clauses)
  (let ((k (gensym "KEY")))
    `(let ((,k ,key))
       (cond ,@(mapcar (lambda (c)
                         (let ((keys (car c))
                               (body (or (cdr c) '(nil))))
                           (cond ((or (eq keys t) (eq keys 'otherwise)) `(t ,@body))
                                 ((listp keys) `((member ,k ',keys) ,@body))
                                 (t `((eql ,k ',keys) ,@body)))))
                       clauses)))))

(defmacro ecase (key &rest clauses)
  (let ((k (gensym "KEY"))
        (all (apply #'append (mapcar (lambda (c) (if (listp (car c)) (car c) (list (car c))))
                                     clauses))))
    `(let ((,k ,key))
       (case ,k
         ;; t and otherwise are keys here: ecase has no otherwise clause
         ,@(mapcar (lambda (c) (if (member (car c) '(t otherwise)) (cons (list (car c)) (cdr c)) c))
                   clauses)
         (otherwise
          (error 'type-error :format-control "~s fell through an ecase expecting one of ~s"
                 :format-arguments (list ,k ',all)))))))

(defmacro typecase (key &rest clauses)
  (let ((k (gensym "KEY")))
    `(let ((,k ,key))
       (cond ,@(mapcar (lambda (c)
                         (if (or (eq (car c) t) (eq (car c) 'otherwise))
                             `(t ,@(or (cdr c) '(nil)))
                             `((typep ,k ',(car c)) ,@(or (cdr c) '(nil)))))
                       clauses)))))

(defmacro etypecase (key &rest clauses)
  (let ((k (gensym "KEY")))
    `(let ((,k ,key))
       (typecase ,k
         ,@clauses
         (t (error 'type-error :format-control "~s fell through an etypecase expecting ~s"
                   :format-arguments (list ,k '(or ,@(mapcar #'car clauses)))))))))

;;; Sequencing and blocks

(defmacro return (&optional value)
  `(return-from nil ,value))

(defmacro prog1 (first &body rest)
  (let ((g (gensym)))
    `(let ((,g ,first)) ,@rest ,g)))

(defmacro prog2 (first second &body rest)
  `(progn ,first (prog1 ,second ,@rest)))

(defmacro prog (bindings &body body)
  `(block nil (let ,bindings (tagbody ,@body))))

(defmacro prog* (bindings &body body)
  `(block nil (let* ,bindings (tagbody ,@body))))

;;; Places

;; Every place macro expands its place through get-setf-expansion with the
;; macro's lexical environment (so macrolet and symbol-macrolet places work),
;; evaluating the place's subforms once, left to right, as CL requires.
(defmacro setf (&rest pairs &environment env)
  (cond ((null pairs) nil)
        ((null (cdr pairs)) (error "setf: odd number of arguments"))
        ((cddr pairs) `(progn ,@(loop-pairs pairs (lambda (p v) `(setf ,p ,v)))))
        ((symbolp (car pairs)) `(setq ,(car pairs) ,(cadr pairs)))
        (t (multiple-value-bind (temps vals stores writer) (get-setf-expansion (car pairs) env)
             (if (and stores (null (cdr stores)))
                 `(let* (,@(mapcar #'list temps vals) (,(car stores) ,(cadr pairs)))
                    ,writer)
                 ;; (setf (values a b) form): one store per value
                 `(let* ,(mapcar #'list temps vals)
                    (multiple-value-bind ,stores ,(cadr pairs) ,writer)))))))

(defun loop-pairs (pairs fn)
  (if (null pairs) nil (cons (funcall fn (car pairs) (cadr pairs)) (loop-pairs (cddr pairs) fn))))

(defmacro psetq (&rest pairs &environment env)
  (loop-pairs pairs (lambda (p v)
                      (declare (ignore v))
                      (unless (symbolp p) (error "psetq: ~s is not a variable" p))))
  (%psetf-expand pairs env))

(defmacro psetf (&rest pairs &environment env)
  (%psetf-expand pairs env))

;; Each pair in order: the place's subforms, then its value (bound to the
;; stores); the places are written after every value was computed.
;; (No do here: do steps with psetq.)
(defun %psetf-expand (pairs env)
  (when (oddp (length pairs)) (error "psetf: odd number of arguments"))
  (let ((bindings nil) (writers nil) (multi nil))
    (loop-pairs
     pairs
     (lambda (place value)
       (multiple-value-bind (temps vals stores writer) (get-setf-expansion place env)
         (dolist (b (mapcar #'list temps vals)) (push b bindings))
         (if (and stores (null (cdr stores)))
             (push (list (car stores) value) bindings)
             (let ((g (gensym "VALUES")))
               (push (list g `(multiple-value-list ,value)) bindings)
               (push (cons g stores) multi)))
         (push writer writers))))
    (let ((body `(progn ,@(reverse writers) nil)))
      (dolist (m multi)
        (setq body `(destructuring-bind (&optional ,@(cdr m) &rest ,(gensym "REST")) ,(car m)
                      ,body)))
      (if bindings `(let* ,(reverse bindings) ,body) body))))

;; Read-modify-write on a place, evaluating its subforms once.
(defun %modify-place (place fn env)
  (multiple-value-bind (temps vals stores writer reader) (get-setf-expansion place env)
    `(let* (,@(mapcar #'list temps vals) (,(car stores) ,(funcall fn reader)))
       ,writer)))

(defmacro incf (place &optional (delta 1) &environment env)
  (%step-variable-or-place '+ place delta env))

(defmacro decf (place &optional (delta 1) &environment env)
  (%step-variable-or-place '- place delta env))

;; A variable is read after the delta form, as SBCL does ((incf x (setf x
;; 1)) from 0 gives 2); an atom delta needs no temporary.
(defun %step-variable-or-place (op place delta env)
  (cond ((not (symbolp place)) (%modify-place place (lambda (r) `(,op ,r ,delta)) env))
        ((nth-value 1 (macroexpand-1 place env))
         (%modify-place place (lambda (r) `(,op ,r ,delta)) env))
        ((atom delta) `(setq ,place (,op ,place ,delta)))
        (t (let ((d (gensym "DELTA")))
             `(let ((,d ,delta)) (setq ,place (,op ,place ,d)))))))

(defmacro push (item place &environment env)
  (if (symbolp place)
      `(setq ,place (cons ,item ,place))
      (let ((g (gensym)))
        `(let ((,g ,item)) ,(%modify-place place (lambda (r) `(cons ,g ,r)) env)))))

(defmacro pushnew (item place &rest keys &environment env)
  (let ((g (gensym)))
    `(let ((,g ,item)) ,(%modify-place place (lambda (r) `(adjoin ,g ,r ,@keys)) env))))

(defmacro pop (place &environment env)
  (multiple-value-bind (temps vals stores writer reader) (get-setf-expansion place env)
    (let ((g (gensym)))
      `(let* (,@(mapcar #'list temps vals) (,g ,reader) (,(car stores) (cdr ,g)))
         ,writer
         (car ,g)))))

;; The setf expansions of several places, their temps bound once in order.
(defun %expansions (places env)
  (mapcar (lambda (p) (multiple-value-list (get-setf-expansion p env))) places))

(defun %expansion-bindings (expansions)
  (apply #'append (mapcar (lambda (e) (mapcar #'list (first e) (second e))) expansions)))

(defmacro rotatef (&rest places &environment env)
  (if (null (cdr places))
      (if places `(progn ,(car places) nil) nil)
      (let* ((es (%expansions places env))
             (stores (mapcar (lambda (e) (car (third e))) es)))
        `(let* (,@(%expansion-bindings es)
                ,@(let ((readers (mapcar #'fifth es)))
                    (mapcar #'list stores (append (cdr readers) (list (car readers))))))
           ,@(mapcar #'fourth es)
           nil))))

(defmacro shiftf (&rest places-and-value &environment env)
  (let* ((places (butlast places-and-value))
         (value (car (last places-and-value)))
         (es (%expansions places env))
         (stores (mapcar (lambda (e) (car (third e))) es))
         (old (gensym "OLD")))
    `(let* (,@(%expansion-bindings es)
            (,old ,(fifth (car es)))
            ,@(mapcar #'list (butlast stores) (mapcar #'fifth (cdr es)))
            (,(car (last stores)) ,value))
       ,@(mapcar #'fourth es)
       ,old)))

(defmacro remf (place indicator &environment env)
  (multiple-value-bind (temps vals stores writer reader) (get-setf-expansion place env)
    (let ((ind (gensym "IND")) (flag (gensym "FOUND")))
      `(let* (,@(mapcar #'list temps vals)
              (,ind ,indicator)
              (,flag nil)
              (,(car stores) (%remf ,reader ,ind (lambda () (setq ,flag t)))))
         ,writer
         ,flag))))

;;; Iteration

;; Leading declarations of a body, and the forms after them.
(defun %split-body (body)
  (let ((decls nil))
    (tagbody
     next
       (if (and (consp body) (consp (car body)) (eq (caar body) 'declare))
           (progn (setq decls (cons (car body) decls)) (setq body (cdr body)) (go next))))
    (values (reverse decls) body)))

(defmacro dolist ((var list &optional result) &body body)
  (multiple-value-bind (decls forms) (%split-body body)
    (let ((tail (gensym "TAIL")))
      `(block nil
         (let ((,tail ,list))
           (tagbody
            next
              (if (null ,tail) (go end))
              (let ((,var (car ,tail)))
                ,@decls
                (tagbody ,@forms))
              (setq ,tail (cdr ,tail))
              (go next)
            end)
           (let ((,var nil))
             (declare (ignorable ,var))
             ,@decls
             ,result))))))

(defmacro dotimes ((var count &optional result) &body body)
  (multiple-value-bind (decls forms) (%split-body body)
    (let ((n (gensym "N")))
      `(block nil
         (let ((,n ,count) (,var 0))
           ,@decls
           (tagbody
            next
              (if (>= ,var ,n) (go end))
              (tagbody ,@forms)
              (setq ,var (1+ ,var))
              (go next)
            end)
           ,result)))))

(defun %do-expand (specs end-clause body sequential)
  (multiple-value-bind (decls forms) (%split-body body)
    (let ((bindings (mapcar (lambda (s) (if (consp s) (list (car s) (cadr s)) (list s nil))) specs))
          (steps (apply #'append
                        (mapcar (lambda (s)
                                  (if (and (consp s) (cddr s)) (list (car s) (caddr s)) nil))
                                specs)))
          (top (gensym "TOP")))
      `(block nil
         (,(if sequential 'let* 'let) ,bindings
          ,@decls
          (tagbody
           ,top
             (if ,(car end-clause) (return-from nil (progn ,@(cdr end-clause))))
             (tagbody ,@forms)
             (,(if sequential 'setq 'psetq) ,@steps)
             (go ,top)))))))

(defmacro do (specs end-clause &body body)
  (%do-expand specs end-clause body nil))

(defmacro do* (specs end-clause &body body)
  (%do-expand specs end-clause body t))

;;; Multiple values

(defmacro multiple-value-bind (vars form &body body)
  (let ((rest (gensym "REST")))
    `(multiple-value-call (lambda (&optional ,@vars &rest ,rest)
                            (declare (ignore ,rest))
                            ,@body)
       ,form)))

(defmacro multiple-value-list (form)
  `(multiple-value-call #'list ,form))

(defmacro multiple-value-setq (vars form &environment env)
  (dolist (v vars) (unless (symbolp v) (error "multiple-value-setq: ~s is not a variable" v)))
  (cond ((null vars) `(values ,form))
        ((some (lambda (v) (nth-value 1 (macroexpand-1 v env))) vars)
         ;; a symbol macro is a place: CL defines this as setf of values
         `(values (setf (values ,@vars) ,form)))
        (t (let ((gs (mapcar (lambda (v) (declare (ignore v)) (gensym)) vars)))
             `(multiple-value-bind ,gs ,form
                (setq ,@(apply #'append (mapcar #'list vars gs)))
                ,(car gs))))))

(defmacro nth-value (n form)
  `(nth ,n (multiple-value-list ,form)))

;;; Macros

(defmacro with-gensyms (names &body body)
  `(let ,(mapcar (lambda (n) `(,n (gensym ,(symbol-name n)))) names)
     ,@body))

(defmacro once-only (names &body body)
  (let ((gs (mapcar (lambda (n) (declare (ignore n)) (gensym)) names)))
    `(let ,(mapcar (lambda (g) `(,g (gensym))) gs)
       (list 'let (list ,@(mapcar (lambda (g n) `(list ,g ,n)) gs names))
             (let ,(mapcar #'list names gs)
               ,@body)))))

;;; Errors

(defmacro ignore-errors (&body body)
  (let ((c (gensym "C")))
    `(handler-case (progn ,@body)
       (error (,c) (values nil ,c)))))

(defmacro check-type (place type &optional type-string)
  `(unless (typep ,place ',type)
     (error 'type-error
            :format-control "The value of ~s is ~s, which is not ~a."
            :format-arguments (list ',place ,place ,(or type-string `(quote ,type))))))

(defmacro assert (test &optional places format-control &rest args)
  (declare (ignore places))
  `(unless ,test
     ,(if format-control
          `(error ,format-control ,@args)
          `(error "The assertion ~s failed." ',test))))

;;; Staging

(defmacro stage-function (name args &body body)
  "Stage BODY as the IR function NAME with inputs ARGS, each (arg shape [dtype] [:param])."
  `(%stage-function ',name ',args (lambda ,(mapcar #'car args) ,@body)))

;;; The declared selection: read before the file is evaluated (the
;;; compiler's pre-pass); here each form binds or names what was read.

(defmacro defknob (name default &rest options)
  "Declare a knob: bound to its selected value, a global lexical variable."
  (declare (ignore default options))
  `(%defknob ',name))

(defmacro defvariant (name &rest options)
  "Declare a named set of knob values, selected with --variant."
  (declare (ignore options))
  `',name)

(defmacro defsweep (name &rest options)
  "Declare a sweep: knob value lists, one run per point of their product."
  (declare (ignore options))
  `',name)

;;; The run file's declarations: each defining form hands its option forms,
;;; unevaluated, to a builtin that reads them as run-file.md says.

(defmacro defloader (name &rest options)
  "Declare a data loader: its :source, :batch, :split, :shuffle and :drop-last."
  `(%defloader ',name ',options))
