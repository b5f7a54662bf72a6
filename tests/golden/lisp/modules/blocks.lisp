(defmodule blocks (:export double *scale* twice))

(defvar *scale* 3)
(defun hidden (x) (* x 2))
(defun double (x) (hidden x))
(defmacro twice (form) `(list ,form ,form))
