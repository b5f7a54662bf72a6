#!/usr/bin/env bash
# Data parallel on the CPU, end to end (docs/run.md, "Several GPUs and
# nodes"): examples/mlp.lisp trained by 2 and 3 processes through Gloo
# against one process with the same global batch; several gradient buckets;
# events and checkpoints from rank 0 only; a checkpoint taken on 2 ranks
# resumed on 1, 2 and 3; a rank killed or hung (E-RANK, exit 3, within the
# rank timeout); rank variables that are wrong (E-WORLD); the same run
# started by torchrun and by hand with Slurm's variables.
# Usage: ranks.sh SEXPGPU SOURCE_DIR
set -u
BIN=$1
SRC=$2
TMP=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$TMP"' EXIT
export SEXPGPU_RUNS=$TMP/runs
export SEXPGPU_RANK_TIMEOUT=20
# torchrun sets it for its ranks; every run here gets the same environment
# (sexpgpu itself reads neither it nor OPENBLAS_NUM_THREADS: docs/environment.md).
export OMP_NUM_THREADS=1
fail=0

if [ ! -e /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ]; then
  echo "SKIP: Debian's dataset-fashion-mnist is not installed (scripts/install-deps.sh installs it)"
  exit 77
fi

# expect NAME WANT_RC GOT_RC [REGEX FILE]
expect() {
  local name=$1 want=$2 got=$3
  if [ "$got" -ne "$want" ]; then
    echo "FAIL $name: exit $got, expected $want"; sed 's/^/    /' "$TMP/err" | tail -20
    fail=$((fail + 1)); return
  fi
  if [ $# -ge 5 ] && ! grep -qE -- "$4" "$5"; then
    echo "FAIL $name: no /$4/ in $5:"; sed 's/^/    /' "$5" | tail -20; fail=$((fail + 1)); return
  fi
  echo "ok   $name"
}
# check NAME JQ-EXPRESSION FILE: the expression must give true.
check() {
  if [ "$(jq -r "$2" "$3" 2>/dev/null)" = "true" ]; then echo "ok   $1"; else
    echo "FAIL $1: $2 is not true in $3"; jq -c . "$3" 2>/dev/null | head -20; fail=$((fail + 1)); fi
}
# same NAME FILE FILE: byte-identical.
same() {
  if cmp -s "$2" "$3"; then echo "ok   $1"; else echo "FAIL $1: $2 and $3 differ"; fail=$((fail + 1)); fi
}
# close NAME A.safetensors B.safetensors TOL: every parameter within TOL.
close() {
  local d
  d=$(python3 - "$2" "$3" <<'EOF'
import json, struct, sys, array
def load(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        head = json.loads(f.read(n))
        body = f.read()
    out = {}
    for k, v in head.items():
        if k == "__metadata__": continue
        a = array.array("f"); a.frombytes(body[v["data_offsets"][0]:v["data_offsets"][1]])
        out[k] = a
    return out
a, b = load(sys.argv[1]), load(sys.argv[2])
assert a.keys() == b.keys(), (a.keys(), b.keys())
print(max(abs(x - y) for k in a for x, y in zip(a[k], b[k])))
EOF
)
  if python3 -c "import sys; sys.exit(0 if float('$d') <= $4 else 1)"; then
    echo "ok   $1 (max |difference| $d <= $4)"
  else
    echo "FAIL $1: max |difference| $d > $4"; fail=$((fail + 1))
  fi
}

# examples/mlp.lisp with a per-rank :batch, 4 KiB gradient buckets (the
# mlp's four gradients, 40 B to 784 KiB, in four buckets), a checkpoint
# every 10 steps, and a short evaluation. mlp-B.lisp.
variant() {
  local b=$1 out=$TMP/mlp-$1.lisp
  sed -e "s/:batch 128 :shuffle t/:batch $b :shuffle t/" \
      -e 's/:checkpoint (:every 1000 :keep 2)/:checkpoint (:every 10 :keep 10) :bucket-bytes 4096/' \
      -e 's/(defeval test :loader test :every 500 :batches :all)/(defeval test :loader test :every 500 :batches 1)/' \
      "$SRC/examples/mlp.lisp" >"$out"
  grep -q ":batch $b :shuffle" "$out" && grep -q ":bucket-bytes 4096" "$out" || {
    echo "FAIL variant: examples/mlp.lisp no longer reads as this test expects"; exit 1; }
  echo "$out"
}
M120=$(variant 120)
M60=$(variant 60)
M40=$(variant 40)
STEPS=30
FLAGS=(--steps $STEPS --threads 1 --quiet)

# ---- several buckets ------------------------------------------------------------------------
"$BIN" explain "$M60" --json >"$TMP/explain.json" 2>"$TMP/err"
expect explain 0 $?
check buckets '.functions[] | select(.name == "train_step") | .buckets == 4' "$TMP/explain.json"

# ---- 1, 2 and 3 processes, one global batch of 120 -------------------------------------------
"$BIN" run "$M120" "${FLAGS[@]}" --out "$TMP/one" >"$TMP/out" 2>"$TMP/err"
expect one-rank 0 $? "finished at step $STEPS/$STEPS" "$TMP/out"
"$BIN" run "$M60" "${FLAGS[@]}" --ranks 2 --out "$TMP/two" >"$TMP/out" 2>"$TMP/err"
expect two-ranks 0 $? "finished at step $STEPS/$STEPS" "$TMP/out"
[ "$(grep -c 'finished at step' "$TMP/out")" = 1 ] && echo "ok   two-ranks-one-report" ||
  { echo "FAIL two-ranks-one-report: more than rank 0 reported"; fail=$((fail + 1)); }
"$BIN" run "$M40" "${FLAGS[@]}" --ranks 3 --out "$TMP/three" >"$TMP/out" 2>"$TMP/err"
expect three-ranks 0 $? "finished at step $STEPS/$STEPS" "$TMP/out"

jq -s . "$TMP/two/events.jsonl" >"$TMP/two.json"
check two-open 'map(select(.kind == "open")) | length == 1 and .[0].world.size == 2 and .[0].effective_batch == 120' "$TMP/two.json"
check two-close 'map(select(.kind == "close")) | length == 1 and .[0].state == "finished"' "$TMP/two.json"
check two-examples '.summary.examples == 3600' "$TMP/two/status.json"
check three-open '.world.size == 3 and .effective_batch == 120' <(head -1 "$TMP/three/events.jsonl")

# The same examples in every step and the same mean gradient: the
# parameters differ only by the order of float sums (a mean over 120 rows
# against a mean of two or three means), a few ulps a step, which AdamW can
# carry into at most its step size (3e-4 at step 30 of the warmup) on a
# coordinate whose gradient is near zero; 1e-4 bounds what we see (below
# 1e-6) with room, and a wrong batch or a missing reduction is off by 1e-2.
close two-ranks-as-one "$TMP/one/checkpoints/latest/model.safetensors" "$TMP/two/checkpoints/latest/model.safetensors" 1e-4
close three-ranks-as-one "$TMP/one/checkpoints/latest/model.safetensors" "$TMP/three/checkpoints/latest/model.safetensors" 1e-4
# The losses each step report agree to the same order.
paste <(jq -r 'select(.kind == "step") | .metrics["train/loss"]' "$TMP/one/events.jsonl") \
      <(jq -r 'select(.kind == "step") | .metrics["train/loss"]' "$TMP/two/events.jsonl") >"$TMP/losses"
awk 'BEGIN { bad = 0 } { d = $1 - $2; if (d < 0) d = -d; if (d > 1e-4 || NF != 2) bad = 1 }
     END { exit bad || NR < 2 }' "$TMP/losses" && echo "ok   two-ranks-losses" ||
  { echo "FAIL two-ranks-losses:"; cat "$TMP/losses"; fail=$((fail + 1)); }

# --json under --ranks: rank 0's events alone, one open and one close.
"$BIN" run "$M60" --steps 5 --threads 1 --ranks 2 --json --out "$TMP/json" >"$TMP/json.out" 2>"$TMP/err"
expect ranks-json 0 $?
check ranks-json-events 'map(.kind) | (.[0] == "open" and .[-1] == "close" and (map(select(. == "open")) | length) == 1 and (map(select(. == "close")) | length) == 1)' <(jq -s . "$TMP/json.out")

# The reduction order of a fixed world is fixed: bit for bit again.
"$BIN" run "$M60" "${FLAGS[@]}" --ranks 2 --out "$TMP/two-again" >"$TMP/out" 2>"$TMP/err"
expect two-ranks-again 0 $?
same two-ranks-repeat "$TMP/two/checkpoints/latest/model.safetensors" "$TMP/two-again/checkpoints/latest/model.safetensors"

# ---- a checkpoint of 2 ranks resumed on 1, 2 and 3 --------------------------------------------
CK10=$TMP/two/checkpoints/step-00000010
[ -d "$CK10" ] || { echo "FAIL resume: no step-10 checkpoint in $TMP/two"; ls "$TMP/two/checkpoints"; exit 1; }
for ranks in 1 2 3; do
  "$BIN" run "$M60" "${FLAGS[@]}" --ranks $ranks --resume "$CK10" --out "$TMP/resumed-$ranks" >"$TMP/out" 2>"$TMP/err"
  expect "resume-on-$ranks" 0 $? "finished at step $STEPS/$STEPS" "$TMP/out"
  jq -s . "$TMP/resumed-$ranks/events.jsonl" >"$TMP/r.json"
  # 10 steps of 120 examples, then 20 of 60 per rank.
  check "resume-on-$ranks-examples" ".summary.examples == $((1200 + 20 * 60 * ranks))" "$TMP/resumed-$ranks/status.json"
  if [ $ranks = 2 ]; then
    check resume-on-2-quiet 'map(select(.code == "W-WORLD-CHANGED")) | length == 0' "$TMP/r.json"
  else
    check "resume-on-$ranks-warning" "map(select(.kind == \"warning\" and .code == \"W-WORLD-CHANGED\")) | length == 1 and (.[0].message | test(\"taken on 2 ranks \\\\(effective batch 120\\\\); this run has $ranks \\\\(effective batch $((60 * ranks))\\\\)\"))" "$TMP/r.json"
    check "resume-on-$ranks-open" "map(select(.kind == \"open\"))[0] | .resumed_from.world_size == 2 and .resumed_from.step == 10" "$TMP/r.json"
  fi
done
# Resumed on the world it was taken on, the run is the uninterrupted one.
same resume-on-2-exact "$TMP/two/checkpoints/latest/model.safetensors" "$TMP/resumed-2/checkpoints/latest/model.safetensors"

# ---- a rank that dies, a rank that hangs ------------------------------------------------------
# rank_pid LAUNCHER RANK: the pid of the launcher's child of that rank.
rank_pid() {
  for p in $(pgrep -P "$1"); do
    tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "SEXPGPU_RANK=$2" && { echo "$p"; return; }
  done
}
# wait_for FILE: up to 60 s.
wait_for() {
  for _ in $(seq 600); do [ -e "$1" ] && return 0; sleep 0.1; done
  return 1
}
for fault in KILL STOP; do
  OUT=$TMP/fault-$fault
  SEXPGPU_RANK_TIMEOUT=4 "$BIN" run "$M60" --steps 100000 --threads 1 --quiet --ranks 2 --out "$OUT" >"$TMP/out" 2>"$TMP/err" &
  launcher=$!
  wait_for "$OUT/checkpoints/step-00000010/checksums.json" || { echo "FAIL fault-$fault: no checkpoint"; fail=$((fail + 1)); kill $launcher; continue; }
  sleep 0.5
  victim=$(rank_pid $launcher 1)
  [ -n "$victim" ] || { echo "FAIL fault-$fault: rank 1 not found"; fail=$((fail + 1)); kill $launcher; continue; }
  t0=$(date +%s.%N)
  kill -$fault "$victim"
  wait $launcher
  rc=$?
  took=$(python3 -c "print(round($(date +%s.%N) - $t0, 2))")
  [ $fault = STOP ] && kill -KILL "$victim" 2>/dev/null
  expect "fault-$fault-exit" 3 $rc "E-RANK" "$TMP/err"
  # Rank 0 stops within the rank timeout (4 s) and the store's 5 s of grace.
  python3 -c "import sys; sys.exit(0 if $took < 12 else 1)" && echo "ok   fault-$fault-within-timeout ($took s)" ||
    { echo "FAIL fault-$fault-within-timeout: $took s"; fail=$((fail + 1)); }
  check "fault-$fault-status" '.state == "failed" and .exit_code == 3 and .error.code == "E-RANK" and (.next | test("--resume latest"))' "$OUT/status.json"
  "$BIN" checkpoint verify "$OUT/checkpoints/latest" >"$TMP/out" 2>&1
  expect "fault-$fault-checkpoint-intact" 0 $?
done

# ---- SIGTERM to --ranks: every rank stops at one step, rank 0 checkpoints -------------------
OUT=$TMP/preempted
"$BIN" run "$M60" --steps 1000 --threads 1 --quiet --ranks 2 --out "$OUT" >"$TMP/out" 2>"$TMP/err" &
launcher=$!
wait_for "$OUT/checkpoints/step-00000010/checksums.json" || echo "FAIL preempt: no checkpoint"
kill -TERM $launcher
wait $launcher
expect preempt-exit 75 $? "preempted at step" "$TMP/out"
check preempt-status '.state == "preempted" and (.next | test("--ranks 2 .*--resume latest$"))' "$OUT/status.json"
check preempt-one-signal 'map(select(.kind == "signal")) | length == 1 and (map(select(.kind == "checkpoint")) | .[-1].step) == (map(select(.kind == "close")) | .[0].step)' <(jq -s . "$OUT/events.jsonl")
"$BIN" run "$M60" --steps 1000 --threads 1 --quiet --ranks 2 --out "$OUT" --resume latest >"$TMP/out" 2>"$TMP/err"
expect preempt-resumed 0 $? "finished at step 1000/1000" "$TMP/out"

# ---- rank variables that are wrong: usage errors before anything starts ----------------------
SEXPGPU_RANK=2 SEXPGPU_WORLD_SIZE=2 SEXPGPU_MASTER=127.0.0.1:29999 "$BIN" run "$M60" "${FLAGS[@]}" --out "$TMP/bad" >"$TMP/out" 2>"$TMP/err"
expect rank-beyond-world 2 $? "E-WORLD SEXPGPU_RANK is \"2\"" "$TMP/err"
RANK=0 WORLD_SIZE=2 "$BIN" run "$M60" "${FLAGS[@]}" --out "$TMP/bad" >"$TMP/out" 2>"$TMP/err"
expect torchrun-no-master 2 $? "E-WORLD" "$TMP/err"
SEXPGPU_RANK=0 SEXPGPU_WORLD_SIZE=2 SEXPGPU_MASTER=127.0.0.1:29999 "$BIN" run "$M60" "${FLAGS[@]}" --ranks 2 --out "$TMP/bad" >"$TMP/out" 2>"$TMP/err"
expect ranks-inside-a-rank 2 $? "E-WORLD --ranks 2: this process is already rank 0 of 2" "$TMP/err"
[ -e "$TMP/bad" ] && { echo "FAIL bad-world: the run directory was written"; fail=$((fail + 1)); }
# Two processes that claim one rank: the second is refused, the run goes on.
PORT=$((20000 + RANDOM % 20000))
export SEXPGPU_WORLD_SIZE=2 SEXPGPU_MASTER=127.0.0.1:$PORT
SEXPGPU_RANK=0 "$BIN" run "$M60" --steps 1000 --threads 1 --quiet --out "$TMP/dup" >"$TMP/out0" 2>"$TMP/err0" &
r0=$!
SEXPGPU_RANK=1 "$BIN" run "$M60" --steps 1000 --threads 1 --quiet --out "$TMP/dup" >/dev/null 2>"$TMP/err1" &
r1=$!
wait_for "$TMP/dup/events.jsonl"
SEXPGPU_RANK=1 "$BIN" run "$M60" "${FLAGS[@]}" --out "$TMP/dup" >"$TMP/out" 2>"$TMP/err"
expect same-rank-twice 2 $? "E-WORLD.*rank 1" "$TMP/err"
wait $r1; rc1=$?
wait $r0; rc0=$?
cp "$TMP/err0" "$TMP/err"
expect same-rank-twice-rank-0 0 $rc0 "finished at step 1000/1000" "$TMP/out0"
expect same-rank-twice-rank-1 0 $rc1
unset SEXPGPU_WORLD_SIZE SEXPGPU_MASTER

# ---- launchers: Slurm's variables, and a real torchrun ----------------------------------------
# The same world as --ranks 2, so the same parameters bit for bit.
PORT=$((20000 + RANDOM % 20000))
for r in 0 1; do
  SLURM_PROCID=$r SLURM_NTASKS=2 SLURM_LOCALID=$r MASTER_ADDR=127.0.0.1 MASTER_PORT=$PORT \
    "$BIN" run "$M60" "${FLAGS[@]}" --out "$TMP/slurm" >"$TMP/out-$r" 2>"$TMP/err-$r" &
done
wait %1; rc0=$?
wait %2; rc1=$?
cp "$TMP/err-0" "$TMP/err"
expect slurm-rank-0 0 $rc0 "finished at step $STEPS/$STEPS" "$TMP/out-0"
expect slurm-rank-1 0 $rc1
check slurm-open '.world.size == 2 and (.world.origin | test("Slurm"))' <(head -1 "$TMP/slurm/events.jsonl")
same slurm-as-ranks "$TMP/two/checkpoints/latest/model.safetensors" "$TMP/slurm/checkpoints/latest/model.safetensors"

if command -v torchrun >/dev/null; then
  PORT=$((20000 + RANDOM % 20000))
  # Debian 12's torchrun (PyTorch 1.13) takes the underscore spellings.
  torchrun --no_python --nproc_per_node 2 --master_addr 127.0.0.1 --master_port $PORT -r 1 -t 1 \
    "$BIN" run "$M60" "${FLAGS[@]}" --out "$TMP/torchrun" >"$TMP/out" 2>"$TMP/err"
  expect torchrun 0 $?
  check torchrun-open '.world.size == 2 and (.world.origin | test("torchrun")) and (.world.master | test(":'$((PORT + 1))'$"))' <(head -1 "$TMP/torchrun/events.jsonl")
  same torchrun-as-ranks "$TMP/two/checkpoints/latest/model.safetensors" "$TMP/torchrun/checkpoints/latest/model.safetensors"
else
  echo "skip torchrun: not installed (python3-torch ships it; scripts/install-deps.sh --tests installs it)"
fi

[ $fail -eq 0 ] && echo "all passed" || echo "$fail failed"
exit $((fail > 0))
