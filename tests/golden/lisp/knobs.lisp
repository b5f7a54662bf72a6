;;;; The declared selection: defknob, defvariant, defsweep (read before the
;;;; file is evaluated; the command line's selection is tested in cli.sh).

(defknob width 256 :doc "hidden width" :type integer :min 1)
;=> width
(defknob hidden (* 4 width) :type integer)
;=> hidden
(defknob lr 1e-3 :type float :min 0.0)
;=> lr
(defknob steps 10 :type float)
;=> steps
(defknob act :relu :type (member :relu :gelu))
;=> act
(defknob name "mlp" :type string)
;=> name
(list width hidden lr steps act name)
;=> (256 1024 0.001 10.0 :relu "mlp")
(defknob spare 1)
;!W-UNUSED-KNOB
(defknob depth 0 :type integer :min 1)
;!E-KNOB-TYPE
(defknob ratio 2.5 :type float :max 1)
;!E-KNOB-TYPE
(defknob mode :fast :type (member :relu :gelu))
;!E-KNOB-TYPE
(defvariant wide :doc "four times wider" (:width 1024))
;=> wide
(defvariant typo (:widht 1024))
;!E-KNOB-UNKNOWN
(defsweep lr-scan (:lr (1e-3 3e-3 1e-2)))
;=> lr-scan
(defsweep bad (:nope (1 2)))
;!E-KNOB-UNKNOWN
;; A knob is a global lexical: a let or a parameter of its name shadows it.
(let ((width 3)) width)
;=> 3
(defun uses-width () width)
(funcall (lambda (width) (list width (uses-width))) 7)
;=> (7 256)
;; A defknob the compiler did not read first (inside another form) is refused.
(progn (defknob late 1))
;!E-KNOB-UNKNOWN
;; Knobs whose values broke their declaration are still bound (the file
;; does not compile, but every later error is still reported).
(list depth mode ratio)
;=> (0 :fast 2.5)
