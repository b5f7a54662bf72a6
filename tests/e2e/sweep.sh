#!/usr/bin/env bash
# sexpgpu sweep end to end on the CPU: every point as a run, sweep.json,
# the table, a sweep stopped by SIGTERM mid-point and started again ending
# with the bytes of one never stopped, skipping finished points, a failing
# point, --from, --jobs, --json, the refusals, and docs/sweep.md's examples.
# Usage: sweep.sh SEXPGPU SOURCE_DIR
set -u
BIN=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
SRC=$2
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
export SEXPGPU_RUNS=$TMP/runs
fail=0

# expect NAME WANT_RC GOT_RC [REGEX FILE]...
expect() {
  local name=$1 want=$2 got=$3
  shift 3
  if [ "$got" -ne "$want" ]; then
    echo "FAIL $name: exit $got, expected $want"; cat "$TMP/err" 2>/dev/null | head -20
    fail=$((fail + 1)); return
  fi
  while [ $# -ge 2 ]; do
    if ! grep -q -- "$1" "$2"; then
      echo "FAIL $name: no '$1' in $2:"; cat "$2"; fail=$((fail + 1)); return
    fi
    shift 2
  done
  echo "ok   $name"
}
# check NAME JQ-EXPRESSION FILE: the expression must give true.
check() {
  if [ "$(jq -r "$2" "$3" 2>/dev/null)" = "true" ]; then echo "ok   $1"; else
    echo "FAIL $1: $2 is not true in $3"; jq -c . "$3" 2>/dev/null | head -40; fail=$((fail + 1)); fi
}
# same NAME DIR_A DIR_B: every point's last checkpoint has the same bytes.
same() {
  local name=$1 a=$2 b=$3 n=0
  for p in "$a"/*/; do
    p=$(basename "$p")
    [ -e "$a/$p/events.jsonl" ] || continue
    for f in model.safetensors optimizer.safetensors; do
      n=$((n + 1))
      if ! cmp -s "$a/$p/checkpoints/latest/$f" "$b/$p/checkpoints/latest/$f"; then
        echo "FAIL $name: $p/checkpoints/latest/$f differs"; fail=$((fail + 1)); return
      fi
    done
  done
  [ "$n" -eq 6 ] && echo "ok   $name ($n files)" || { echo "FAIL $name: $n files compared"; fail=$((fail + 1)); }
}

# Three points of a small shuffled regression, long enough to be stopped
# in the middle of one, with a checkpoint every 100 steps.
cat >"$TMP/tiny.lisp" <<'LISP'
(require "sexpgpu/nn")
(require "sexpgpu/optim")
(defknob lr 0.01 :type float :min 0.0)
(defknob steps 1500 :type integer :min 1)
(defsweep lrs (:lr (0.003 0.01 0.03)))
(defsweep same (:lr (0.01 0.01)))
(defsweep blowup (:lr (1e30 0.01)))
(defloader train :source (synthetic :regression :features 8 :examples 512 :seed 1)
  :batch 16 :shuffle t)
(defmodel net (x) (nn:linear (tanh (nn:linear x 32 :name "h")) 1 :name "out"))
(defun objective (batch ctx) (mse (net (getf batch :x)) (getf batch :y)))
(defun optimizer () (optim:sgd :lr lr :momentum 0.9))
(defrun :steps steps :seed 5 :log-every 50 :target ("train/loss" :<= 0.01)
  :checkpoint (:every 100 :keep 1))
LISP
F=$TMP/tiny.lisp

# An uninterrupted sweep: exit 0, every point finished, the table.
start=$(date +%s%N)
"$BIN" sweep "$F" lrs --out "$TMP/a" >"$TMP/out" 2>"$TMP/err"
expect sweep-runs 0 $? "^point  lr" "$TMP/out" "tiny.lr=0.003" "$TMP/out" "point 2/3 lr=0.03: finished" "$TMP/err"
echo "     (three points in $((($(date +%s%N) - start) / 1000000)) ms)"
check sweep-json '.state == "finished" and .exit_code == 0 and (.points | length == 3) and all(.points[]; .state == "finished" and .action == "run" and .exit_code == 0 and (.final["train/loss"] | type == "number"))' "$TMP/a/sweep.json"
check sweep-slugs '[.points[].slug] == ["tiny.lr=0.003", "tiny", "tiny.lr=0.03"] and all(.points[]; .run_dir == "'"$TMP/a/"'" + .slug)' "$TMP/a/sweep.json"
check sweep-point-runs '.state == "finished" and .summary.steps == 1500' "$TMP/a/tiny.lr=0.03/status.json"
[ "$(grep -c '^[0-2]  ' "$TMP/out")" -eq 3 ] && echo "ok   sweep-table-rows" || { echo "FAIL sweep-table-rows"; cat "$TMP/out"; fail=$((fail + 1)); }

# The default sweep directory: $SEXPGPU_RUNS/STEM.SWEEP.
"$BIN" sweep "$F" lrs --steps 30 --quiet >"$TMP/out" 2>"$TMP/err"
expect sweep-default-dir 0 $?
check sweep-default-dir-json '.dir == "'"$SEXPGPU_RUNS"'/tiny.lrs" and .points[0].slug == "tiny.lr=0.003.steps=30"' "$SEXPGPU_RUNS/tiny.lrs/sweep.json"
[ -s "$TMP/err" ] && { echo "FAIL sweep-quiet: standard error under --quiet:"; cat "$TMP/err"; fail=$((fail + 1)); }

# SIGTERM in the middle of point 1: the point checkpoints and stops, the
# sweep records it and exits 75; the same command finishes the sweep with
# the bytes of the uninterrupted one.
"$BIN" sweep "$F" lrs --out "$TMP/b" >"$TMP/out" 2>"$TMP/err" &
pid=$!
for _ in $(seq 2000); do [ -e "$TMP/b/tiny/checkpoints/latest" ] && break; sleep 0.005; done
kill -TERM $pid
wait $pid
expect sigterm-exit 75 $? "stopped; the same command continues it" "$TMP/err"
check sigterm-sweep-json '.state == "stopped" and .exit_code == 75 and .points[0].state == "finished" and .points[1].state == "preempted" and .points[1].exit_code == 75 and .points[2].state == "pending"' "$TMP/b/sweep.json"
check sigterm-point-status '.state == "preempted" and .summary.steps < 1500' "$TMP/b/tiny/status.json"
"$BIN" sweep "$F" lrs --out "$TMP/b" >"$TMP/out" 2>"$TMP/err"
expect sigterm-continue 0 $? "point 0/3 lr=0.003: finished already, skipped" "$TMP/err" "point 1/3 lr=0.01: resuming" "$TMP/err"
check sigterm-continue-json '.state == "finished" and ([.points[].action] == ["skip", "resume", "run"]) and all(.points[]; .state == "finished")' "$TMP/b/sweep.json"
check sigterm-resumed '(map(select(.kind == "open")) | length == 2) and (.[-1].kind == "close")' <(jq -s . "$TMP/b/tiny/events.jsonl")
same sigterm-bit-exact "$TMP/a" "$TMP/b"

# A third time: every point finished, all skipped, nothing appended.
before=$(cat "$TMP"/b/*/events.jsonl | wc -l)
"$BIN" sweep "$F" lrs --out "$TMP/b" >"$TMP/out" 2>"$TMP/err"
expect sweep-all-skipped 0 $? "point 2/3 lr=0.03: finished already, skipped" "$TMP/err" "^sweep lrs of .*: finished, 3/3 points finished" "$TMP/out"
check sweep-all-skipped-json 'all(.points[]; .action == "skip" and .state == "finished" and (.final["train/loss"] | type == "number"))' "$TMP/b/sweep.json"
[ "$(cat "$TMP"/b/*/events.jsonl | wc -l)" -eq "$before" ] && echo "ok   sweep-all-skipped-untouched" ||
  { echo "FAIL sweep-all-skipped-untouched: events were appended"; fail=$((fail + 1)); }

# Two signals: the point stops at once (130), or, when the second comes
# after it had checkpointed and stopped, resumably (75); either way no
# later point starts and sweep.json says so.
"$BIN" sweep "$F" lrs --out "$TMP/c" >"$TMP/out" 2>"$TMP/err" &
pid=$!
for _ in $(seq 2000); do [ -e "$TMP/c/tiny.lr=0.003/checkpoints/latest" ] && break; sleep 0.005; done
kill -INT $pid; sleep 0.01; kill -INT $pid 2>/dev/null
wait $pid
rc=$?
[ "$rc" -eq 130 ] || [ "$rc" -eq 75 ] && echo "ok   sigint-twice (exit $rc)" || { echo "FAIL sigint-twice: exit $rc"; fail=$((fail + 1)); }
check sigint-twice-json '.state == "stopped" and .exit_code == '"$rc"' and .points[0].exit_code == '"$rc"' and .points[1].state == "pending" and .points[2].state == "pending"' "$TMP/c/sweep.json"

# A failing point (non-finite at lr=1e30) is recorded and the sweep goes
# on: the next point finishes, the sweep exits 4. Run again, the failed
# point is retried afresh (its old run moved aside) and the finished one
# skipped.
"$BIN" sweep "$F" blowup --out "$TMP/d" --steps 60 >"$TMP/out" 2>"$TMP/err"
expect failing-point 4 $? "point 0/2 lr=1.0e30: nonfinite" "$TMP/err"
check failing-point-json '.state == "failed" and .exit_code == 4 and .points[0].state == "nonfinite" and .points[0].exit_code == 4 and (.points[0].error.code | type == "string") and .points[1].state == "finished"' "$TMP/d/sweep.json"
"$BIN" sweep "$F" blowup --out "$TMP/d" --steps 60 >"$TMP/out" 2>"$TMP/err"
expect failing-point-retried 4 $? "nonfinite before, started afresh" "$TMP/err"
check failing-point-retried-json '[.points[].action] == ["retry", "skip"]' "$TMP/d/sweep.json"
ls -d "$TMP/d/"*.prev-1 >/dev/null 2>&1 && echo "ok   failing-point-moved-aside" || { echo "FAIL failing-point-moved-aside"; ls "$TMP/d"; fail=$((fail + 1)); }

# --from 1: points 1 and 2 only.
"$BIN" sweep "$F" lrs --out "$TMP/e" --from 1 --steps 40 >"$TMP/out" 2>"$TMP/err"
expect from 0 $?
check from-json '.state == "partial" and .from == 1 and .points[0].state == "pending" and .points[0].action == null and .points[1].state == "finished" and .points[2].state == "finished"' "$TMP/e/sweep.json"
[ -e "$TMP/e/tiny.lr=0.003" ] && { echo "FAIL from: point 0 was run"; fail=$((fail + 1)); }

# --jobs 2 on the CPU: the same bytes as one point at a time.
cores=$(nproc)
if [ "$cores" -ge 2 ]; then
  "$BIN" sweep "$F" lrs --out "$TMP/j" --jobs 2 --device cpu >"$TMP/out" 2>"$TMP/err"
  expect jobs-2 0 $?
  check jobs-2-json '.jobs == 2 and all(.points[]; .state == "finished")' "$TMP/j/sweep.json"
  check jobs-2-threads '.command | index("--threads") != null and .[index("--threads") + 1] == "'$((cores / 2))'"' <(jq -s '[.[] | select(.kind == "open")][0]' "$TMP/j/tiny/events.jsonl")
  same jobs-2-bit-exact "$TMP/a" "$TMP/j"
else
  echo "skip jobs-2: $cores core"
fi

# --json: every line an event of a point (with "point"), then the sweep.
"$BIN" sweep "$F" lrs --out "$TMP/k" --steps 30 --json >"$TMP/out" 2>"$TMP/err"
expect json 0 $?
check json-lines '(.[:-1] | all(has("point") and has("kind")) and (map(select(.kind == "close")) | length == 3)) and .[-1].kind == "sweep" and .[-1].state == "finished" and (.[-1].points | length == 3)' <(jq -s . "$TMP/out")

# Refusals, before anything is written.
"$BIN" sweep "$F" nope --out "$TMP/r" >"$TMP/out" 2>"$TMP/err"
expect unknown-sweep 1 $? "E-SWEEP-UNKNOWN no sweep named 'nope'" "$TMP/err"
"$BIN" sweep "$F" lrs --out "$TMP/r" --from 3 >"$TMP/out" 2>"$TMP/err"
expect from-past-end 2 $? "--from 3: sweep 'lrs' has points 0 to 2" "$TMP/err"
"$BIN" sweep "$F" lrs --out "$TMP/r" --from -1 >"$TMP/out" 2>"$TMP/err"
expect from-negative 2 $? "--from" "$TMP/err"
"$BIN" sweep "$F" lrs --out "$TMP/r" --jobs 0 >"$TMP/out" 2>"$TMP/err"
expect jobs-zero 2 $? "--jobs: 0 is out of range" "$TMP/err"
"$BIN" sweep "$F" lrs --out "$TMP/r" --jobs $((cores + 1)) --device cpu >"$TMP/out" 2>"$TMP/err"
expect jobs-too-many 2 $? "--jobs $((cores + 1)) needs $((cores + 1)) cores" "$TMP/err"
"$BIN" sweep "$F" lrs --out "$TMP/r" --jobs 2 --device cuda:0 >"$TMP/out" 2>"$TMP/err"
expect jobs-one-device 2 $? "takes --device cpu, cuda or auto" "$TMP/err"
"$BIN" sweep "$F" lrs --out "$TMP/r" --point lrs:0 >"$TMP/out" 2>"$TMP/err"
expect point-refused 2 $? "--point is not taken" "$TMP/err"
"$BIN" sweep "$F" same --out "$TMP/r" >"$TMP/out" 2>"$TMP/err"
expect same-slug 1 $? "points 0 and 1 of sweep 'same' are the same selection" "$TMP/err"
"$BIN" sweep "$F" lrs --out "$TMP/r" --set steps=0 >"$TMP/out" 2>"$TMP/err"
expect bad-knob 1 $? "E-KNOB-TYPE" "$TMP/err"
"$BIN" sweep "$F" nope --json --out "$TMP/r" >"$TMP/out" 2>"$TMP/err"
expect unknown-sweep-json 1 $?
check unknown-sweep-json-line '.kind == "sweep" and .state == "failed" and .exit_code == 1 and .error.code == "E-SWEEP-UNKNOWN" and (.error.diagnostics | length == 1)' "$TMP/out"
[ -e "$TMP/r" ] && { echo "FAIL refusals: $TMP/r was written"; fail=$((fail + 1)); }

# docs/sweep.md: its run file, its ```sh commands run as written (in a
# directory of their own), and its sweep.json sample has the fields of a
# real one, no more, no fewer.
PAGE=$SRC/docs/sweep.md
mkdir -p "$TMP/docs"
awk '/^```lisp/ { inside = 1; next } inside && /^```/ { exit } inside { print }' "$PAGE" >"$TMP/docs/scan.lisp"
awk '/^```sh/ { inside = 1; next } inside && /^```/ { exit } inside { print }' "$PAGE" >"$TMP/docs/commands"
(
  cd "$TMP/docs" && unset SEXPGPU_RUNS && n=0 &&
    while read -r sexpgpu args; do
      [ "$sexpgpu" = sexpgpu ] || { echo "not a sexpgpu command: $sexpgpu $args"; exit 9; }
      # shellcheck disable=SC2086
      "$BIN" $args >"out.$n" 2>"err.$n" || { echo "'sexpgpu $args' exited $?"; cat "err.$n"; exit 9; }
      n=$((n + 1))
    done <commands
) >"$TMP/docs.log" 2>&1
rc=$?
cp "$TMP/docs.log" "$TMP/err"
expect docs-commands 0 $rc "^sweep lr-scan of scan.lisp: finished, 3/3" "$TMP/docs/out.1" "finished already, skipped" "$TMP/docs/err.1"
# The page's table: the same header, and per row the same point, value,
# target, state and run directory (the metrics' digits depend on the CPU).
table='/^point  lr/ || /^[0-9]  / { print $1, $2, ($(NF-2) ~ /^reached/ ? "reached" : $(NF-2)), $(NF-1), $NF }'
awk '/^```text/ { inside = 1; next } inside && /^```/ { inside = 0 } inside && /^\$ sexpgpu sweep/ { found = 1 } found && inside' "$PAGE" | awk "$table" >"$TMP/docs/table.page"
awk "$table" "$TMP/docs/out.0" >"$TMP/docs/table.real"
if [ -s "$TMP/docs/table.page" ] && cmp -s "$TMP/docs/table.page" "$TMP/docs/table.real"; then echo "ok   docs-table"; else
  echo "FAIL docs-table: the page's table differs from a real one:"; diff "$TMP/docs/table.page" "$TMP/docs/table.real"; fail=$((fail + 1)); fi
awk '/^```json/ { inside = 1; next } inside && /^```/ { exit } inside { print }' "$PAGE" >"$TMP/docs/sample.json"
keys='[keys_unsorted, (.points[0] | keys_unsorted)]'
if [ "$(jq -c "$keys" "$TMP/docs/sample.json")" = "$(jq -c "$keys" "$TMP/docs/runs/scan.lr-scan/sweep.json")" ]; then
  echo "ok   docs-sweep-json-fields"
else
  echo "FAIL docs-sweep-json-fields: the page has $(jq -c "$keys" "$TMP/docs/sample.json"), a real one $(jq -c "$keys" "$TMP/docs/runs/scan.lr-scan/sweep.json")"
  fail=$((fail + 1))
fi
check docs-sweep-json-values '[.points[].slug] == ["scan.lr=0.003", "scan", "scan.lr=0.03"] and .dir == "runs/scan.lr-scan"' "$TMP/docs/runs/scan.lr-scan/sweep.json"

echo "$fail failed"
[ "$fail" -eq 0 ]
