#!/usr/bin/env bash
# sexpgpu run end to end on the CPU: training, the run directory, exit
# codes, signals, the finite guard, targets, and a resume after SIGKILL that
# ends with the same bytes as a run never stopped.
# Usage: train.sh SEXPGPU SOURCE_DIR
set -u
BIN=$1
SRC=$2
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
export SEXPGPU_RUNS=$TMP/runs
fail=0

# expect NAME WANT_RC GOT_RC [REGEX FILE]
expect() {
  local name=$1 want=$2 got=$3
  if [ "$got" -ne "$want" ]; then
    echo "FAIL $name: exit $got, expected $want"; fail=$((fail + 1)); return
  fi
  if [ $# -ge 5 ] && ! grep -q -- "$4" "$5"; then
    echo "FAIL $name: no '$4' in $5:"; cat "$5"; fail=$((fail + 1)); return
  fi
  echo "ok   $name"
}
# check NAME JQ-EXPRESSION FILE: the expression must give true.
check() {
  if [ "$(jq -r "$2" "$3" 2>/dev/null)" = "true" ]; then echo "ok   $1"; else
    echo "FAIL $1: $2 is not true in $3"; jq . "$3" 2>/dev/null | head -40; fail=$((fail + 1)); fi
}

# The smallest file trains below 0.01 (the spec's promise).
"$BIN" run "$SRC/examples/smallest.lisp" --quiet >"$TMP/out" 2>"$TMP/err"
expect smallest-runs 0 $? "finished" "$TMP/out"
RUN=$SEXPGPU_RUNS/smallest
check smallest-loss '.summary.final["train/loss"] < 0.01 and .state == "finished"' "$RUN/status.json"
check smallest-events 'map(.kind) | (.[0] == "open" and .[-1] == "close" and (index("checkpoint") != null))' <(jq -s . "$RUN/events.jsonl")
for f in run.lisp selection.json ir.json events.jsonl status.json checkpoints/latest/model.safetensors; do
  [ -e "$RUN/$f" ] || { echo "FAIL smallest-files: no $f"; fail=$((fail + 1)); }
done
"$BIN" checkpoint verify "$RUN/checkpoints/latest" >"$TMP/out" 2>&1
expect smallest-checkpoint-verifies 0 $?

# A second run into the same directory is refused; --fresh moves it aside.
"$BIN" run "$SRC/examples/smallest.lisp" --quiet >"$TMP/out" 2>"$TMP/err"
expect run-exists 2 $? "E-RUN-EXISTS" "$TMP/err"
"$BIN" run "$SRC/examples/smallest.lisp" --quiet --fresh >"$TMP/out" 2>"$TMP/err"
expect run-fresh 0 $?
[ -d "$SEXPGPU_RUNS/smallest.prev-1" ] || { echo "FAIL run-fresh: no smallest.prev-1"; fail=$((fail + 1)); }

# --json: the events on standard output, one per line, ending with close.
"$BIN" run "$SRC/examples/smallest.lisp" --quiet --json --steps 3 --out "$TMP/json" >"$TMP/out" 2>"$TMP/err"
expect run-json 0 $?
check run-json-close '.[-1].kind == "close" and .[-1].state == "finished"' <(jq -s . "$TMP/out")

# --sink: the jsonl plugin's copy equals events.jsonl; the csv plugin writes
# steps.csv; a sink that is not there stops the run before it starts.
"$BIN" run "$SRC/examples/smallest.lisp" --quiet --steps 30 --out "$TMP/sink" \
  --sink "jsonl:$TMP/copy.jsonl" --sink csv >"$TMP/out" 2>"$TMP/err"
expect sink-runs 0 $?
cmp -s "$TMP/sink/events.jsonl" "$TMP/copy.jsonl" && echo "ok   sink-jsonl-copy" ||
  { echo "FAIL sink-jsonl-copy: the copy differs"; fail=$((fail + 1)); }
expect sink-csv 0 0 "^step,time," "$TMP/sink/steps.csv"
"$BIN" run "$SRC/examples/smallest.lisp" --quiet --steps 3 --out "$TMP/nosink" --sink no-such-sink >"$TMP/out" 2>"$TMP/err"
expect sink-missing 3 $? "E-IO" "$TMP/err"

# The thread count changes no bit: products are split by blocks of the
# result, every other kernel by its outputs (docs/devices.md). Products of
# 64x256x512 are big enough to be split.
cat >"$TMP/wide.lisp" <<'LISP'
(require "sexpgpu/nn")
(require "sexpgpu/optim")
(defloader train :source (synthetic :regression :features 256 :examples 1024 :seed 1) :batch 64)
(defmodel net (x) (nn:linear (gelu (nn:linear x 512 :name "h")) 1 :name "out"))
(defun objective (batch ctx) (mse (net (getf batch :x)) (getf batch :y)))
(defun optimizer () (optim:adamw :lr 0.001))
(defrun :steps 20 :log-every 5)
LISP
"$BIN" run "$TMP/wide.lisp" --quiet --threads 1 --out "$TMP/t1" >"$TMP/out" 2>"$TMP/err"
expect threads-one 0 $?
"$BIN" run "$TMP/wide.lisp" --quiet --threads 2 --out "$TMP/t2" >"$TMP/out" 2>"$TMP/err"
expect threads-two 0 $?
cmp -s "$TMP/t1/checkpoints/latest/model.safetensors" "$TMP/t2/checkpoints/latest/model.safetensors" &&
  echo "ok   threads-same-bits" ||
  { echo "FAIL threads-same-bits: the parameters after 20 steps differ between 1 and 2 threads"; fail=$((fail + 1)); }

# Microbatches average gradients: two microbatches of 16 train like one
# batch of 32 (same examples, no shuffle), up to float rounding.
cat >"$TMP/micro.lisp" <<'LISP'
(require "sexpgpu/nn")
(require "sexpgpu/optim")
(defknob batch 32 :type integer)
(defknob micro 1 :type integer)
(defloader train :source (synthetic :regression :features 8 :examples 1024 :seed 1) :batch batch)
(defmodel net (x) (nn:linear (tanh (nn:linear x 16 :name "h")) 1 :name "out"))
(defun objective (batch ctx) (mse (net (getf batch :x)) (getf batch :y)))
(defun optimizer () (optim:sgd :lr 0.05 :momentum 0.9))
(defrun :steps 20 :microbatches micro :log-every 1 :clip-norm 5.0)
LISP
"$BIN" run "$TMP/micro.lisp" --quiet --out "$TMP/m1" >"$TMP/out" 2>"$TMP/err"
expect micro-one 0 $?
"$BIN" run "$TMP/micro.lisp" --quiet --out "$TMP/m2" --set batch=16 --set micro=2 >"$TMP/out" 2>"$TMP/err"
expect micro-two 0 $?
losses() { jq -r 'select(.kind == "step") | .metrics["train/loss"]' "$1"; }
if paste <(losses "$TMP/m1/events.jsonl") <(losses "$TMP/m2/events.jsonl") |
   awk 'function abs(x) { return x < 0 ? -x : x }
        { n++; if (abs($1 - $2) > 1e-5 * abs($1) + 1e-7) bad++ }
        END { exit !(n == 20 && bad == 0) }'; then
  echo "ok   micro-same-losses"
else
  echo "FAIL micro-same-losses: losses differ beyond 1e-5 relative"; fail=$((fail + 1))
fi

# Resume after SIGKILL at a random moment: the same bytes as a run never stopped.
FILE=$SRC/tests/e2e/runs/resume.lisp
"$BIN" run "$FILE" --quiet --out "$TMP/a" >"$TMP/out" 2>"$TMP/err"
expect resume-reference 0 $?
"$BIN" run "$FILE" --quiet --out "$TMP/b" >/dev/null 2>&1 &
pid=$!
# Kill at a random moment after the first checkpoint, so the resume has one.
for _ in $(seq 1000); do [ -e "$TMP/b/checkpoints/latest" ] && break; sleep 0.01; done
sleep "0.0$(( RANDOM % 10 ))$(( RANDOM % 10 ))"
kill -9 $pid 2>/dev/null
wait $pid 2>/dev/null
for i in 1 2 3; do
  "$BIN" run "$FILE" --quiet --out "$TMP/b" --resume latest >"$TMP/out" 2>"$TMP/err" && break
done
expect resume-after-kill 0 $?
check resume-resumed '(map(select(.kind == "open")) | length >= 2 and (.[-1].resumed_from.step > 0)) and (map(select(.kind == "close")) | length == 1)' <(jq -s . "$TMP/b/events.jsonl")
for f in model.safetensors optimizer.safetensors; do
  if cmp -s "$TMP/a/checkpoints/latest/$f" "$TMP/b/checkpoints/latest/$f"; then echo "ok   resume-bit-exact $f"; else
    echo "FAIL resume-bit-exact: $f differs after a kill and resume"; fail=$((fail + 1)); fi
done

# SIGTERM: a checkpoint, state preempted, exit 75, and the command that resumes.
"$BIN" run "$FILE" --quiet --out "$TMP/c" >"$TMP/out" 2>"$TMP/err" &
pid=$!
for _ in $(seq 1000); do [ -e "$TMP/c/checkpoints/latest" ] && break; sleep 0.01; done
kill -TERM $pid
wait $pid
expect sigterm-exit 75 $?
check sigterm-status '.state == "preempted" and (.next | test("--resume latest"))' "$TMP/c/status.json"
"$BIN" run "$FILE" --quiet --out "$TMP/c" --resume latest >"$TMP/out" 2>"$TMP/err"
expect sigterm-resume 0 $?
for f in model.safetensors optimizer.safetensors; do
  cmp -s "$TMP/a/checkpoints/latest/$f" "$TMP/c/checkpoints/latest/$f" && echo "ok   sigterm-bit-exact $f" ||
    { echo "FAIL sigterm-bit-exact: $f differs"; fail=$((fail + 1)); }
done

# A stage's :seq-len (curriculum.md): a warm-up on windows of 16 with a
# batch of 16, then 64 with 4, over a generated text file; the held-out
# loader changes length too. The stage events give each loader's shape; the
# tokens count what was given: 25 steps of 16x16, then 35 steps from window
# ceil(400*16/64) = 100 of 195 (23 batches of 4, the epoch's remainder of 3,
# 11 of 4) of 64. Resumed from a checkpoint before the change and from one
# after it, the run ends with the bytes of the run never stopped.
seq 1 3000 | tr '\n' ' ' >"$TMP/corpus.txt"
cat >"$TMP/seqlen.lisp" <<'LISP'
(require "sexpgpu/nn")
(require "sexpgpu/optim")
(defloader train :source (text "corpus.txt" :seq-len 64) :split (0.0 0.9) :batch 4 :shuffle t
  :stages ((:short :seq-len 16 :batch 16) (:long)))
(defloader val :source (text "corpus.txt" :seq-len 64) :split (0.9 1.0) :batch 8
  :stages ((:short :seq-len 16 :batch 32)))
(defmodel lm (tokens)
  (nn:linear (nn:dropout (+ (nn:embedding tokens 256 16 :name "embed")
                            (nn:positional (dim tokens 1) 16 :max 64 :name "pos"))
                         0.1)
             256 :name "head"))
(defun objective (batch ctx) (cross-entropy (lm (getf batch :x)) (getf batch :y)))
(defun evaluate (batch ctx) (metric :loss (cross-entropy (lm (getf batch :x)) (getf batch :y))))
(defeval val :loader val :every 10)
(defun optimizer () (optim:adamw :lr 0.01))
(defcurriculum
  (stage :short :until (>= (ctx :step) 25))
  (stage :long))
(defrun :steps 60 :seed 3 :log-every 5 :checkpoint (:every 10 :keep 10))
LISP
"$BIN" run "$TMP/seqlen.lisp" --quiet --out "$TMP/sl" >"$TMP/out" 2>"$TMP/err"
expect seqlen-runs 0 $?
check seqlen-stages '[.[] | select(.kind == "stage") | [.step, .loaders.train.batch, .loaders.train.seq_len, .loaders.val.seq_len]] == [[0, 16, 16, 16], [25, 4, 64, 64]]' <(jq -s . "$TMP/sl/events.jsonl")
check seqlen-tokens '.summary.tokens == 25 * 16 * 16 + (23 * 4 + 3 + 11 * 4) * 64 and .summary.examples == 400 + 139' "$TMP/sl/status.json"
check seqlen-evals '[.[] | select(.kind == "eval") | .examples] == [88, 88, 22, 22, 22, 22]' <(jq -s . "$TMP/sl/events.jsonl")
for at in 20 30; do
  "$BIN" run "$TMP/seqlen.lisp" --quiet --out "$TMP/sl$at" \
    --resume "$TMP/sl/checkpoints/step-000000$at" >"$TMP/out" 2>"$TMP/err"
  expect "seqlen-resume-from-$at" 0 $?
  for f in model.safetensors optimizer.safetensors; do
    if cmp -s "$TMP/sl/checkpoints/latest/$f" "$TMP/sl$at/checkpoints/latest/$f"; then
      echo "ok   seqlen-resume-from-$at-bit-exact $f"
    else echo "FAIL seqlen-resume-from-$at-bit-exact: $f differs"; fail=$((fail + 1)); fi
  done
  check "seqlen-resume-from-$at-loader" "$(jq -c '{loaders, counters, stage}' "$TMP/sl/checkpoints/latest/state.json") == {loaders, counters, stage}" "$TMP/sl$at/checkpoints/latest/state.json"
done

# --resume latest with no checkpoint yet starts at step 0 and says so.
"$BIN" run "$SRC/examples/smallest.lisp" --quiet --out "$TMP/none" --resume latest --steps 3 >"$TMP/out" 2>"$TMP/err"
expect resume-none 0 $? "W-RESUME-NONE" "$TMP/none/events.jsonl"

# A device that does not exist: E-DEVICE, exit 3, status failed.
"$BIN" run "$SRC/examples/smallest.lisp" --quiet --out "$TMP/nodev" --device no-such-device >"$TMP/out" 2>"$TMP/err"
expect no-device 3 $? "E-DEVICE" "$TMP/err"

# :tf32 on the CPU device computes f32 and says so.
sed 's/(defrun :steps 200)/(defrun :steps 20 :precision :tf32)/' "$SRC/examples/smallest.lisp" >"$TMP/tf32.lisp"
"$BIN" run "$TMP/tf32.lisp" --quiet --out "$TMP/tf32" >"$TMP/out" 2>"$TMP/err"
expect tf32-on-cpu 0 $? "W-PRECISION" "$TMP/tf32/events.jsonl"

# A run directory that cannot be made: E-IO, exit 3.
"$BIN" run "$SRC/examples/smallest.lisp" --quiet --out /dev/null/run >"$TMP/out" 2>"$TMP/err"
expect out-unwritable 3 $? "E-IO" "$TMP/err"

# Resuming with another selection is refused.
"$BIN" run "$FILE" --quiet --out "$TMP/c" --resume latest --set steps=700 >"$TMP/out" 2>"$TMP/err"
expect resume-mismatch 1 $? "E-RESUME-MISMATCH" "$TMP/err"

# Resume checks the checkpoint's CRCs: one flipped byte is refused (E-IO,
# exit 3), and the run directory's events are left as they were.
cp -r "$TMP/c" "$TMP/damaged"
model=$(readlink -f "$TMP/damaged/checkpoints/latest")/model.safetensors
size=$(stat -c %s "$model")
byte=$(od -An -tu1 -j $((size - 3)) -N1 "$model" | tr -d ' ')
printf "\\$(printf '%03o' $((255 - byte)))" | dd of="$model" bs=1 seek=$((size - 3)) conv=notrunc status=none
before=$(wc -l <"$TMP/damaged/events.jsonl")
"$BIN" run "$FILE" --quiet --out "$TMP/damaged" --resume latest >"$TMP/out" 2>"$TMP/err"
expect resume-damaged 3 $? "is damaged" "$TMP/err"
[ "$(wc -l <"$TMP/damaged/events.jsonl")" -eq "$before" ] && echo "ok   resume-damaged-no-events" ||
  { echo "FAIL resume-damaged-no-events: events.jsonl grew"; fail=$((fail + 1)); }

# The finite guard: a loss that becomes infinite stops the run with exit 4.
cat >"$TMP/nonfinite.lisp" <<'LISP'
(require "sexpgpu/nn")
(require "sexpgpu/optim")
(defloader train :source (synthetic :regression :features 4 :examples 64 :seed 1) :batch 8)
(defmodel net (x) (nn:linear x 1 :name "fc"))
(defun objective (batch ctx) (* (mse (net (getf batch :x)) (getf batch :y)) 1e39))
(defun optimizer () (optim:sgd :lr 0.1))
(defrun :steps 10)
LISP
"$BIN" run "$TMP/nonfinite.lisp" --quiet --out "$TMP/nf" >"$TMP/out" 2>"$TMP/err"
expect nonfinite-exit 4 $? "E-NONFINITE" "$TMP/err"
check nonfinite-status '.state == "nonfinite" and .error.code == "E-NONFINITE"' "$TMP/nf/status.json"

# A target with :stop ends the run early, finished.
sed 's/(defrun :steps steps/(defrun :steps steps :target ("val\/acc" :>= 0.5 :stop t)/' "$FILE" >"$TMP/target.lisp"
"$BIN" run "$TMP/target.lisp" --quiet --out "$TMP/t" >"$TMP/out" 2>"$TMP/err"
expect target-stop 0 $? "reached at step" "$TMP/out"
check target-status '.summary.target.reached == true and .step < 5000' "$TMP/t/status.json"

# SEXPGPU_CPU_PROFILE: a file per function that ran, each kernel timed.
SEXPGPU_CPU_PROFILE="$TMP/prof" "$BIN" run "$FILE" --steps 4 --quiet --out "$TMP/prof-run" \
  >"$TMP/out" 2>"$TMP/err"
expect cpu-profile-runs 0 $?
check cpu-profile-train-step '.function == "train_step" and .runs == 3 and (.steps | length) > 3 and (.steps | all(.measured_us >= 0 and (.kernel | length) > 0)) and .measured_us > 0' "$TMP/prof.train_step.json"
check cpu-profile-update '.function == "update" and .runs == 3' "$TMP/prof.update.json"

echo "$fail failures"
exit $((fail > 0))
