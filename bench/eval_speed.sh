#!/usr/bin/env bash
# Evaluator speed: the same forms through `sexpgpu eval` and SBCL's
# interpreter (sb-eval, *evaluator-mode* :interpret), side by side.
# Reports our evaluation steps per second and SBCL's rate on the same work
# (our step count over SBCL's time), and the ratio of the two times.
# Usage: bench/eval_speed.sh [path/to/sexpgpu]     (needs: apt-get install sbcl)
set -euo pipefail
BIN=${1:-build/core/sexpgpu}
command -v sbcl >/dev/null || { echo "sbcl is not installed (apt-get install sbcl)"; exit 1; }

declare -A WORK
WORK[fib]='(progn (defun fib (n) (if (< n 2) n (+ (fib (- n 1)) (fib (- n 2))))) (fib 25))'
WORK[loop-sum]='(loop for i below 2000000 sum (* i i))'
WORK[lists]='(let ((l (loop for i below 200000 collect (mod (* i 7919) 10007)))) (length (remove-duplicates (sort (mapcar (lambda (x) (* 2 x)) l) (function <)))))'
WORK[hash]='(let ((h (make-hash-table :test (quote equal)))) (dotimes (i 100000) (setf (gethash (format nil "k~d" (mod i 5000)) h) i)) (hash-table-count h))'
WORK[closures]='(let ((acc 0)) (dotimes (i 300000) (let ((f (lambda (x) (+ x i)))) (setq acc (funcall f acc)))) acc)'

printf "%-10s %12s %10s %10s %14s %14s %8s\n" work steps ours_s sbcl_s ours_steps/s sbcl_steps/s ratio
for name in fib loop-sum lists hash closures; do
  form=${WORK[$name]}
  stats=$("$BIN" eval --stats --eval-steps 1000000000 -e "$form" 2>&1 >/dev/null | grep '^steps')
  steps=$(echo "$stats" | awk '{print $2}' | tr -d ,)
  ours=$(echo "$stats" | awk '{print $3}')
  sbcl_s=$(sbcl --noinform --non-interactive \
    --eval '(setf sb-ext:*evaluator-mode* :interpret)' \
    --eval "(let ((start (get-internal-real-time))) (eval (read-from-string \"${form//\"/\\\"}\")) (format t \"~,6f~%\" (/ (- (get-internal-real-time) start) internal-time-units-per-second)))" 2>/dev/null | tail -1)
  awk -v n="$name" -v st="$steps" -v o="$ours" -v s="$sbcl_s" \
    'BEGIN { printf "%-10s %12d %10.3f %10.3f %14.0f %14.0f %7.1fx\n", n, st, o, s, st/o, st/s, s/o }'
done
