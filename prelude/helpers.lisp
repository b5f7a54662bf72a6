;;;; Prelude helpers that are not CL: split-string, join, range, product,
;;;; sum-list, plist-keys, whitespacep. Being written.
