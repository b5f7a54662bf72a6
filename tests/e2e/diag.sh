#!/usr/bin/env bash
# Diagnostics end to end on the CPU (docs/diagnostics.md): defrun
# :diagnostics and --diag select what runs; one diag event per selected
# diagnostic at each sampled step, with finite values keyed by path, probe
# or "global"; a defdiagnostic with reducers, core ones and the reducer
# plugins of diagnostics/; unknown names and reducers refused (a reducer no
# plugin here gives at check, a plugin's error at run time); nothing
# selected, nothing reported.
# Usage: diag.sh SEXPGPU SOURCE_DIR TEST_PLUGIN_DIR
set -u
BIN=$1
SRC=$2
TESTPLUGINS=$3
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
export SEXPGPU_RUNS=$TMP/runs
fail=0

# expect NAME WANT_RC GOT_RC [REGEX FILE]
expect() {
  local name=$1 want=$2 got=$3
  if [ "$got" -ne "$want" ]; then
    echo "FAIL $name: exit $got, expected $want"; cat "$TMP/err" 2>/dev/null | head -5
    fail=$((fail + 1)); return
  fi
  if [ $# -ge 5 ] && ! grep -q -- "$4" "$5"; then
    echo "FAIL $name: no '$4' in $5:"; cat "$5"; fail=$((fail + 1)); return
  fi
  echo "ok   $name"
}
# check NAME JQ-EXPRESSION FILE: the expression must give true.
check() {
  if [ "$(jq -r "$2" "$3" 2>/dev/null)" = "true" ]; then echo "ok   $1"; else
    echo "FAIL $1: $2 is not true in $3"; jq -c . "$3" 2>/dev/null | head -20; fail=$((fail + 1)); fi
}

cat >"$TMP/net.lisp" <<'EOF'
(require "sexpgpu/nn")
(require "sexpgpu/optim")
(defknob micro 1 :type integer)
(defloader train :source (synthetic :regression :features 8 :examples 256 :seed 1) :batch 32)
(defmodel net (x)
  (let ((h (probe "hidden" (relu (nn:linear x 16 :name "fc1")))))
    (nn:linear (dropout h 0.25) 1 :name "fc2")))
(defun objective (batch ctx)
  (mean (probe "sqerr" (square (- (net (getf batch :x)) (getf batch :y))))))
(defun optimizer () (optim:adamw :lr 1e-2))
(defdiagnostic update-to-weight
  :over :updates
  :value (lambda (u p) (/ (norm u) (+ (norm p) 1e-12)))
  :reduce (:max :mean))
(defdiagnostic hidden-hist :over :activations :value (lambda (a) a)
  :reduce (:histogram :frac-zero))
(defdiagnostic odd :over :params :value (lambda (p) p) :reduce (:kurtosis :quantiles :min :max))
(defdiagnostic loss-again :over :activations :value (lambda (a) a) :select "sqerr")
(defrun :steps 10 :log-every 1 :microbatches micro
  :diagnostics (:every 4 :select (:grad-norm :update-ratio :update-to-weight)))
EOF

"$BIN" run "$TMP/net.lisp" --quiet --out "$TMP/a" --diag act-rms --diag hidden-hist \
  --diag state-rms --diag update-ratio --diag loss-again >"$TMP/out" 2>"$TMP/err"
expect diag-runs 0 $?
jq -s . "$TMP/a/events.jsonl" >"$TMP/a.json"
D='map(select(.kind == "diag"))'
check diag-sampled-steps "[$D[] | select(.name == \"grad-norm\") | .step] == [1, 4, 8, 10]" "$TMP/a.json"
check diag-selected-once "[$D[] | select(.step == 4) | .name] | sort == [\"act-rms\", \"grad-norm\", \"hidden-hist\", \"loss-again\", \"state-rms\", \"update-ratio\", \"update-to-weight\"]" "$TMP/a.json"
check diag-grad-norm-keys "$D | map(select(.name == \"grad-norm\"))[0].values | keys == [\"global\", \"net.fc1.bias\", \"net.fc1.weight\", \"net.fc2.bias\", \"net.fc2.weight\"]" "$TMP/a.json"
check diag-finite "[$D[] | .values | .. | numbers] | length > 40 and all(. > -1e30 and . < 1e30)" "$TMP/a.json"
check diag-no-null "[$D[] | .values | .. | select(. == null)] | length == 0" "$TMP/a.json"
# The global norm is the step's grad-norm series (both before clipping).
check diag-global-is-step-grad-norm "(map(select(.kind == \"step\" and .step == 4))[0].metrics[\"grad-norm\"]) as \$g | ($D | map(select(.name == \"grad-norm\" and .step == 4))[0].values.global) as \$d | ((\$g - \$d) | fabs) < 1e-5 * \$g" "$TMP/a.json"
check diag-update-ratio "[$D[] | select(.name == \"update-ratio\") | .values[]] | length == 16 and all(. > 0 and . < 1)" "$TMP/a.json"
check diag-defdiagnostic-reducers "[$D[] | select(.name == \"update-to-weight\") | .values[]] | length == 16 and all(.max > 0 and .max == .mean)" "$TMP/a.json"
check diag-act-rms "[$D[] | select(.name == \"act-rms\") | .values] | length == 4 and all(keys == [\"net.hidden\", \"sqerr\"] and .[\"net.hidden\"] > 0)" "$TMP/a.json"
# The probes are the step's own activations (its batch, parameters and
# dropout mask): the mean of the squared errors is the step's loss.
check diag-activations-are-the-steps "([.[] | select(.kind == \"step\") | {key: (.step | tostring), value: .metrics[\"train/loss\"]}] | from_entries) as \$loss | [$D[] | select(.name == \"loss-again\") | ((.values.sqerr - \$loss[.step | tostring]) | fabs) < 1e-6 * \$loss[.step | tostring]] | length == 4 and all" "$TMP/a.json"
check diag-histogram "[$D[] | select(.name == \"hidden-hist\") | .values[\"net.hidden\"]] | all((.histogram.counts | add) == 512 and (.histogram.counts | length) == 16 and .histogram.min == 0 and .[\"frac-zero\"] >= 0 and .[\"frac-zero\"] < 1)" "$TMP/a.json"
check diag-state-rms "$D | map(select(.name == \"state-rms\"))[0].values | keys == [\"net.fc1.bias/m\", \"net.fc1.bias/v\", \"net.fc1.weight/m\", \"net.fc1.weight/v\", \"net.fc2.bias/m\", \"net.fc2.bias/v\", \"net.fc2.weight/m\", \"net.fc2.weight/v\"]" "$TMP/a.json"
check diag-run-finished '.[-1].kind == "close" and .[-1].state == "finished"' "$TMP/a.json"

# Microbatches: the gradient diagnostics see the mean over them.
"$BIN" run "$TMP/net.lisp" --quiet --out "$TMP/m" --set micro=2 >"$TMP/out" 2>"$TMP/err"
expect diag-microbatches 0 $?
check diag-microbatch-mean "(map(select(.kind == \"step\" and .step == 8))[0].metrics[\"grad-norm\"]) as \$g | (map(select(.kind == \"diag\" and .name == \"grad-norm\" and .step == 8))[0].values.global) as \$d | ((\$g - \$d) | fabs) < 1e-5 * \$g" <(jq -s . "$TMP/m/events.jsonl")

# Nothing selected: no diag event.
"$BIN" run "$SRC/examples/smallest.lisp" --quiet --steps 5 --out "$TMP/none" >"$TMP/out" 2>"$TMP/err"
expect diag-none-runs 0 $?
check diag-none "map(select(.kind == \"diag\")) | length == 0" <(jq -s . "$TMP/none/events.jsonl")

# An unknown --diag is refused before the run, with the list.
"$BIN" run "$TMP/net.lisp" --quiet --out "$TMP/u" --diag grad-nrom >"$TMP/out" 2>"$TMP/err"
expect diag-unknown 2 $? "E-RUN-KEY --diag: no diagnostic named 'grad-nrom'; the diagnostics are: grad-norm, grad-rms" "$TMP/err"
[ -e "$TMP/u/events.jsonl" ] && { echo "FAIL diag-unknown: the run started"; fail=$((fail + 1)); }

# Reducer plugins (diagnostics/): kurtosis and quantiles beside the core's
# min and max, per parameter; the quantiles in order and within the range.
"$BIN" run "$TMP/net.lisp" --quiet --out "$TMP/k" --diag odd >"$TMP/out" 2>"$TMP/err"
expect diag-reducer-plugins-run 0 $?
jq -s 'map(select(.kind == "diag" and .name == "odd"))' "$TMP/k/events.jsonl" >"$TMP/k.json"
check diag-reducer-plugins-keys '[.[].values[] | keys] | length == 16 and all(. == ["kurtosis", "max", "min", "quantiles"])' "$TMP/k.json"
check diag-quantiles-ordered '[.[].values[] | [.min, .quantiles.p01, .quantiles.p05, .quantiles.p25, .quantiles.p50, .quantiles.p75, .quantiles.p95, .quantiles.p99, .max] | . == sort] | length == 16 and all' "$TMP/k.json"
# A weight matrix's kurtosis is a number (-1.2 for a uniform init); the one-element bias of fc2 has none.
check diag-kurtosis '[.[].values["net.fc1.weight"].kurtosis] | all(type == "number" and . > -2 and . < 10)' "$TMP/k.json"
check diag-kurtosis-undefined '[.[].values["net.fc2.bias"].kurtosis] | all(. == null)' "$TMP/k.json"

# A reducer that is neither core nor a loaded plugin is a check error at its
# defdiagnostic, and run refuses the file before it starts.
sed 's/:reduce (:kurtosis :quantiles/:reduce (:kurtosys :quantiles/' "$TMP/net.lisp" >"$TMP/typo.lisp"
"$BIN" check "$TMP/typo.lisp" >"$TMP/out" 2>"$TMP/err"
expect diag-reducer-unknown-check 1 $? "typo.lisp:17:1: E-DIAG-REDUCER defdiagnostic odd: :reduce names 'kurtosys', which is neither a core reducer (mean rms l2 max-abs min max std frac-zero frac-nonfinite histogram) nor a loaded reducer plugin (" "$TMP/out"
grep -q "quantiles" "$TMP/out" && echo "ok   diag-reducer-unknown-lists-plugins" ||
  { echo "FAIL diag-reducer-unknown-lists-plugins"; cat "$TMP/out"; fail=$((fail + 1)); }
for verb in ir explain; do
  "$BIN" $verb "$TMP/typo.lisp" >"$TMP/out" 2>"$TMP/err"
  expect diag-reducer-unknown-$verb 1 $? "typo.lisp:17:1: E-DIAG-REDUCER defdiagnostic odd: :reduce names 'kurtosys'" "$TMP/err"
done
"$BIN" run "$TMP/typo.lisp" --quiet --out "$TMP/t" >"$TMP/out" 2>"$TMP/err"
expect diag-reducer-unknown-run 1 $? "E-DIAG-REDUCER" "$TMP/err"
[ -e "$TMP/t/events.jsonl" ] && { echo "FAIL diag-reducer-unknown-run: the run started"; fail=$((fail + 1)); }

# A reducer plugin's error stops the run at its first sampled step (exit 3).
sed 's/:reduce (:kurtosis :quantiles/:reduce (:fails :quantiles/' "$TMP/net.lisp" >"$TMP/fails.lisp"
SEXPGPU_PLUGIN_PATH="$TESTPLUGINS" "$BIN" run "$TMP/fails.lisp" --quiet --out "$TMP/f" --diag odd >"$TMP/out" 2>"$TMP/err"
expect diag-reducer-plugin-error 3 $? "E-DIAG-REDUCER diagnostic odd: reducer fails update: fails: refuses every tensor" "$TMP/err"

# An unknown name in defrun's :select is a check error at the defrun.
sed 's/:update-to-weight)))/:update-to-weight :grad-nrom)))/' "$TMP/net.lisp" >"$TMP/bad.lisp"
"$BIN" check "$TMP/bad.lisp" >"$TMP/out" 2>"$TMP/err"
expect diag-select-unknown 1 $? "bad.lisp:19:1: E-RUN-KEY :diagnostics :select names 'grad-nrom'" "$TMP/out"

[ "$fail" -eq 0 ] && echo "all diagnostics tests passed" || echo "$fail failed"
exit "$fail"
