(defmodule back-to-main (:export width))
;; Requires the run file that requires this module: a cycle.
(require "../require-cycle-main.lisp")
(defun width () 4)
