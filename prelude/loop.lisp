;;;; The loop macro (language.md, "Truth, iteration and values"): the simple
;;;; loop and the extended clauses. It follows SBCL's (MIT) loop closely: the
;;;; same order of evaluation, variable scoping and return values, and the
;;;; same clause combinations refused. The expansion uses only block, let,
;;;; let*, tagbody, setq and go, so the interpreter runs it fast (and caches
;;;; it per call site). A malformed loop signals "loop: ..." while expanding,
;;;; which is E-MACRO at the call.
;;;;
;;;; Shape of an expansion (as in SBCL):
;;;;   (block NAME
;;;;     (let (with/for bindings of one clause group) inits...   ; one per group
;;;;       (let* (accumulators)
;;;;         (tagbody  initially-forms  first-iteration-steps
;;;;          next     body  later-iteration-steps  (go next)
;;;;          end      finally-forms  (return-from NAME result)))))
;;;; A for/as group yields its steps as four parts, each for the first and for
;;;; later iterations: tests before stepping, parallel steps, tests after
;;;; stepping, and sequential "pseudo" steps (advancing hidden list pointers).
;;;; Every go is a statement of the tagbody itself, (go tag) or (if test (go
;;;; tag)), the shapes an evaluator can jump on without unwinding.

;;; Parser state, rebound by each expansion.

(defvar *%loop-source* nil)       ; the clause tokens not yet read
(defvar *%loop-name* nil)         ; the block name
(defvar *%loop-named* nil)        ; true once a named clause was read
(defvar *%loop-blocks* nil)       ; closed binding blocks, innermost first: (bindings inits)
(defvar *%loop-vars* nil)         ; bindings of the block being built, reversed
(defvar *%loop-inits* nil)        ; forms run right after those bindings, reversed
(defvar *%loop-var-names* nil)    ; every variable a with or for clause named
(defvar *%loop-iter-vars* nil)    ; the iteration variables among them
(defvar *%loop-prologue* nil)     ; initially forms, reversed
(defvar *%loop-before* nil)       ; first-iteration steps and tests, reversed
(defvar *%loop-after* nil)        ; later-iteration steps and tests, reversed
(defvar *%loop-body* nil)         ; code of the main clauses, reversed
(defvar *%loop-epilogue* nil)     ; finally forms, reversed
(defvar *%loop-emitted-body* nil) ; true once a clause produced body code
(defvar *%loop-in-cond* nil)      ; true while reading the clauses of a conditional
(defvar *%loop-result* nil)       ; (form) the loop returns when it ends normally
(defvar *%loop-culprit* nil)      ; the clause that chose that value
(defvar *%loop-accums* nil)       ; accumulators: (name class var aux1 aux2)
(defvar *%loop-acc-bindings* nil) ; their bindings, reversed (bound with let*)
(defvar *%loop-it* nil)           ; the IT variable of the conditional being read
(defvar *%loop-end* nil)          ; the tag that ends the loop

(defmacro loop (&rest forms)
  "Iterate: (loop form...) repeats forever in a nil block; with clause
keywords first, the extended loop (for, with, collect, ...)."
  (if (and forms (symbolp (car forms)))
      (%loop-translate forms)
      (let ((tag (gensym "LOOP-")))
        `(block nil (tagbody ,tag (progn ,@forms) (go ,tag))))))

(defun %loop-translate (forms)
  (let ((*%loop-source* forms) (*%loop-name* nil) (*%loop-named* nil) (*%loop-blocks* nil)
        (*%loop-vars* nil) (*%loop-inits* nil) (*%loop-var-names* nil) (*%loop-iter-vars* nil)
        (*%loop-prologue* nil) (*%loop-before* nil) (*%loop-after* nil) (*%loop-body* nil)
        (*%loop-epilogue* nil) (*%loop-emitted-body* nil) (*%loop-in-cond* nil)
        (*%loop-result* nil) (*%loop-culprit* nil) (*%loop-accums* nil)
        (*%loop-acc-bindings* nil) (*%loop-it* nil) (*%loop-end* (gensym "LOOP-END-")))
    (do () ((atom *%loop-source*)) (%loop-clause))
    (%loop-build (%loop-mentions forms 'loop-finish))))

;;; Tokens. Clause keywords are matched by name, as CL's loop does (with
;;; string=), so :for and #:for work as for does.

(defun %loop-canon (tok)
  (if (symbolp tok) (intern (symbol-name tok)) tok))

(defun %loop-is (tok names)
  (and tok (symbolp tok) (member (%loop-canon tok) names)))

(defun %loop-next-is (&rest names)
  (and (consp *%loop-source*) (%loop-is (car *%loop-source*) names)))

(defun %loop-pop (&optional (what "a token"))
  (if (consp *%loop-source*)
      (prog1 (car *%loop-source*) (setq *%loop-source* (cdr *%loop-source*)))
      (error "loop: ~a was expected, but the loop ended" what)))

;; The forms of do, initially and finally: the first token, then every
;; compound form after it (an atom starts the next clause).
(defun %loop-progn (what)
  (let ((forms (list (%loop-pop what))))
    (do () ((or (atom *%loop-source*) (atom (car *%loop-source*))))
      (push (%loop-pop) forms))
    (if (cdr forms) (cons 'progn (reverse forms)) (car forms))))

;; An atom in a tagbody would be a tag: wrap it.
(defun %loop-stmt (form)
  (if (atom form) `(progn ,form) form))

;; Whether SYM occurs in TREE (iterating along lists, so long bodies do not
;; deepen the stack).
(defun %loop-mentions (tree sym)
  (do ((x tree (cdr x)))
      ((atom x) (eq x sym))
    (when (or (eq (car x) sym) (and (consp (car x)) (%loop-mentions (car x) sym)))
      (return t))))

;;; Clause dispatch.

(defun %loop-clause ()
  (let ((tok (car *%loop-source*)))
    (unless (symbolp tok)
      (error "loop: ~s found where a loop clause keyword was expected" tok))
    (%loop-pop)
    (case (%loop-canon tok)
      (named (%loop-do-named))
      (with (%loop-do-with))
      ((for as) (%loop-do-for))
      (repeat (%loop-do-repeat))
      (initially (%loop-no-cond tok) (push (%loop-stmt (%loop-progn "a form after initially"))
                                           *%loop-prologue*))
      (finally (%loop-no-cond tok) (push (%loop-stmt (%loop-progn "a form after finally"))
                                         *%loop-epilogue*))
      (otherwise (unless (%loop-main-clause (%loop-canon tok))
                   (error "loop: ~s is not a loop clause keyword" tok))))))

;; The clauses that may also follow if/when/unless/else/and. True if KW is one.
(defun %loop-main-clause (kw)
  (case kw
    ((do doing) (%loop-emit-body (%loop-progn "a form after do")) t)
    (return (%loop-emit-body `(return-from ,*%loop-name* ,(%loop-pop "a form after return"))) t)
    ((collect collecting) (%loop-do-accum 'collect) t)
    ((append appending) (%loop-do-accum 'append) t)
    ((nconc nconcing) (%loop-do-accum 'nconc) t)
    ((sum summing) (%loop-do-accum 'sum) t)
    ((count counting) (%loop-do-accum 'count) t)
    ((maximize maximizing) (%loop-do-accum 'max) t)
    ((minimize minimizing) (%loop-do-accum 'min) t)
    ((if when) (%loop-do-if nil) t)
    (unless (%loop-do-if t) t)
    (while (%loop-no-cond kw)
     (%loop-pseudo-body `(if ,(%loop-pop "a form after while") nil (go ,*%loop-end*))) t)
    (until (%loop-no-cond kw)
     (%loop-pseudo-body `(if ,(%loop-pop "a form after until") (go ,*%loop-end*))) t)
    (always (%loop-do-always kw nil) t)
    (never (%loop-do-always kw t) t)
    (thereis (%loop-do-thereis) t)
    (otherwise nil)))

(defun %loop-no-cond (kw)
  (when *%loop-in-cond*
    (error "loop: ~s cannot be inside if/when/unless" kw)))

;; Body code: once a clause emitted some, while/until run in the body;
;; before that they run among the for/as steps, in clause order.
(defun %loop-emit-body (form)
  (setq *%loop-emitted-body* t)
  (%loop-pseudo-body form))

(defun %loop-pseudo-body (form)
  (if (or *%loop-emitted-body* *%loop-in-cond*)
      (push (%loop-stmt form) *%loop-body*)
      (progn (push form *%loop-before*) (push form *%loop-after*))))

(defun %loop-do-named ()
  (let ((name (%loop-pop "a name after named")))
    (unless (symbolp name) (error "loop: the loop name ~s is not a symbol" name))
    (when *%loop-named* (error "loop: only one named clause is allowed"))
    (when (or *%loop-before* *%loop-body* *%loop-culprit* *%loop-in-cond*)
      (error "loop: the named clause must come first"))
    (setq *%loop-named* t *%loop-name* name)))

;;; Variables and binding blocks.

(defun %loop-bind (var init)
  (push (list var init) *%loop-vars*))

(defun %loop-close-block ()
  (when (or *%loop-vars* *%loop-inits*)
    (push (list (reverse *%loop-vars*) (reverse *%loop-inits*)) *%loop-blocks*)
    (setq *%loop-vars* nil *%loop-inits* nil)))

(defun %loop-note-var (name iteration)
  (unless (and (symbolp name) (not (keywordp name)) (not (eq name t)))
    (error "loop: ~s cannot be a loop variable" name))
  (cond (iteration (when (member name *%loop-iter-vars*)
                     (error "loop: the iteration variable ~s is used twice" name))
         (push name *%loop-iter-vars*))
        ((assoc name *%loop-vars*) (error "loop: the variable ~s is bound twice" name)))
  (push name *%loop-var-names*))

;; The value a variable of a declared numeric type starts with (SBCL does so).
(defun %loop-typed-init (type)
  (let ((head (if (consp type) (car type) type)))
    (cond ((member head '(fixnum integer bit number real rational signed-byte unsigned-byte mod))
           0)
          ((member head '(float double-float single-float short-float long-float)) 0.0)
          (t nil))))

;; The types that may follow a variable without of-type (SBCL's list).
(defun %loop-optional-type (var)
  (if (atom *%loop-source*)
      nil
      (let ((z (car *%loop-source*)))
        (cond ((%loop-is z '(of-type)) (%loop-pop) (%loop-pop "a type after of-type"))
              ((symbolp z)
               (when (member z '(array atom bignum bit bit-vector character compiled-function
                                 complex cons double-float fixnum float function hash-table
                                 integer keyword list long-float nil null number package
                                 pathname random-state ratio rational readtable sequence
                                 short-float simple-array simple-bit-vector simple-string
                                 simple-vector single-float standard-char stream string
                                 base-char symbol t vector))
                 (%loop-pop)))
              ((and (consp var) (consp z)) (%loop-pop))
              (t (error "loop: ~s found where a loop keyword or type was expected" z))))))

;; Binds every variable of a pattern (a symbol, nil, or a destructuring tree)
;; to nil, or to the typed initial value. TYPE destructures along with the
;; pattern ((a b) of-type (fixnum float)); an atomic type applies to every
;; variable ((a b) of-type fixnum).
(defun %loop-bind-pattern (pat type iteration)
  (cond ((null pat) nil)
        ((atom pat) (%loop-note-var pat iteration) (%loop-bind pat (%loop-typed-init type)))
        (t (%loop-bind-pattern (car pat) (if (consp type) (car type) type) iteration)
         (%loop-bind-pattern (cdr pat) (if (consp type) (cdr type) type) iteration))))

;; A with variable (or pattern) bound to INIT in the pending block.
(defun %loop-make-var (var init type)
  (cond ((null var) (%loop-bind (gensym "LOOP-IGNORE-") init))
        ((atom var) (%loop-note-var var nil) (%loop-bind var (or init (%loop-typed-init type))))
        ((null init) (%loop-bind-pattern var type nil))
        (t (let ((g (gensym "LOOP-DESTRUCTURE-")))
             (%loop-bind g init)
             (%loop-bind-pattern var type nil)
             (setq *%loop-inits* (append (reverse (%loop-destructure var g)) *%loop-inits*))))))

(defun %loop-temp ()
  (let ((g (gensym "LOOP-DESETQ-")))
    (%loop-bind g nil)
    g))

;; Forms assigning FORM's value to the pattern PAT. A nil pattern still
;; evaluates a compound form, for its side effects.
(defun %loop-desetq (pat form)
  (cond ((null pat) (if (consp form) (list form) nil))
        ((atom pat) (list `(setq ,pat ,form)))
        (t (let ((tmp (%loop-temp)))
             (cons `(setq ,tmp ,form) (%loop-destructure pat tmp))))))

;; Forms assigning the parts of the value in the temporary TMP (which they
;; clobber) to the pattern PAT; missing parts are nil, extra ones ignored.
(defun %loop-destructure (pat tmp)
  (let ((forms nil))
    (do () ((atom pat))
      (let ((head (car pat)))
        (cond ((null head))
              ((atom head) (push `(setq ,head (car ,tmp)) forms))
              (t (let ((sub (%loop-temp)))
                   (push `(setq ,sub (car ,tmp)) forms)
                   (dolist (f (%loop-destructure head sub)) (push f forms))))))
      (setq pat (cdr pat))
      (cond ((null pat))
            ((atom pat) (push `(setq ,pat (cdr ,tmp)) forms))
            (t (push `(setq ,tmp (cdr ,tmp)) forms))))
    (reverse forms)))

;;; with

(defun %loop-do-with ()
  (%loop-no-cond 'with)
  (do ((more t)) ((not more))
    (let* ((var (%loop-pop "a variable after with"))
           (type (%loop-optional-type var))
           (init (when (%loop-next-is '=) (%loop-pop) (%loop-pop "a form after ="))))
      (when (and var (symbolp var) (member var *%loop-var-names*))
        (error "loop: the variable ~s is already used" var))
      (%loop-make-var var init type)
      (if (%loop-next-is 'and) (%loop-pop) (setq more nil))))
  (%loop-close-block))

;;; for/as: a group of drivers joined by and steps in parallel.

(defun %loop-do-for ()
  (%loop-no-cond 'for)
  (let ((later nil) (first nil))
    (do ((more t)) ((not more))
      (let* ((var (%loop-pop "a variable after for"))
             (type (%loop-optional-type var))
             (prep (%loop-pop "a preposition after the for variable"))
             (d (%loop-driver var type prep)))
        (setq later (cons (car d) later) first (cons (cadr d) first)))
      (when *%loop-emitted-body* (error "loop: for/as follows body code (do, collect, ...)"))
      (if (%loop-next-is 'and)
          (%loop-pop)
          (setq more nil)))
    (setq *%loop-before* (append (reverse (%loop-group-code (reverse first))) *%loop-before*))
    (setq *%loop-after* (append (reverse (%loop-group-code (reverse later))) *%loop-after*))
    (%loop-close-block)))

;; Code for one phase of a group: drivers are (pre-test steps post-test pseudo-steps).
(defun %loop-group-code (drivers)
  (append (%loop-endtests (mapcar #'car drivers))
          (%loop-psetq (apply #'append (mapcar #'cadr drivers)))
          (%loop-endtests (mapcar #'caddr drivers))
          (apply #'append (mapcar (lambda (p) (%loop-desetq (car p) (cadr p)))
                                  (apply #'append (mapcar (lambda (d) (nth 3 d)) drivers))))))

(defun %loop-endtests (tests)
  (let ((forms nil))
    (dolist (test tests)
      (cond ((null test))
            ((eq test t) (push `(go ,*%loop-end*) forms))
            (t (push `(if ,test (go ,*%loop-end*)) forms))))
    (reverse forms)))

;; Parallel assignment of (var form) pairs; temporaries live in the block.
(defun %loop-psetq (pairs)
  (if (null (cdr pairs))
      (and pairs (%loop-desetq (caar pairs) (cadr (car pairs))))
      (let ((temps (mapcar (lambda (p) (declare (ignore p)) (%loop-temp)) pairs)))
        (append (mapcar (lambda (g p) `(setq ,g ,(cadr p))) temps pairs)
                (apply #'append (mapcar (lambda (g p) (%loop-desetq (car p) g)) temps pairs))))))

;; Each driver returns (LATER FIRST), the phases of the iteration.
(defun %loop-driver (var type prep)
  (let ((kw (and prep (symbolp prep) (%loop-canon prep))))
    (case kw
      (= (%loop-for-equals var type))
      (in (%loop-for-in var type))
      (on (%loop-for-on var type))
      (across (%loop-for-across var type))
      (being (%loop-for-being var type))
      ((from downfrom upfrom to upto below downto above by) (%loop-for-arith var kw))
      (otherwise
       (error "loop: ~s is not a for preposition (=, in, on, across, being, from, to...)" prep)))))

(defun %loop-same (d) (list d d))

(defun %loop-for-equals (var type)
  (let ((form (%loop-pop "a form after =")))
    (%loop-bind-pattern var type t)
    (if (%loop-next-is 'then)
        (progn
          (%loop-pop)
          (list (list nil (list (list var (%loop-pop "a form after then"))) nil nil)
                (list nil (list (list var form)) nil nil)))
        (%loop-same (list nil (list (list var form)) nil nil)))))

;; How a list pointer advances: cdr, or the function after by.
(defun %loop-list-step (lv)
  (if (%loop-next-is 'by)
      (let ((f (progn (%loop-pop) (%loop-pop "a function after by"))))
        (cond ((and (consp f) (eq (car f) 'function)) (list (cadr f) lv))
              ((and (consp f) (eq (car f) 'quote)) `(funcall ,f ,lv))
              (t (let ((g (gensym "LOOP-FN-")))
                   (%loop-bind g f)
                   `(funcall ,g ,lv)))))
      `(cdr ,lv)))

(defun %loop-for-in (var type)
  (let ((form (%loop-pop "a list form after in"))
        (lv (gensym "LOOP-LIST-")))
    (%loop-bind-pattern var type t)
    (%loop-bind lv form)
    (%loop-same (list `(endp ,lv) (list (list var `(car ,lv))) nil
                      (list (list lv (%loop-list-step lv)))))))

;; A symbol variable is itself the list pointer (SBCL): after the loop it holds the end.
(defun %loop-for-on (var type)
  (let ((form (%loop-pop "a list form after on")))
    (if (and var (atom var))
        (progn
          (%loop-note-var var t)
          (%loop-bind var form)
          (list (list nil (list (list var (%loop-list-step var))) `(atom ,var) nil)
                (list nil nil `(atom ,var) nil)))
        (let ((lv (gensym "LOOP-LIST-")))
          (%loop-bind lv form)
          (%loop-bind-pattern var type t)
          (%loop-same (list `(atom ,lv) (list (list var lv)) nil
                            (list (list lv (%loop-list-step lv)))))))))

;; The length is read once, before the first iteration (SBCL).
(defun %loop-for-across (var type)
  (let ((form (%loop-pop "a vector form after across"))
        (vv (gensym "LOOP-ACROSS-VECTOR-"))
        (iv (gensym "LOOP-ACROSS-INDEX-"))
        (nv (gensym "LOOP-ACROSS-LIMIT-")))
    (%loop-bind-pattern var type t)
    (%loop-bind vv form)
    (%loop-bind iv 0)
    (%loop-bind nv 0)
    (push `(setq ,nv (length ,vv)) *%loop-prologue*)
    (%loop-same (list `(>= ,iv ,nv) (list (list var `(aref ,vv ,iv))) nil
                      (list (list iv `(1+ ,iv)))))))

;; for k being the hash-keys of table [using (hash-value v)], and the values
;; the same way. The entries are listed when the loop starts.
(defun %loop-for-being (var type)
  (let ((art (%loop-pop "each or the after being")))
    (unless (%loop-is art '(each the))
      (error "loop: ~s found where each or the was expected after being" art)))
  (when (%loop-is (car *%loop-source*) '(symbol symbols present-symbol present-symbols
                                         external-symbol external-symbols))
    (return-from %loop-for-being (%loop-for-package-symbols var type)))
  (let* ((path (%loop-pop "hash-keys or hash-values"))
         (keys (cond ((%loop-is path '(hash-key hash-keys)) t)
                     ((%loop-is path '(hash-value hash-values)) nil)
                     (t (error "loop: unsupported iteration path ~s (use hash-keys or hash-values)"
                               path))))
         (table (if (%loop-next-is 'of 'in)
                    (progn (%loop-pop) (%loop-pop "a hash table form"))
                    (error "loop: ~s needs of or in and a hash table" path)))
         (other (when (%loop-next-is 'using)
                  (%loop-pop)
                  (%loop-using-var keys (%loop-pop "a using phrase"))))
         (lv (gensym "LOOP-HASH-")))
    (%loop-bind-pattern var type t)
    (when other (%loop-bind-pattern other nil t))
    (%loop-bind lv `(%loop-hash-entries ,table ,(cond (other :both) (keys :keys) (t :values))))
    (%loop-same
     (list `(endp ,lv)
           (if other
               (list (list var `(,(if keys 'car 'cdr) (car ,lv)))
                     (list other `(,(if keys 'cdr 'car) (car ,lv))))
               (list (list var `(car ,lv))))
           nil
           (list (list lv `(cdr ,lv)))))))

;; for s being the symbols [of package]: a package's symbols. There are no
;; packages (language.md), so the loop evaluates the package form, as CL
;; does before the first iteration, and then stops with E-UNSUPPORTED.
(defun %loop-for-package-symbols (var type)
  (let ((path (%loop-pop))
        (pkg (if (%loop-next-is 'of 'in)
                 (progn (%loop-pop) (%loop-pop "a package form"))
                 nil)))
    (%loop-bind-pattern var type t)
    (%loop-bind (gensym "LOOP-PACKAGE-")
                `(%unsupported ,(format nil
                                        "loop: the ~(~a~) path iterates over a package's symbols, and there are no packages"
                                        path)
                               "modules replace packages: see docs/require.md"
                               ,pkg))
    (%loop-same (list t nil nil nil))))

(defun %loop-using-var (keys phrase)
  (unless (and (consp phrase) (consp (cdr phrase)) (null (cddr phrase))
               (%loop-is (car phrase) (if keys '(hash-value) '(hash-key))))
    (error "loop: ~s is not a using phrase; expected (~a var)" phrase
           (if keys "hash-value" "hash-key")))
  (cadr phrase))

(defun %loop-hash-entries (table kind)
  "The entries of TABLE as a list: keys, values, or (key . value) conses."
  (let ((acc nil))
    (case kind
      (:keys (maphash (lambda (k v) (declare (ignore v)) (push k acc)) table))
      (:values (maphash (lambda (k v) (declare (ignore k)) (push v acc)) table))
      (otherwise (maphash (lambda (k v) (push (cons k v) acc)) table)))
    (reverse acc)))

;; from/upfrom/downfrom, to/upto/downto/below/above and by, in any order.
;; Forms are evaluated once, in the order written.
(defun %loop-for-arith (var prep)
  (when (consp var) (error "loop: the arithmetic for variable ~s must be a symbol" var))
  (let ((var (or var (gensym "LOOP-IGNORE-")))
        (kw prep) (start-given nil) (limit-given nil)
        (dir nil) (odir nil) (inclusive nil) (limit nil) (by 1))
    (do () ((null kw))
      (let ((form (%loop-pop "a form after from/to/by")))
        (case kw
          ((from downfrom upfrom)
           (when start-given (error "loop: two starting points for ~s" var))
           (setq start-given t)
           (case kw (downfrom (setq dir :down)) (upfrom (setq dir :up)))
           (%loop-note-var var t)
           (%loop-bind var form))
          ;; A second limit or step replaces the first, as in SBCL.
          ((to upto downto above below)
           (setq limit-given t)
           (case kw
             (to (setq inclusive t))
             (upto (setq inclusive t dir :up))
             (downto (setq inclusive t dir :down))
             (above (setq dir :down))
             (below (setq dir :up)))
           (setq limit (%loop-once form "LOOP-LIMIT-")))
          (by
           (when (and (numberp form) (not (plusp form)))
             (error "loop: the by step ~s is not a positive number" form))
           (setq by (if (numberp form)
                        form
                        (%loop-once `(%loop-check-by ,form) "LOOP-STEP-BY-"))))))
      (when (and odir dir (not (eq odir dir)))
        (error "loop: conflicting stepping directions for ~s" var))
      (setq odir dir)
      (setq kw (when (%loop-next-is 'from 'downfrom 'upfrom 'to 'upto 'below 'downto 'above 'by)
                 (%loop-canon (%loop-pop)))))
    (unless start-given
      (when (eq dir :down)
        (error "loop: ~s steps down but has no starting point (from)" var))
      (%loop-note-var var t)
      (%loop-bind var 0))
    (let* ((down (eq dir :down))
           (test (when limit-given
                   (list (if down (if inclusive '< '<=) (if inclusive '> '>=)) var limit)))
           (step (cond ((not (eql by 1)) (list (if down '- '+) var by))
                       (down `(1- ,var))
                       (t `(1+ ,var)))))
      (list (list nil (list (list var step)) test nil)
            (list nil nil test nil)))))

;; A form evaluated once: a number stays as it is, anything else is bound.
(defun %loop-once (form prefix)
  (if (numberp form)
      form
      (let ((g (gensym prefix)))
        (%loop-bind g form)
        g)))

(defun %loop-check-by (step)
  "Signals a type error unless STEP, a loop by value, is a positive number."
  (if (and (realp step) (plusp step))
      step
      (error 'type-error :format-control "The loop by value ~s is not a positive number."
             :format-arguments (list step))))

;;; repeat: a driver, stepped where it is written among the for/as clauses.

(defun %loop-do-repeat ()
  (%loop-no-cond 'repeat)
  (let* ((form (%loop-pop "a count after repeat"))
         (g (gensym "LOOP-REPEAT-"))
         (test `(if (<= ,g 0) (go ,*%loop-end*)))
         (step `(setq ,g (1- ,g))))
    (%loop-bind g (if (integerp form) form `(ceiling ,form)))
    (setq *%loop-before* (list* step test *%loop-before*))
    (setq *%loop-after* (list* step test *%loop-after*))))

;;; Conditionals: if/when/unless test clause {and clause}* [else clause {and clause}*] [end]

(defun %loop-do-if (negate)
  (let* ((test (%loop-pop "a test form after if/when/unless"))
         (*%loop-it* nil)
         (then (%loop-cond-clauses t))
         (else (when (%loop-next-is 'else)
                 (%loop-pop)
                 (list (%loop-cond-clauses nil)))))
    (when (%loop-next-is 'end) (%loop-pop))
    (when *%loop-it* (setq test `(setq ,*%loop-it* ,test)))
    (%loop-pseudo-body `(if ,(if negate `(not ,test) test) ,then ,@else))))

;; One branch: clauses joined by and. IT, as the form of the first clause of
;; the then branch, is the test's value.
(defun %loop-cond-clauses (first)
  (let ((forms nil))
    (do ((more t)) ((not more))
      (let* ((*%loop-body* nil)
             (*%loop-in-cond* t)
             (tok (%loop-pop "a clause after if/when/unless/else/and")))
        (when (and first (%loop-next-is 'it))
          (unless *%loop-it*
            (setq *%loop-it* (gensym "LOOP-IT-"))
            (%loop-bind *%loop-it* nil))
          (setq *%loop-source* (cons *%loop-it* (cdr *%loop-source*))))
        (unless (and (symbolp tok) (%loop-main-clause (%loop-canon tok)) *%loop-body*)
          (error "loop: ~s cannot follow if/when/unless/else/and" tok))
        (setq forms (append forms (reverse *%loop-body*))))
      (setq first nil)
      (if (%loop-next-is 'and) (%loop-pop) (setq more nil)))
    (if (cdr forms) (cons 'progn forms) (car forms))))

;;; always, never, thereis: they return from the loop early.

(defun %loop-do-always (kw negate)
  (%loop-no-cond kw)
  (%loop-no-anonymous-accums kw)
  (let ((form (%loop-pop "a form after always/never")))
    (%loop-emit-body (if negate
                         `(if ,form (return-from ,*%loop-name* nil))
                         `(if ,form nil (return-from ,*%loop-name* nil))))
    (setq *%loop-result* (list t) *%loop-culprit* kw)))

(defun %loop-do-thereis ()
  (%loop-no-cond 'thereis)
  (%loop-no-anonymous-accums 'thereis)
  (let ((g (gensym "LOOP-THEREIS-")))
    (%loop-bind g nil)
    (setq *%loop-culprit* 'thereis)
    (%loop-emit-body `(if (setq ,g ,(%loop-pop "a form after thereis"))
                          (return-from ,*%loop-name* ,g)))))

(defun %loop-no-anonymous-accums (kw)
  (when (assoc nil *%loop-accums*)
    (error "loop: ~s cannot be combined with an accumulation without into" kw)))

;;; Accumulation: collect append nconc (class :list), sum count (:sum),
;;; maximize minimize (:minimax). Clauses without into share one accumulator,
;;; whose value the loop returns.

(defun %loop-do-accum (kind)
  (let* ((form (%loop-pop "a form to accumulate"))
         (into (when (%loop-next-is 'into) (%loop-pop) (%loop-pop "a variable after into"))))
    (unless (symbolp into) (error "loop: the into variable ~s is not a symbol" into))
    (when (and (null into) (member *%loop-culprit* '(always never thereis)))
      (error "loop: an accumulation without into cannot be combined with ~s" *%loop-culprit*))
    (let* ((type (%loop-optional-type nil))
           (class (case kind
                    ((collect append nconc) :list)
                    ((sum count) :sum)
                    (otherwise :minimax)))
           (acc (%loop-accum into class type)))
      (%loop-emit-body (%loop-accum-code acc kind form)))))

;; The accumulator named INTO (nil: the anonymous one), made on first use.
(defun %loop-accum (into class type)
  (let ((acc (assoc into *%loop-accums*)))
    (cond ((and (null acc) into (member into *%loop-var-names*))
           (error "loop: the into variable ~s is already a loop variable" into))
          ((null acc)
           (setq acc (%loop-make-accum into class type))
           (push acc *%loop-accums*)
           (unless into
             (setq *%loop-result* (list (if (eq class :list) `(cdr ,(nth 3 acc)) (caddr acc)))
                   *%loop-culprit* 'collect)))
          ((not (eq (cadr acc) class))
           (if into
               (error "loop: incompatible kinds of accumulation into ~s" into)
               (error "loop: incompatible kinds of accumulation for the loop value"))))
    acc))

;; (name class var aux1 aux2): :list aux1/aux2 = head (a dummy cons) and tail;
;; :minimax aux1/aux2 = flag (a value was seen) and the new value.
(defun %loop-make-accum (into class type)
  (let ((var (or into (gensym "LOOP-ACC-"))))
    (case class
      (:list (let ((head (gensym "LOOP-HEAD-")) (tail (gensym "LOOP-TAIL-")))
               (push (list head '(list nil)) *%loop-acc-bindings*)
               (push (list tail head) *%loop-acc-bindings*)
               (when into (push (list into nil) *%loop-acc-bindings*))
               (list into class into head tail)))
      (:sum (push (list var (or (%loop-typed-init type) 0)) *%loop-acc-bindings*)
       (list into class var nil nil))
      (otherwise
       (let ((flag (gensym "LOOP-MAXMIN-FLAG-")) (tmp (gensym "LOOP-MAXMIN-")))
         (push (list var (or (%loop-typed-init type) 0)) *%loop-acc-bindings*)
         (push (list flag nil) *%loop-acc-bindings*)
         (push (list tmp nil) *%loop-acc-bindings*)
         (list into class var flag tmp))))))

(defun %loop-accum-code (acc kind form)
  (let ((var (caddr acc)) (aux1 (nth 3 acc)) (aux2 (nth 4 acc)))
    (case kind
      (collect (%loop-collect-code acc `(setq ,aux2 (cdr (rplacd ,aux2 (list ,form))))))
      (append (%loop-collect-code
               acc `(setq ,aux2 (last (rplacd ,aux2 ,(if (and (consp form) (eq (car form) 'list))
                                                         form
                                                         `(copy-list ,form)))))))
      (nconc (%loop-collect-code acc `(setq ,aux2 (last (rplacd ,aux2 ,form)))))
      (sum `(setq ,var (+ ,var ,form)))
      (count `(if ,form (setq ,var (1+ ,var))))
      (otherwise
       `(progn
          (setq ,aux2 ,form)
          (if ,aux1
              (if (,(if (eq kind 'max) '> '<) ,aux2 ,var) (setq ,var ,aux2))
              (setq ,aux1 t ,var ,aux2)))))))

;; An into variable always holds the list so far.
(defun %loop-collect-code (acc code)
  (if (car acc)
      `(progn ,code (setq ,(car acc) (cdr ,(nth 3 acc))))
      code))

;;; Assembly.

;; Body statements with (progn form...) opened up: one dispatch less per
;; iteration. A progn holding an atom stays whole (the atom would be a tag).
(defun %loop-splice (forms)
  (let ((out nil))
    (dolist (f forms (reverse out))
      (if (and (consp f) (eq (car f) 'progn) (every #'consp (cdr f)))
          (dolist (g (cdr f)) (push g out))
          (push f out)))))

(defun %loop-build (finish)
  (%loop-close-block)
  (let* ((next (gensym "LOOP-NEXT-"))
         (before (reverse *%loop-before*))
         (after (reverse *%loop-after*))
         (rotate (equal before after))
         (form `(tagbody
                   ,@(reverse *%loop-prologue*)
                   ,@(if rotate nil before)
                 ,next
                   ,@(if rotate after nil)
                   ,@(%loop-splice (reverse *%loop-body*))
                   ,@(if rotate nil after)
                   (go ,next)
                 ,*%loop-end*
                   ,@(reverse *%loop-epilogue*)
                   ,@(when *%loop-result*
                       (list `(return-from ,*%loop-name* ,(car *%loop-result*)))))))
    (when finish
      (setq form `(macrolet ((loop-finish () '(go ,*%loop-end*))) ,form)))
    (when *%loop-acc-bindings*
      (setq form `(let* ,(reverse *%loop-acc-bindings*) ,form)))
    (dolist (b *%loop-blocks*)
      (setq form `(let ,(car b) ,@(cadr b) ,form)))
    `(block ,*%loop-name* ,form)))
