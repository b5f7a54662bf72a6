(defun f () 1)
