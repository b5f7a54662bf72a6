;;;; A tour of the compile-time Lisp: the language every run file is written in.
;;;; `sexpgpu check examples/lisp-tour.lisp` evaluates it; `sexpgpu eval
;;;; examples/lisp-tour.lisp -e '(tour-summary)'` prints what it computed.

(defparameter *widths* '(64 128 256 512) "candidate hidden widths")

(defun params-of-mlp (in hidden out)
  "Parameter count of a two-layer perceptron with biases."
  (+ (* in hidden) hidden (* hidden out) out))

(defmacro with-timing-label ((label) &body body)
  "Evaluates BODY and pairs its value with LABEL."
  `(cons ,label (progn ,@body)))

(defun width-table ()
  (loop for w in *widths*
        collect (with-timing-label (w) (params-of-mlp 784 w 10))))

(defun best-width (budget)
  "The widest candidate whose parameter count fits BUDGET."
  (let ((fits (remove-if (lambda (pair) (> (cdr pair) budget)) (width-table))))
    (if fits (car (car (last fits))) nil)))

(defun tour-summary ()
  (let ((counts (make-hash-table :test 'equal)))
    (dolist (pair (width-table))
      (setf (gethash (format nil "w~d" (car pair)) counts) (cdr pair)))
    (format nil "~{~a~^, ~} parameters; best under 300k: ~a"
            (loop for k being the hash-keys of counts using (hash-value v)
                  collect (format nil "~a=~:d" k v))
            (best-width 300000))))
