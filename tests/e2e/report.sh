#!/usr/bin/env bash
# sexpgpu report end to end: a real short run (examples/smallest.lisp), a
# hostile annotation, a sweep, and their reports: the default path, --json,
# the refusals, a run being written (a last line cut short), the charting
# library missing; then the pages in headless Chromium (report.py): no
# console errors, every chart holding exactly its series' values from
# events.jsonl, a screenshot that is not blank, a line per sweep point.
# Usage: report.sh SEXPGPU SOURCE_DIR
# SEXPGPU_REPORT_SCREENSHOT=FILE keeps the sweep report's screenshot (docs/report.png).
set -u
BIN=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
SRC=$(cd "$2" && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
export SEXPGPU_RUNS=$TMP/runs
fail=0
VENV_PYTHON=${SEXPGPU_TEST_VENV:-/opt/sexpgpu-test/venv}/bin/python

# expect NAME WANT_RC GOT_RC [REGEX FILE]...
expect() {
  local name=$1 want=$2 got=$3
  shift 3
  if [ "$got" -ne "$want" ]; then
    echo "FAIL $name: exit $got, expected $want"; head -20 "$TMP/err" 2>/dev/null
    fail=$((fail + 1)); return
  fi
  while [ $# -ge 2 ]; do
    if ! grep -q -- "$1" "$2"; then
      echo "FAIL $name: no '$1' in $2:"; head -20 "$2"; fail=$((fail + 1)); return
    fi
    shift 2
  done
  echo "ok   $name"
}
# check NAME JQ-EXPRESSION FILE: the expression must give true.
check() {
  if [ "$(jq -r "$2" "$3" 2>/dev/null)" = "true" ]; then echo "ok   $1"; else
    echo "FAIL $1: $2 is not true in $3"; jq -c . "$3" 2>/dev/null | head -20; fail=$((fail + 1)); fi
}

# ---- the runs -----------------------------------------------------------------------------

HOSTILE='</script><script>alert(1)</script>'
# 20 steps (--resume latest with no checkpoint yet: a warning), then resumed to 40.
"$BIN" run "$SRC/examples/smallest.lisp" --steps 20 --out "$TMP/runs/small" --resume latest --quiet >/dev/null 2>"$TMP/err"
expect train-small 0 $?
"$BIN" run "$SRC/examples/smallest.lisp" --steps 40 --out "$TMP/runs/small" --resume latest --allow-changed \
  --quiet >/dev/null 2>"$TMP/err"
expect train-small-resumed 0 $?
"$BIN" annotate "$TMP/runs/small" "$HOSTILE" --data '{"why": "<img src=x onerror=alert(2)>"}' 2>"$TMP/err"
expect annotate-hostile 0 $?

# A run whose file name (and so its slug, its label in the page) is markup.
cp "$SRC/examples/smallest.lisp" "$TMP/<img src=x onerror=alert(3)>.lisp"
"$BIN" run "$TMP/<img src=x onerror=alert(3)>.lisp" --steps 3 --out "$TMP/runs/hostile" --quiet >/dev/null 2>"$TMP/err"
expect train-hostile-name 0 $?

# A sweep of three learning rates with an evaluation pass, a schedule, a
# target and checkpoints: every kind of series and timeline event.
cat >"$TMP/scan.lisp" <<'LISP'
(require "sexpgpu/nn")
(require "sexpgpu/optim")
(defknob lr 1e-2 :type float :min 0.0)
(defsweep lr-scan (:lr (3e-3 1e-2 3e-2)))
(defloader train :source (synthetic :blobs :classes 3 :features 4 :examples 600 :seed 1)
  :split (0.0 0.8) :batch 32 :shuffle t)
(defloader held-out :source (synthetic :blobs :classes 3 :features 4 :examples 600 :seed 1)
  :split (0.8 1.0) :batch 40)
(defmodel classifier (x)
  (nn:linear (relu (nn:linear x 16 :name "hidden")) 3 :name "out"))
(defun objective (batch ctx)
  (let ((logits (classifier (getf batch :x))))
    (metric :acc (mean (= (argmax logits :axis -1) (getf batch :y))))
    (cross-entropy logits (getf batch :y))))
(defun evaluate (batch ctx)
  (let ((logits (classifier (getf batch :x))))
    (metric :loss (cross-entropy logits (getf batch :y)))
    (metric :acc (mean (= (argmax logits :axis -1) (getf batch :y))))))
(defeval held-out :loader held-out :every 10)
(defun optimizer () (optim:adamw :lr (optim:warmup-cosine lr :warmup 5)))
(defrun :steps 40 :log-every 5 :target ("held-out/acc" :>= 0.9)
  :checkpoint (:every 20 :keep 1))
LISP
# The sweep runs in $TMP with relative paths, as a user types it: its page
# is docs/report.png's picture.
(cd "$TMP" && PATH=$(dirname "$BIN"):$PATH sexpgpu sweep scan.lisp lr-scan --out sweep --quiet) >/dev/null 2>"$TMP/err"
expect sweep 0 $?

# ---- report, without a browser --------------------------------------------------------------

"$BIN" report "$TMP/runs/small" --json >"$TMP/small.json" 2>"$TMP/err"
expect report-run 0 $?
check report-default-path ".path == \"$TMP/runs/small/report.html\" and (.runs | length) == 1" "$TMP/small.json"
check report-series '[.series[].name] | index("train/loss") == 0 and (index("grad-norm") != null) and (index("step-ms") != null) and (index("memory-bytes") != null)' "$TMP/small.json"
check report-series-points '.series[] | select(.name == "train/loss") | .points == 5 and .runs == 1' "$TMP/small.json"
PAGE=$TMP/runs/small/report.html
if grep -qF "$HOSTILE" "$PAGE" || grep -qF '<img src=x' "$PAGE"; then
  echo "FAIL report-escaped: the annotation's text is in the page as markup"; fail=$((fail + 1))
else echo "ok   report-escaped"; fi
scripts=$(grep -o '<script' "$PAGE" | wc -l)
[ "$scripts" -eq 3 ] && echo "ok   report-three-scripts" ||
  { echo "FAIL report-three-scripts: $scripts <script> tags"; fail=$((fail + 1)); }
if grep -qE 'src="(https?:)?//|href="https?:' "$PAGE"; then
  echo "FAIL report-offline: the page names something on the network"; fail=$((fail + 1))
else echo "ok   report-offline"; fi
grep -q "Content-Security-Policy\" content=\"default-src 'none'" "$PAGE" && echo "ok   report-csp" ||
  { echo "FAIL report-csp"; fail=$((fail + 1)); }

(cd "$TMP" && "$BIN" report sweep -o sweep.html --json) >"$TMP/sweep.json" 2>"$TMP/err"
expect report-sweep 0 $?
check report-sweep-points '(.runs | length) == 3 and .sweeps[0].points == 3 and .sweeps[0].runs == 3 and .path == "sweep.html"' "$TMP/sweep.json"
check report-sweep-eval '[.series[] | select(.source == "eval") | .name] | sort == ["held-out/acc", "held-out/loss"]' "$TMP/sweep.json"
check report-sweep-lr '[.series[].name] | index("lr/default") != null' "$TMP/sweep.json"

POINT=$TMP/$(jq -r '.runs[1].dir' "$TMP/sweep.json")
"$BIN" report "$TMP/runs/small" "$POINT" "$TMP/runs/hostile" -o "$TMP/overlay.html" --json >"$TMP/overlay.json" 2>"$TMP/err"
expect report-overlay 0 $?
check report-overlay-runs '(.runs | length) == 3 and (.series[] | select(.name == "train/loss") | .runs == 3)' "$TMP/overlay.json"
grep -qF '<img src=x' "$TMP/overlay.html" && { echo "FAIL report-overlay-escaped: a run's name is markup"; fail=$((fail + 1)); }

# A run still going, reported as it trains (then stopped with SIGTERM).
"$BIN" run "$SRC/examples/smallest.lisp" --steps 100000000 --out "$TMP/running" --quiet >/dev/null 2>&1 &
pid=$!
for _ in $(seq 100); do
  [ "$(cat "$TMP/running/events.jsonl" 2>/dev/null | grep -c '"kind":"step"')" -ge 2 ] && break
  sleep 0.1
done
"$BIN" report "$TMP/running" --json >"$TMP/running.json" 2>"$TMP/err"
expect report-running 0 $?
kill -TERM "$pid"; wait "$pid"
check report-running-state '.runs[0].state == "running" and (.series[] | select(.name == "train/loss") | .points >= 2)' "$TMP/running.json"

# A run being written: a last line cut short is skipped, and the run says running.
mkdir -p "$TMP/live"
head -n 4 "$TMP/runs/small/events.jsonl" >"$TMP/live/events.jsonl"
printf '{"kind":"step","time":"2026-' >>"$TMP/live/events.jsonl"
"$BIN" report "$TMP/live" --json >"$TMP/live.json" 2>"$TMP/err"
expect report-partial-line 0 $?
check report-partial-running '.runs[0].state == "running" and .runs[0].events == 4' "$TMP/live.json"

"$BIN" report "$TMP/nowhere" >"$TMP/out" 2>"$TMP/err"
expect report-missing 2 $? "nowhere: no such run directory" "$TMP/err"
mkdir -p "$TMP/empty"
"$BIN" report "$TMP/empty" >"$TMP/out" 2>"$TMP/err"
expect report-no-run 2 $? "holds no run (no events.jsonl) and no sweep" "$TMP/err"
mkdir -p "$TMP/broken" && printf '{"kind":"open"}\nnot json\n{"kind":"step","step":1}\n' >"$TMP/broken/events.jsonl"
"$BIN" report "$TMP/broken" >"$TMP/out" 2>"$TMP/err"
expect report-broken-events 3 $? "events.jsonl" "$TMP/err"
SEXPGPU_DYGRAPHS=$TMP/no/dygraph.min.js "$BIN" report "$TMP/runs/small" -o "$TMP/x.html" >"$TMP/out" 2>"$TMP/err"
expect report-no-library 3 $? "libjs-dygraphs" "$TMP/err" "no/dygraph.min.js" "$TMP/err"
[ -e "$TMP/x.html" ] && { echo "FAIL report-no-library: a page was written"; fail=$((fail + 1)); }
"$BIN" report "$TMP/runs/small" -o "$TMP/no/dir/r.html" >"$TMP/out" 2>"$TMP/err"
expect report-unwritable 3 $? "cannot write" "$TMP/err"
"$BIN" report >"$TMP/out" 2>"$TMP/err"
expect report-no-args 2 $?
"$BIN" report "$TMP/runs/small" -o "$TMP/quiet.html" --quiet >"$TMP/out" 2>"$TMP/err"
expect report-quiet 0 $?
[ -s "$TMP/err" ] || [ -s "$TMP/out" ] && { echo "FAIL report-quiet: output"; fail=$((fail + 1)); }

# ---- the pages in a browser -----------------------------------------------------------------

skip=""
command -v chromium >/dev/null || skip="no chromium (apt-get install chromium chromium-driver)"
[ -z "$skip" ] && { command -v chromedriver >/dev/null || skip="no chromedriver (apt-get install chromium-driver)"; }
[ -z "$skip" ] && { "$VENV_PYTHON" -c 'import selenium, PIL' 2>/dev/null ||
  skip="no selenium and pillow in $VENV_PYTHON (scripts/install-deps.sh --tests)"; }
if [ -n "$skip" ]; then
  [ "$fail" -eq 0 ] || { echo "$fail failed"; exit 1; }
  echo "SKIP: the browser half of the report test: $skip"
  exit 77
fi
"$VENV_PYTHON" "$SRC/tests/e2e/report.py" "$TMP" "$HOSTILE" || fail=$((fail + 1))

[ "$fail" -eq 0 ] && echo "all report tests passed" || { echo "$fail failed"; exit 1; }
