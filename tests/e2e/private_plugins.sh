#!/usr/bin/env bash
# A lab's private plugins, as a lab builds them (docs/writing-plugins.md):
# the example reducer and the example sink compiled with `cc` alone against
# the installed header, put on SEXPGPU_PLUGIN_PATH, listed by doctor, and
# used by one run: the reducer's numbers in the run's diag events against
# the same numbers worked out here from the data file, and the sink's copy
# of the events against the run's own events.jsonl.
# Usage: private_plugins.sh SEXPGPU SOURCE_DIR
set -u
BIN=$1
SRC=$2
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
export SEXPGPU_RUNS=$TMP/runs
fail=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; [ $# -ge 2 ] && sed 's/^/    /' "$2" | head -20; fail=$((fail + 1)); }
# check NAME JQ-EXPRESSION FILE: the expression must give true.
check() {
  if [ "$(jq -r "$2" "$3" 2>/dev/null)" = "true" ]; then ok "$1"; else bad "$1: $2" "$3"; fi
}

INC=$("$BIN" --include-dir)
mkdir -p "$TMP/private"
build() {  # build SOURCE FILE: cc alone, the installed header, warnings as errors
  if cc -std=c99 -Wall -Wextra -pedantic -Werror -shared -fPIC -I"$INC" "$SRC/plugins/$1" \
    -o "$TMP/private/$2" 2>"$TMP/cc"; then ok "cc builds $1"; else bad "cc builds $1" "$TMP/cc"; fi
}
build example-reducer/example_reducer.c libsexpgpu-mean-abs.so
build example-sink/example_sink.c libsexpgpu-my-sink.so
export SEXPGPU_PLUGIN_PATH=$TMP/private

# doctor lists both from the private directory (they shadow the build
# tree's copies of the same plugins), and the reducer with its outputs.
"$BIN" doctor --json >"$TMP/doctor.json" 2>"$TMP/err" || bad "doctor exits 0" "$TMP/err"
check doctor-lists-private-reducer ".plugins | any(.name == \"mean-abs\" and .kind == \"reducer\" and .status == \"loaded\" and .path == \"$TMP/private/libsexpgpu-mean-abs.so\")" "$TMP/doctor.json"
check doctor-lists-private-sink ".plugins | any(.name == \"example-sink\" and .kind == \"sink\" and .status == \"loaded\" and .path == \"$TMP/private/libsexpgpu-my-sink.so\")" "$TMP/doctor.json"
check doctor-reducer-outputs '.reducers.plugins | any(. == {"name": "mean-abs", "outputs": ["mean", "count"]})' "$TMP/doctor.json"

# Eight examples of three features (multiples of 1/4, exact in f32), one
# batch of all eight: the probe "x" is the whole data set at every step.
cat >"$TMP/data.csv" <<'CSV'
x0,x1,x2,y
0.5,-1.25,2,1
-3,0.75,0,0
1.5,2.25,-0.5,1
-0.25,4,1,0
2.5,-2,-1.75,1
0,1,3.5,0
-1,-0.5,0.25,1
6,-3.25,1.25,0
CSV
cat >"$TMP/lab.lisp" <<LISP
(require "sexpgpu/nn")
(require "sexpgpu/optim")
(defloader train :source (csv "$TMP/data.csv" :columns ((:x :f32 (0 1 2)) (:y :f32 3)) :header t)
  :batch 8)
(defmodel net (x) (nn:linear (probe "x" x) 1 :name "out"))
(defun objective (batch ctx) (mse (net (getf batch :x)) (getf batch :y)))
(defun optimizer () (optim:sgd :lr 0.01))
(defdiagnostic input-size :over :activations :value (lambda (a) a) :reduce (:mean-abs :max-abs))
(defrun :steps 3 :diagnostics (:every 1 :select (:input-size)))
LISP
"$BIN" check "$TMP/lab.lisp" >"$TMP/out" 2>&1 && ok "check knows the private reducer" ||
  bad "check knows the private reducer" "$TMP/out"
"$BIN" run "$TMP/lab.lisp" --quiet --out "$TMP/run" --sink example-sink:copy.jsonl >"$TMP/out" 2>&1 &&
  ok "the run with both private plugins finishes" || bad "the run with both private plugins" "$TMP/out"

# The expected numbers, from the data file itself: the mean of |x| over the
# 24 feature cells, their count, and the largest |x|.
read -r mean count maxabs < <(awk -F, 'NR > 1 { for (i = 1; i <= 3; i++) { a = $i < 0 ? -$i : $i;
  s += a; n++; if (a > m) m = a } } END { printf "%.17g %d %.17g\n", s / n, n, m }' "$TMP/data.csv")
jq -s 'map(select(.kind == "diag" and .name == "input-size"))' "$TMP/run/events.jsonl" >"$TMP/diag.json"
check reducer-one-event-per-step '[.[].step] == [1, 2, 3]' "$TMP/diag.json"
check reducer-numbers-in-diag "all(.[]; .values[\"net.x\"] as \$v | \$v[\"mean-abs\"].count == $count and ((\$v[\"mean-abs\"].mean - $mean) | fabs) < 1e-12 and \$v[\"max-abs\"] == $maxabs)" "$TMP/diag.json"

# The sink wrote the run's events, line for line, the diag events among them.
diff "$TMP/run/copy.jsonl" "$TMP/run/events.jsonl" >"$TMP/diff" 2>&1 &&
  ok "the cc-built sink copied every event" || bad "the sink's copy differs from events.jsonl" "$TMP/diff"
jq -s '.' "$TMP/run/copy.jsonl" >"$TMP/copy.json"
check sink-copy-open-to-close '.[0].kind == "open" and .[-1].kind == "close" and ([.[] | select(.kind == "diag")] | length) == 3' "$TMP/copy.json"

echo "private plugins: $fail failures"
exit $((fail > 0))
