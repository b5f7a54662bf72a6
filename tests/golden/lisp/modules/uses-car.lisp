(defmodule uses-car (:export firsts heads))

;; CL's car, whatever the requiring file defines as car.
(defun firsts (lists) (mapcar #'car lists))
(defun heads (lists) (loop for l in lists collect (car l)))
