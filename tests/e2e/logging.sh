#!/usr/bin/env bash
# The log (docs/cli.md, "Logging") and ir's --list and --stage
# (docs/explain.md, "Staged functions and curriculum stages"): --log and
# SEXPGPU_LOG put the phases on standard error and leave standard output
# byte for byte as it was; a bad level is refused (flag) or warned about
# (environment); --list and --stage on the curriculum page's first example.
# Usage: logging.sh PATH/TO/sexpgpu SOURCE_DIR
set -u
BIN=$1
SRC=$2
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
export SEXPGPU_RUNS=$TMP/runs
unset SEXPGPU_LOG
pass=0
fail=0

ok() { pass=$((pass + 1)); }
bad() { echo "FAIL $1"; [ $# -ge 2 ] && sed 's/^/    /' "$2" | head -20; fail=$((fail + 1)); }
# has NAME FILE PATTERN...: every pattern (extended regex) is in FILE.
has() {
  local name=$1 file=$2
  shift 2
  for p in "$@"; do
    grep -qE -- "$p" "$file" || { bad "$name: lacks /$p/" "$file"; return; }
  done
  ok
}

cat >"$TMP/tiny.lisp" <<'EOF'
(require "sexpgpu/nn")
(require "sexpgpu/optim")

(defloader train :source (synthetic :regression :features 4 :examples 64 :seed 1) :batch 16)
(defmodel net (x) (nn:linear x 1 :name "fc"))
(defun objective (batch ctx) (mse (net (getf batch :x)) (getf batch :y)))
(defun optimizer () (optim:sgd :lr 0.1))
(defrun :steps 4)
EOF

# ---- --log: stderr gets the phases, stdout is unchanged ---------------------------------
"$BIN" check "$TMP/tiny.lisp" >"$TMP/check.out" 2>"$TMP/check.err"
[ $? -eq 0 ] && ok || bad "check tiny" "$TMP/check.err"
"$BIN" --log debug check "$TMP/tiny.lisp" >"$TMP/check-log.out" 2>"$TMP/check-log.err"
[ $? -eq 0 ] && ok || bad "--log debug check" "$TMP/check-log.err"
cmp -s "$TMP/check.out" "$TMP/check-log.out" && ok || bad "--log debug changed check's stdout"
has "check --log debug" "$TMP/check-log.err" '^\[ *[0-9]+\.[0-9]{3}s debug\] ' \
  '\[ *[0-9.]+s info\] compile: read .*tiny.lisp \([0-9]+ bytes, [0-9]+ forms\) in [0-9.]+ ms' \
  'compile: staged [0-9]+ functions' 'compile: optimized in' 'compile: verified in'

"$BIN" ir "$TMP/tiny.lisp" >"$TMP/ir.out" 2>/dev/null
"$BIN" ir "$TMP/tiny.lisp" --log trace >"$TMP/ir-log.out" 2>"$TMP/ir-log.err"
cmp -s "$TMP/ir.out" "$TMP/ir-log.out" && ok || bad "--log trace changed ir's stdout"
has "ir --log trace" "$TMP/ir-log.err" 'trace\] compile: staged train_step: [0-9]+ nodes'

# run --json: the same events with and without the log, but for times.
# The times and the rates, the command line (which holds --log) and a
# checkpoint's size (its state holds the rates, in as many digits as they
# take) vary.
strip_times() {
  jq -c 'del(.command) | if .kind == "checkpoint" then del(.bytes) else . end | walk(if type == "object" then with_entries(select(.key |
    test("^(time|started|ended|wall_s|ms|mfu)$|-per-s$|-ms$|_ms$|_s$") | not)) else . end)' "$1"
}
"$BIN" run "$TMP/tiny.lisp" --json --out "$TMP/r1" >"$TMP/run1.out" 2>"$TMP/run1.err"
[ $? -eq 0 ] && ok || bad "run tiny" "$TMP/run1.err"
"$BIN" --log debug run "$TMP/tiny.lisp" --json --out "$TMP/r2" >"$TMP/run2.out" 2>"$TMP/run2.err"
[ $? -eq 0 ] && ok || bad "--log debug run" "$TMP/run2.err"
# The run directory's name is in the events; each run has its own.
strip_times "$TMP/run1.out" | sed "s|$TMP/r1|DIR|g" >"$TMP/run1.norm"
strip_times "$TMP/run2.out" | sed "s|$TMP/r2|DIR|g" >"$TMP/run2.norm"
if cmp -s "$TMP/run1.norm" "$TMP/run2.norm"; then ok; else
  bad "--log debug changed run --json's stdout (times aside)"; diff "$TMP/run1.norm" "$TMP/run2.norm" | head -10
fi
grep -q '^\[' "$TMP/run2.out" && bad "a log line on run's stdout" "$TMP/run2.out" || ok
has "run --log debug" "$TMP/run2.err" \
  'debug\] plugin host: search .* plugin files' \
  'debug\] plugin host: loaded cpu \(device ' \
  'info\] plugin host: loaded .*cpu.* in [0-9.]+ ms' \
  'info\] compile: staged' \
  'info\] memory plan: .* total \(parameters .*\) of .* on cpu' \
  'info\] data: loader train: synthetic .*\(64 examples, 0 files, 0 bytes\) loaded in' \
  'info\] device: opened cpu' \
  'debug\] lower: train_step on cpu in [0-9.]+ ms' \
  'info\] lower: [0-9]+ functions compiled for cpu in' \
  'info\] checkpoint: step 4 written to .*r2/checkpoints/[^ ]+ \([0-9]+ bytes\) in [0-9.]+ ms' \
  'info\] steps: 4 in [0-9.]+ ms, [0-9.]+ ms a step: [0-9.]+ taking batches from the loader, [0-9.]+ enqueueing, [0-9.]+ waiting in the device.s synchronize, -?[0-9.]+ the rest$'
# Nothing per step: eight steps log as many lines as four.
"$BIN" --log trace run "$TMP/tiny.lisp" --steps 8 --out "$TMP/r3" >/dev/null 2>"$TMP/run3.err"
"$BIN" --log trace run "$TMP/tiny.lisp" --out "$TMP/r4" >/dev/null 2>"$TMP/run4.err"
n3=$(grep -c '^\[' "$TMP/run3.err")
n4=$(grep -c '^\[' "$TMP/run4.err")
[ "$n3" -eq "$n4" ] && ok || bad "log lines per step: $n3 for 8 steps, $n4 for 4" "$TMP/run3.err"

# ---- SEXPGPU_LOG, off, the default, bad levels, --quiet -------------------------------------
SEXPGPU_LOG=info "$BIN" check "$TMP/tiny.lisp" >"$TMP/env.out" 2>"$TMP/env.err"
cmp -s "$TMP/check.out" "$TMP/env.out" && ok || bad "SEXPGPU_LOG=info changed stdout"
has "SEXPGPU_LOG=info" "$TMP/env.err" 'info\] compile: read'
grep -q 'debug\]' "$TMP/env.err" && bad "SEXPGPU_LOG=info shows debug" "$TMP/env.err" || ok
# The flag wins over the environment.
SEXPGPU_LOG=info "$BIN" check "$TMP/tiny.lisp" --log debug >/dev/null 2>"$TMP/both.err"
has "--log over SEXPGPU_LOG" "$TMP/both.err" 'debug\] log: level debug \(from --log\)'

"$BIN" check "$TMP/tiny.lisp" --log off >"$TMP/off.out" 2>"$TMP/off.err"
cmp -s "$TMP/check.out" "$TMP/off.out" && ok || bad "--log off changed stdout"
cmp -s "$TMP/check.err" "$TMP/off.err" && ok || bad "--log off printed something extra" "$TMP/off.err"
"$BIN" --log warn check "$TMP/tiny.lisp" >/dev/null 2>"$TMP/warn.err"
cmp -s "$TMP/check.err" "$TMP/warn.err" && ok || bad "--log warn (the default) printed more" "$TMP/warn.err"

"$BIN" --log bogus check "$TMP/tiny.lisp" >"$TMP/bogus.out" 2>"$TMP/bogus.err"
rc=$?
[ $rc -eq 2 ] && ok || bad "--log bogus: exit $rc, wanted 2" "$TMP/bogus.err"
has "--log bogus" "$TMP/bogus.err" "'bogus' is not a log level; the levels: trace debug info warn error off"
[ -s "$TMP/bogus.out" ] && bad "--log bogus printed on stdout" "$TMP/bogus.out" || ok
"$BIN" check "$TMP/tiny.lisp" --log >/dev/null 2>"$TMP/missing.err"
[ $? -eq 2 ] && ok || bad "--log without a level" "$TMP/missing.err"

SEXPGPU_LOG=loud "$BIN" check "$TMP/tiny.lisp" >"$TMP/loud.out" 2>"$TMP/loud.err"
rc=$?
[ $rc -eq 0 ] && ok || bad "SEXPGPU_LOG=loud: exit $rc, wanted 0" "$TMP/loud.err"
has "SEXPGPU_LOG=loud" "$TMP/loud.err" 'warning: SEXPGPU_LOG=loud is not a log level \(trace debug info warn error off\); skipped'
cmp -s "$TMP/check.out" "$TMP/loud.out" && ok || bad "SEXPGPU_LOG=loud changed stdout"

"$BIN" --quiet --log debug check "$TMP/tiny.lisp" >/dev/null 2>"$TMP/quiet.err"
[ -s "$TMP/quiet.err" ] && bad "--quiet --log debug printed" "$TMP/quiet.err" || ok

# ---- ir --list and --stage, on docs/curriculum.md's first example -------------------------
awk '/^```lisp/ { inside = 1; text = ""; next }
     inside && /^```/ { inside = 0; if (text ~ /defcurriculum/ && !done) { printf "%s", text; done = 1 }; next }
     inside { text = text $0 "\n" }' "$SRC/docs/curriculum.md" >"$TMP/curriculum.lisp"
"$BIN" ir "$TMP/curriculum.lisp" --list >"$TMP/list.out" 2>"$TMP/list.err"
[ $? -eq 0 ] && ok || bad "ir --list" "$TMP/list.err"
# The lines docs/explain.md shows are the ones it prints.
awk '/^\$ sexpgpu ir curriculum.lisp --list/ { inside = 1; next }
     inside && /^```/ { exit } inside && !/^\.\.\./ { print }' "$SRC/docs/explain.md" >"$TMP/list.doc"
[ -s "$TMP/list.doc" ] || bad "docs/explain.md has no --list example"
if head -n "$(wc -l <"$TMP/list.doc")" "$TMP/list.out" | cmp -s - "$TMP/list.doc"; then ok; else
  bad "ir --list differs from docs/explain.md"; diff "$TMP/list.doc" "$TMP/list.out" | head -20
fi
has "ir --list diagnostics" "$TMP/list.out" '^diag:grad-norm +diagnostic'
"$BIN" ir "$TMP/curriculum.lisp" --list --json >"$TMP/list.json" 2>/dev/null
[ "$(jq -r '.[] | select(.name == "train_step@8") | .stages[0] + " " + .inputs[0].type' "$TMP/list.json")" = "warm f32[8,4]" ] &&
  ok || bad "ir --list --json: train_step@8" "$TMP/list.json"
[ "$(jq 'length' "$TMP/list.json")" -eq "$(wc -l <"$TMP/list.out")" ] && ok || bad "--list --json length"

"$BIN" ir "$TMP/curriculum.lisp" --stage warm >"$TMP/warm.out" 2>"$TMP/warm.err"
[ $? -eq 0 ] && ok || bad "ir --stage warm" "$TMP/warm.err"
"$BIN" ir "$TMP/curriculum.lisp" --stage main >"$TMP/main.out" 2>/dev/null
"$BIN" ir "$TMP/curriculum.lisp" --fn train_step@8 >"$TMP/fn8.out" 2>/dev/null
cmp -s "$TMP/warm.out" "$TMP/fn8.out" && ok || bad "--stage warm is not train_step@8"
want=$(awk '/^\$ sexpgpu ir curriculum.lisp --stage warm/ { getline; print; exit }' "$SRC/docs/explain.md")
want=${want%...}
[ -n "$want" ] && [ "$(head -1 "$TMP/warm.out" | cut -c1-${#want})" = "$want" ] &&
  ok || bad "--stage warm's header is not docs/explain.md's ($want...)" "$TMP/warm.out"
has "--stage warm shapes" "$TMP/warm.out" '^fn train_step@8\(' 'f32\[8,3\]'
has "--stage main shapes" "$TMP/main.out" '^fn train_step\(' 'f32\[32,3\]'
grep -q 'f32\[8,' "$TMP/main.out" && bad "--stage main has batch-8 shapes" "$TMP/main.out" || ok
"$BIN" ir "$TMP/curriculum.lisp" --stage :warm --fn diag:forward >"$TMP/dw.out" 2>"$TMP/dw.err"
# diag:forward exists only where the objective probes; without probes, the name is unknown (2).
rc=$?
[ $rc -eq 0 ] || [ $rc -eq 2 ] && ok || bad "--fn diag:forward --stage: exit $rc" "$TMP/dw.err"
"$BIN" ir "$TMP/curriculum.lisp" --fn diag:grad-norm >"$TMP/dg.out" 2>"$TMP/dg.err"
[ $? -eq 0 ] && ok || bad "--fn diag:grad-norm" "$TMP/dg.err"
has "--fn diag:grad-norm" "$TMP/dg.out" '^fn diag:grad-norm\('
"$BIN" ir "$TMP/curriculum.lisp" --stage warm --fn update >"$TMP/up.out" 2>/dev/null
"$BIN" ir "$TMP/curriculum.lisp" --fn update >"$TMP/up2.out" 2>/dev/null
cmp -s "$TMP/up.out" "$TMP/up2.out" && ok || bad "--stage warm --fn update is not update"

"$BIN" ir "$TMP/curriculum.lisp" --stage cool >"$TMP/cool.out" 2>"$TMP/cool.err"
rc=$?
[ $rc -eq 1 ] && ok || bad "--stage cool: exit $rc, wanted 1" "$TMP/cool.err"
grep -q "E-STAGE-UNKNOWN" "$TMP/cool.err" && ok || bad "--stage cool: no code" "$TMP/cool.err"
has "--stage cool" "$TMP/cool.err" "E-STAGE-UNKNOWN --stage cool: the curriculum has no stage cool; its stages are warm, main"
[ -s "$TMP/cool.out" ] && bad "--stage cool printed on stdout" "$TMP/cool.out" || ok
"$BIN" ir "$TMP/tiny.lisp" --stage warm >/dev/null 2>"$TMP/nocur.err"
rc=$?
[ $rc -eq 1 ] && ok || bad "--stage without a curriculum: exit $rc" "$TMP/nocur.err"
has "--stage without a curriculum" "$TMP/nocur.err" "E-STAGE-UNKNOWN --stage warm: .*tiny.lisp has no defcurriculum"
"$BIN" ir "$TMP/curriculum.lisp" --fn nosuch >/dev/null 2>"$TMP/nosuch.err"
[ $? -eq 2 ] && ok || bad "--fn nosuch" "$TMP/nosuch.err"
has "--fn nosuch" "$TMP/nosuch.err" "stages no function named 'nosuch'" "--list lists them"

echo "logging: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
