(defmodule cycle-b (:export b))
(require "./cycle-a.lisp")
(defun b () 2)
