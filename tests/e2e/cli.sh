#!/usr/bin/env bash
# End-to-end tests of the command line: streams, exit codes, JSON shape.
# Usage: cli.sh PATH/TO/sexpgpu SOURCE_DIR
set -u
BIN=$1
SRC=$2
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
pass=0
fail=0

expect() {  # expect NAME WANT_EXIT ACTUAL_EXIT [grep-pattern file]
  local name=$1 want=$2 got=$3
  if [ "$want" != "$got" ]; then
    echo "FAIL $name: exit $got, wanted $want"
    fail=$((fail + 1))
    return
  fi
  if [ $# -ge 5 ] && ! grep -qE -- "$4" "$5"; then
    echo "FAIL $name: output lacks /$4/:"
    sed 's/^/    /' "$5" | head -20
    fail=$((fail + 1))
    return
  fi
  pass=$((pass + 1))
}

"$BIN" --version >"$TMP/out" 2>&1
expect version 0 $? "^sexpgpu [0-9]+\.[0-9]+\.[0-9]+ \(plugin ABI 1\.3, IR 3\)" "$TMP/out"

"$BIN" frobnicate >"$TMP/out" 2>&1
expect unknown-verb 2 $?

"$BIN" check --no-such-flag x.lisp >"$TMP/out" 2>&1
expect unknown-flag 2 $?

"$BIN" check "$TMP/missing.lisp" >"$TMP/out" 2>&1
expect missing-file 2 $?

"$BIN" check "$TMP" >"$TMP/out" 2>&1
expect directory-not-a-file 2 $? "is a directory" "$TMP/out"

"$BIN" check "$SRC/examples/lisp-tour.lisp" >"$TMP/out" 2>"$TMP/err"
expect check-clean 0 $?
[ -s "$TMP/out" ] && { echo "FAIL check-clean printed on stdout"; fail=$((fail + 1)); }

printf '(defun f (x) x)\n(f 1 2)\n(g)\n(warn "careful")\n' >"$TMP/bad.lisp"
"$BIN" check "$TMP/bad.lisp" >"$TMP/out" 2>"$TMP/err"
expect check-errors 1 $? "bad.lisp:2:1: E-ARITY" "$TMP/out"
grep -q "bad.lisp:3:2: E-UNBOUND" "$TMP/out" || { echo "FAIL independent errors: second error missing"; fail=$((fail + 1)); }
grep -q "W-USER careful" "$TMP/out" || { echo "FAIL warnings reported"; fail=$((fail + 1)); }
grep -q "\^" "$TMP/out" || { echo "FAIL caret under the span"; fail=$((fail + 1)); }

printf '(warn "only a warning")\n' >"$TMP/warn.lisp"
"$BIN" check "$TMP/warn.lisp" >"$TMP/out" 2>&1
expect warning-ok 0 $?
"$BIN" check --strict "$TMP/warn.lisp" >"$TMP/out" 2>&1
expect warning-strict 1 $?

"$BIN" check --json "$TMP/bad.lisp" >"$TMP/out" 2>"$TMP/err"
expect check-json 1 $? '"code": "E-ARITY"' "$TMP/out"
for key in code severity file line col end_line end_col message fix notes; do
  grep -q "\"$key\":" "$TMP/out" || { echo "FAIL check-json lacks $key"; fail=$((fail + 1)); }
done

"$BIN" eval -e '(values 1 (quote a) "s")' >"$TMP/out" 2>"$TMP/err"
expect eval-values 0 $?
[ "$(cat "$TMP/out")" = $'1\na\n"s"' ] || { echo "FAIL eval-values: $(cat "$TMP/out")"; fail=$((fail + 1)); }

"$BIN" eval --readably -e '(list (quote a) "a\"b" #\a (cons 1 2) (vector 1 2) 1.5d0)' >"$TMP/out" 2>"$TMP/err"
expect eval-readably 0 $?
[ "$(cat "$TMP/out")" = '(A "a\"b" #\a (1 . 2) #(1 2) 1.5)' ] || { echo "FAIL eval-readably: $(cat "$TMP/out")"; fail=$((fail + 1)); }

"$BIN" eval -e '(progn (print 42) 7)' >"$TMP/out" 2>"$TMP/err"
expect eval-print-to-stderr 0 $?
[ "$(cat "$TMP/out")" = "7" ] || { echo "FAIL print output leaked to stdout: $(cat "$TMP/out")"; fail=$((fail + 1)); }
grep -q 42 "$TMP/err" || { echo "FAIL print output missing on stderr"; fail=$((fail + 1)); }

"$BIN" eval -e '(car 1)' >"$TMP/out" 2>"$TMP/err"
expect eval-error 1 $? "E-TYPE" "$TMP/err"

"$BIN" eval "$SRC/examples/lisp-tour.lisp" -e '(best-width 300000)' >"$TMP/out" 2>"$TMP/err"
expect eval-with-file 0 $?
[ "$(cat "$TMP/out")" = "256" ] || { echo "FAIL eval-with-file: $(cat "$TMP/out")"; fail=$((fail + 1)); }

printf '(+ 1 2)\n(list 3)\n' | "$BIN" eval >"$TMP/out" 2>"$TMP/err"
expect eval-stdin 0 $?
[ "$(cat "$TMP/out")" = $'3\n(3)' ] || { echo "FAIL eval-stdin: $(cat "$TMP/out")"; fail=$((fail + 1)); }

"$BIN" eval --eval-steps 1000 -e '(loop)' >"$TMP/out" 2>"$TMP/err"
expect eval-step-limit 1 $? "E-EVAL-LIMIT" "$TMP/err"

"$BIN" eval --eval-depth 50 -e '(labels ((f (n) (+ 1 (f n)))) (f 0))' >"$TMP/out" 2>"$TMP/err"
expect eval-depth-limit 1 $? "E-STACK" "$TMP/err"

"$BIN" eval --eval-heap 1000000 -e '(let ((l nil)) (dotimes (i 1000000) (push i l)) (length l))' >"$TMP/out" 2>"$TMP/err"
expect eval-heap-limit 1 $? "E-EVAL-LIMIT" "$TMP/err"

printf '(defun  f (x)\n   (+ x 1))\n' >"$TMP/fmt.lisp"
"$BIN" fmt --check "$TMP/fmt.lisp" >"$TMP/out" 2>&1
expect fmt-check-dirty 1 $? "fmt.lisp" "$TMP/out"
"$BIN" fmt "$TMP/fmt.lisp" >"$TMP/out" 2>&1
expect fmt-rewrite 0 $?
"$BIN" fmt --check "$TMP/fmt.lisp" >"$TMP/out" 2>&1
expect fmt-check-clean 0 $?
"$BIN" fmt --stdout "$TMP/fmt.lisp" >"$TMP/out" 2>&1
expect fmt-stdout 0 $? "^\(defun f \(x\)" "$TMP/out"

"$BIN" docs E-STACK >"$TMP/out" 2>&1
expect docs-code 0 $? "^## E-STACK" "$TMP/out"
"$BIN" docs lisp >"$TMP/out" 2>&1
expect docs-page 0 $?
cmp -s "$TMP/out" "$SRC/docs/lisp.md" || { echo "FAIL docs-page differs from docs/lisp.md"; fail=$((fail + 1)); }
"$BIN" docs --list >"$TMP/out" 2>&1
expect docs-list 0 $? "\(errors.md\)" "$TMP/out"
"$BIN" docs no-such-page >"$TMP/out" 2>&1
expect docs-unknown 2 $? "no page" "$TMP/out"
"$BIN" docs E-NO-SUCH-CODE >"$TMP/out" 2>&1
expect docs-unknown-code 2 $? "no diagnostic code" "$TMP/out"

# ir: the staged functions as text and JSON; --fn selects; limits apply.
"$BIN" ir "$SRC/tests/golden/ir/mlp.lisp" >"$TMP/out" 2>"$TMP/err"
expect ir-text 0 $? "^fn train-step\(%x: f32\[128,784\], %y: i32\[128\]\)" "$TMP/out"
grep -q "matmul" "$TMP/out" || { echo "FAIL ir-text: no matmul"; fail=$((fail + 1)); }
"$BIN" ir "$SRC/tests/golden/ir/mlp.lisp" --json >"$TMP/out" 2>"$TMP/err"
expect ir-json 0 $? '"version": 3' "$TMP/out"
"$BIN" ir "$SRC/tests/golden/ir/fusion.lisp" --fn no-such >"$TMP/out" 2>&1
expect ir-unknown-fn 2 $? "no function named" "$TMP/out"
"$BIN" ir "$SRC/tests/golden/ir/fusion.lisp" --no-opt >"$TMP/out" 2>&1
expect ir-no-opt 0 $? "exp" "$TMP/out"
printf '(stage-function f ((x (4))) (let ((y x)) (dotimes (i 50) (setq y (+ y 1))) y))\n' >"$TMP/many.lisp"
"$BIN" ir "$TMP/many.lisp" --ir-nodes 20 >"$TMP/out" 2>&1
expect ir-limit 1 $? "E-IR-LIMIT" "$TMP/out"
"$BIN" ir "$TMP/many.lisp" >"$TMP/out" 2>&1
expect ir-limit-default 0 $?
printf '(+ (zeros (list 3 4)) (zeros 5))\n' >"$TMP/shape.lisp"
"$BIN" check "$TMP/shape.lisp" >"$TMP/out" 2>&1
expect check-shape 1 $? "E-SHAPE.*f32\[3,4\].*f32\[5\]" "$TMP/out"
"$BIN" eval -e "(matmul (zeros '(128 784)) (zeros '(784 10)))" >"$TMP/out" 2>&1
expect eval-tensor 0 $? "^#<tensor f32\[128,10\]>$" "$TMP/out"

# The declared selection: variants, --set, --point, the slug, every code.
cat >"$TMP/knobs.lisp" <<'LISP'
(defknob width 256 :doc "hidden width" :type integer :min 1)
(defknob hidden (* 4 width) :type integer)
(defknob lr 1e-3 :type float :min 0.0)
(defknob spare 1)
(defvariant wide (:width 1024))
(defvariant narrow (:width 64))
(defsweep lr-scan (:lr (3e-4 1e-3 3e-3)))
(list width hidden lr)
LISP
"$BIN" variants "$TMP/knobs.lisp" --json >"$TMP/out" 2>"$TMP/err"
expect variants-json 0 $? '"slug": "knobs"' "$TMP/out"
grep -q '"slug": "knobs.lr=0.003"' "$TMP/out" || { echo "FAIL variants: sweep point slugs"; fail=$((fail + 1)); }
grep -q "W-UNUSED-KNOB knob 'spare'" "$TMP/err" || { echo "FAIL W-UNUSED-KNOB"; fail=$((fail + 1)); }
"$BIN" variants "$TMP/knobs.lisp" --variant wide --set lr=0.01 >"$TMP/out" 2>/dev/null
expect variants-selected 0 $? "^selected: knobs.wide.lr=0.01$" "$TMP/out"
"$BIN" eval "$TMP/knobs.lisp" --set width=512 -e "(list width hidden lr)" >"$TMP/out" 2>/dev/null
expect knob-set-derived 0 $? '^\(512 2048 0.001\)$' "$TMP/out"
"$BIN" eval "$TMP/knobs.lisp" --point lr-scan:2 -e lr >"$TMP/out" 2>/dev/null
expect knob-point 0 $? '^0.003$' "$TMP/out"
"$BIN" check "$TMP/knobs.lisp" --variant wide,narrow >"$TMP/out" 2>&1
expect knob-variant-conflict 0 $? "W-VARIANT-CONFLICT" "$TMP/out"
"$BIN" check "$TMP/knobs.lisp" --variant huge >"$TMP/out" 2>&1
expect knob-variant-unknown 1 $? "E-VARIANT-UNKNOWN no variant named 'huge' \(declared: wide, narrow\)" "$TMP/out"
"$BIN" check "$TMP/knobs.lisp" --point lr-scan:3 >"$TMP/out" 2>&1
expect knob-point-range 1 $? "E-SWEEP-UNKNOWN" "$TMP/out"
"$BIN" check "$TMP/knobs.lisp" --point nope:0 >"$TMP/out" 2>&1
expect knob-sweep-unknown 1 $? "E-SWEEP-UNKNOWN no sweep named 'nope'" "$TMP/out"
"$BIN" check "$TMP/knobs.lisp" --set width=0 >"$TMP/out" 2>&1
expect knob-min 1 $? "knobs.lisp:1:1: E-KNOB-TYPE knob 'width' = 0 is below the minimum 1" "$TMP/out"
"$BIN" check "$TMP/knobs.lisp" --set width=wide >"$TMP/out" 2>&1
expect knob-type 1 $? "E-KNOB-TYPE knob 'width' = wide is not of type integer" "$TMP/out"
"$BIN" check "$TMP/knobs.lisp" --set depth=3 >"$TMP/out" 2>&1
expect knob-unknown 1 $? "E-KNOB-UNKNOWN --set sets 'depth'" "$TMP/out"
# A selection error is about the file as a whole: no empty source line under it.
if grep -qE '^ +0 \|' "$TMP/out"; then
  echo "FAIL knob-unknown-excerpt: a line-0 diagnostic shows a source line"; fail=$((fail + 1))
else
  echo "ok   knob-unknown-excerpt"
fi
"$BIN" check "$TMP/knobs.lisp" --set width >"$TMP/out" 2>&1
expect knob-set-malformed 2 $?

# annotate: a note appended to a run's events at its latest step.
mkdir -p "$TMP/run"
printf '{"kind":"open","time":"2026-11-30T00:00:00.000Z"}\n{"kind":"step","time":"2026-11-30T00:00:01.000Z","step":40,"metrics":{}}\n' >"$TMP/run/events.jsonl"
"$BIN" annotate "$TMP/run" "lr looked too high here" --data '{"lr": 0.1}' >"$TMP/out" 2>&1
expect annotate 0 $?
tail -1 "$TMP/run/events.jsonl" >"$TMP/out"
grep -q '"kind":"annotation"' "$TMP/out" && grep -q '"step":40' "$TMP/out" && grep -q '"text":"lr looked too high here"' "$TMP/out" && grep -q '"lr":0.1' "$TMP/out" \
  || { echo "FAIL annotate: the appended event"; cat "$TMP/out"; fail=$((fail + 1)); }
"$BIN" annotate "$TMP/nowhere" "x" >"$TMP/out" 2>&1
expect annotate-no-run 2 $? "nowhere: no such run directory" "$TMP/out"
mkdir -p "$TMP/empty-run"
"$BIN" annotate "$TMP/empty-run" "x" >"$TMP/out" 2>&1
expect annotate-empty-dir 2 $? "holds no run" "$TMP/out"
"$BIN" annotate "$TMP/run" "x" --data '{bad' >"$TMP/out" 2>&1
expect annotate-bad-data 2 $? "not JSON" "$TMP/out"

# The REPL on a terminal (a pseudo-terminal from script(1), util-linux).
if command -v script >/dev/null && script -qec true /dev/null >/dev/null 2>&1; then
  printf '(defun sq (x)\n  (* x x))\n(sq 12)\n(car 1)\n' |
    NO_COLOR=1 timeout 20 script -qec "$BIN eval" /dev/null >"$TMP/out" 2>&1
  expect repl 0 $? "^144" "$TMP/out"
  grep -q "sexpgpu> " "$TMP/out" || { echo "FAIL repl: no prompt"; fail=$((fail + 1)); }
  grep -q "       > " "$TMP/out" || { echo "FAIL repl: no continuation prompt"; fail=$((fail + 1)); }
  grep -q "E-TYPE car: 1 is not a list" "$TMP/out" || { echo "FAIL repl: no diagnostic"; fail=$((fail + 1)); }
else
  echo "skip repl: no pseudo-terminal here (script(1) missing or /dev/pts unavailable)"
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
