;;;; Helpers that the ANSI test suite's cases call, written for this harness
;;;; in the common subset, so that both SBCL and sexpgpu load the same file.
;;;; Simplified but compatible versions: they return what the suite's
;;;; helpers return for a conforming implementation.

(defun notnot (x) (not (not x)))

(defun notnot-mv-fn (results)
  (if (null results)
      (values)
      (apply #'values (not (not (first results))) (rest results))))

(defmacro notnot-mv (form) `(notnot-mv-fn (multiple-value-list ,form)))

(defun not-mv-fn (results)
  (if (null results)
      (values)
      (apply #'values (not (first results)) (rest results))))

(defmacro not-mv (form) `(not-mv-fn (multiple-value-list ,form)))

(defun eqt (x y) (not (not (eq x y))))
(defun eqlt (x y) (not (not (eql x y))))
(defun equalt (x y) (not (not (equal x y))))
(defun equalpt (x y) (not (not (equalp x y))))
(defun equalpt-or-report (x y) (or (equalpt x y) (list x y)))
(defun string=t (x y) (not (not (string= x y))))
(defun =t (x &rest args) (not (not (apply #'= x args))))
(defun <=t (x &rest args) (not (not (apply #'<= x args))))
(defun onep (x) (eql x 1))
(defun typep* (e type) (not (not (typep e type))))
(defun sequencep (x) (typep x 'sequence))
(defun typef (type) #'(lambda (x) (typep x type)))
(defun is-eq-p (x) #'(lambda (y) (eqt x y)))
(defun is-not-eq-p (x) #'(lambda (y) (not (eqt x y))))
(defun is-eql-p (x) #'(lambda (y) (eqlt x y)))
(defun is-not-eql-p (x) #'(lambda (y) (not (eqlt x y))))

(defun make-int-list (n)
  (do ((i (- n 1) (- i 1))
       (r nil (cons i r)))
      ((< i 0) r)))

(defun char-invertcase (c)
  (if (upper-case-p c) (char-downcase c) (char-upcase c)))

(defun string-invertcase (s) (map 'string #'char-invertcase s))

(defun evendigitp (c) (not (not (find c "02468"))))
(defun odddigitp (c) (not (not (find c "13579"))))
(defun nextdigit (c) (cadr (member c '(#\0 #\1 #\2 #\3 #\4 #\5 #\6 #\7 #\8 #\9))))

(defun compose (&rest fns)
  (let ((rfns (reverse fns)))
    #'(lambda (x)
        (dolist (f rfns) (setq x (funcall f x)))
        x)))

(defun collect-properties (plist prop)
  (cond ((null plist) nil)
        ((eql (car plist) prop)
         (cons (cadr plist) (collect-properties (cddr plist) prop)))
        (t (collect-properties (cddr plist) prop))))

(defmacro normally (form &optional default)
  (declare (ignore default))
  form)

(defmacro expand-in-current-env (form &environment env)
  (macroexpand form env))

;;; The list spine of X with each cons's car and cdr, to check later that
;;; a function did not modify X.
(defun make-scaffold-copy (x)
  (if (consp x)
      (cons (cons (car x) (cdr x)) (make-scaffold-copy (cdr x)))
      nil))

(defun check-scaffold-copy (x xcopy)
  (do ((p x (cdr p)) (c xcopy (cdr c)))
      ((not (consp p)) (null c))
    (unless (and (consp c) (eq (car p) (car (car c))) (eq (cdr p) (cdr (car c))))
      (return nil))))

;;; Error checks: T when FORM signals an error, else NIL.  The suite also
;;; checks the condition's class; both implementations run this same macro.
;;; The form's values are stored in a global variable so that SBCL cannot
;;; drop a call whose result is unused (it flushes such calls to
;;; side-effect-free functions, and with them their errors).
(defvar *signals-error-sink* nil)

(defmacro signals-error (form error-name &rest keys)
  (declare (ignore error-name keys))
  `(handler-case (progn (setq *signals-error-sink* (multiple-value-list ,form)) nil)
     (error () t)))

(defmacro signals-error-always (form error-name)
  `(values (signals-error ,form ,error-name) (signals-error ,form ,error-name)))

(defmacro signals-type-error (var datum-form form &rest keys)
  (declare (ignore keys))
  `(let ((,var ,datum-form))
     (handler-case (progn (setq *signals-error-sink* (multiple-value-list ,form)) nil)
       (error () t))))

(defmacro catch-type-error (form)
  `(handler-case ,form (error () 'type-error)))

;;; Older versions of the suite wrap error cases in CLASSIFY-ERROR, which
;;; returns the condition's class; here every error is reported as ERROR.
(defmacro classify-error (form)
  `(handler-case ,form (error () 'error)))

(defmacro classify-error* (form)
  `(handler-case ,form (error () 'error)))

(defun rev-assoc-list (x)
  (cond ((null x) nil)
        ((null (car x)) (cons nil (rev-assoc-list (cdr x))))
        (t (acons (cdar x) (caar x) (rev-assoc-list (cdr x))))))

(defun symbol< (x y) (string< (symbol-name x) (symbol-name y)))

;;; Hash tables that the suite's loop6.lsp iterates over.
(defun %alist-table (alist test &optional swap)
  (let ((table (make-hash-table :test test)))
    (dolist (p alist table)
      (if swap
          (setf (gethash (cdr p) table) (car p))
          (setf (gethash (car p) table) (cdr p))))))
(defparameter *loop.6.hash.1* (%alist-table '((a . 1) (b . 2) (c . 3)) 'eq))
(defparameter *loop.6.hash.3*
  (%alist-table '(((a1 . a2) . 1) ((b1 . b2) . 2) ((c1 . c2) . 3)) 'equal))
(defparameter *loop.6.hash.5*
  (%alist-table '(((a1 . a2) . 1) ((b1 . b2) . 2) ((c1 . c2) . 3)) 'eql t))
(defparameter *loop.6.hash.8*
  (%alist-table '(((1 . 2) . 1) ((3 . 4) . b) ((5 . 6) . c)) 'equal))
