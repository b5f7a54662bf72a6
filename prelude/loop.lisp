;;;; The loop macro (language.md, "Truth, iteration and values"): simple loop and
;;;; the extended clauses. Being written.
