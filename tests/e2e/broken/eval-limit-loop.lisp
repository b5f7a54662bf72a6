;; expect: E-EVAL-LIMIT 5 1
;; cpu-under: 350 ms
;; An endless loop stops at the step limit (2e7 steps) in well under a
;; second (language.md, "Evaluation limits").
(loop)
