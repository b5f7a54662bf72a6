(defmodule cycle-a (:export a))
(require "./cycle-b.lisp")
(defun a () 1)
