;;;; Prelude helpers that are not CL (language.md, "The prelude"): whitespacep,
;;;; split-string, join, range, product, sum-list, plist-keys; and, at the end,
;;;; CL's complement and constantly, which are clearest as Lisp closures. Loaded after
;;;; loop.lisp, so they may use loop. split-string and join follow Emacs Lisp's
;;;; functions of the same names; range follows Python's.

(defun whitespacep (char)
  "True if CHAR is a whitespace character in CL's standard syntax: Space, Tab,
Newline, Return or Page."
  (if (member (char-code char) '(32 9 10 13 12)) t nil))

(defun split-string (string &optional separator)
  "The pieces of STRING between occurrences of SEPARATOR (a character or a
non-empty string), empty pieces included. Without SEPARATOR, the runs of
non-whitespace characters of STRING (no empty pieces)."
  (check-type string string)
  (cond ((null separator) (%split-whitespace string))
        ((characterp separator) (%split-on string (string separator)))
        ((not (stringp separator))
         (error 'type-error
                :format-control "split-string: the separator ~s is not a character or a string"
                :format-arguments (list separator)))
        ((= (length separator) 0)
         (error 'type-error :format-control "split-string: the separator must not be empty"
                :format-arguments nil))
        (t (%split-on string separator))))

(defun %split-whitespace (string)
  (loop for start = (position-if-not #'whitespacep string)
        then (position-if-not #'whitespacep string :start end)
        while start
        for end = (position-if #'whitespacep string :start start)
        collect (subseq string start end)
        while end))

(defun %split-on (string separator)
  (loop with n = (length separator)
        for start = 0 then (+ end n)
        for end = (search separator string :start2 start)
        collect (subseq string start end)
        while end))

(defun join (strings &optional (separator ""))
  "The strings of the list STRINGS concatenated, with SEPARATOR (a string or a
character; default none) between each two."
  (check-type strings list)
  (let ((sep (if (characterp separator) (string separator) separator)))
    (apply #'concatenate 'string
           (loop for (s . more) on strings
                 collect s
                 when more collect sep))))

(defun range (start-or-end &optional (end nil end-p) (step 1))
  "The list of numbers from START (default 0) below END, counting by STEP
(default 1; negative counts down, above END): (range 3) is (0 1 2), (range 1 7
2) is (1 3 5), (range 3 0 -1) is (3 2 1). As Python's range."
  (let ((start (if end-p start-or-end 0))
        (end (if end-p end start-or-end)))
    (cond ((and (numberp step) (zerop step))
           (error 'type-error :format-control "range: the step must not be zero"
                  :format-arguments nil))
          ;; start + k*step rather than repeated adding: float steps do not drift.
          ((minusp step) (loop for k from 0 for i = (+ start (* k step)) while (> i end) collect i))
          (t (loop for k from 0 for i = (+ start (* k step)) while (< i end) collect i)))))

(defun product (numbers)
  "The product of the list NUMBERS; 1 for the empty list."
  (let ((p 1))
    (dolist (x numbers p) (setq p (* p x)))))

(defun sum-list (numbers)
  "The sum of the list NUMBERS; 0 for the empty list."
  (let ((s 0))
    (dolist (x numbers s) (setq s (+ s x)))))

(defun plist-keys (plist)
  "The keys of the property list PLIST, in order: (plist-keys '(:a 1 :b 2)) is
(:a :b)."
  (do ((tail plist (cddr tail))
       (keys nil (cons (car tail) keys)))
      ((null tail) (nreverse keys))
    (unless (and (consp tail) (consp (cdr tail)))
      (error 'type-error :format-control "plist-keys: ~s is not a property list"
             :format-arguments (list plist)))))

;;; CL's function makers (language.md, "Functions and bindings"): closures
;;; over the given function or value.

(defun complement (function)
  "A function that returns the negation of what FUNCTION returns on the same
arguments."
  (lambda (&rest arguments) (not (apply function arguments))))

(defun constantly (value)
  "A function that accepts any arguments and returns VALUE."
  (lambda (&rest arguments) (declare (ignore arguments)) value))
