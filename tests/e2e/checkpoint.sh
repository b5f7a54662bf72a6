#!/usr/bin/env bash
# End-to-end tests of `sexpgpu checkpoint` and `sexpgpu status` on a run
# directory written by make_test_run (the core/run library, as the training
# loop will): output, --json, exit codes, and a corrupted checkpoint.
# Usage: checkpoint.sh PATH/TO/sexpgpu PATH/TO/make_test_run
set -u
BIN=$1
MAKE_RUN=$2
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
pass=0
fail=0

expect() {  # expect NAME WANT_EXIT ACTUAL_EXIT [grep-pattern file]
  local name=$1 want=$2 got=$3
  if [ "$want" != "$got" ]; then
    echo "FAIL $name: exit $got, wanted $want"
    sed 's/^/    /' "$TMP/out" | head -20
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

RUN=$TMP/run
mkdir -p "$RUN"
"$MAKE_RUN" "$RUN" >"$TMP/out" 2>&1
expect make-run 0 $?
CK=$RUN/checkpoints

# list: both steps, their bytes, the metrics state.json holds, latest marked.
"$BIN" checkpoint list "$RUN" >"$TMP/out" 2>&1
expect list 0 $? "^\* 200 +1\.1 KiB +2023-11-14T22:13:20.123Z +train/loss 0.005$" "$TMP/out"
expect list-100 0 0 "^  100 " "$TMP/out"
"$BIN" checkpoint list "$RUN" --json >"$TMP/out" 2>&1
expect list-json 0 $? '"latest": "step-00000200"' "$TMP/out"
expect list-json-path 0 0 "\"path\": \"$CK/step-00000100\"" "$TMP/out"
"$BIN" checkpoint list "$TMP/nowhere" >"$TMP/out" 2>&1
expect list-missing 2 $?

# show: the latest of a run, tensors with stats (fc/w at step 200 is
# {200, 200.5, -200, 400, 0.25, 1}: min -200, max 400, mean 100.291667).
"$BIN" checkpoint show "$RUN" >"$TMP/out" 2>&1
expect show 0 $? "^checkpoint $CK/step-00000200 \(step 200\)" "$TMP/out"
expect show-w 0 0 "^  fc/w +f32 +\[2,3\] +-200 +400 +100.292 " "$TMP/out"
expect show-b 0 0 "^  fc/b +f32 +\[2\] +-1 +50 +24.5 " "$TMP/out"
expect show-opt 0 0 "^optimizer.safetensors: 2 tensors, 8 elements, 32 B" "$TMP/out"
expect show-state 0 0 "^  loaders +\{1 key\}$" "$TMP/out"
expect show-state-rng 0 0 "^  rng +\{2 keys\}$" "$TMP/out"
"$BIN" checkpoint show "$CK/step-00000100" --json >"$TMP/out" 2>&1
expect show-json 0 $? '"step": 100' "$TMP/out"
expect show-json-rng 0 0 '"counter": 100' "$TMP/out"
"$BIN" checkpoint show "$TMP/nowhere" >"$TMP/out" 2>&1
expect show-missing 2 $?

# verify and export of sound checkpoints.
"$BIN" checkpoint verify "$RUN" >"$TMP/out" 2>&1
expect verify-run 0 $? "^ok +$CK/step-00000200$" "$TMP/out"
"$BIN" checkpoint verify "$CK/latest" --json >"$TMP/out" 2>&1
expect verify-json 0 $? '"ok": true' "$TMP/out"
"$BIN" checkpoint export "$RUN" -o "$TMP/model.safetensors" >"$TMP/out" 2>&1
expect export 0 $? "^wrote $TMP/model.safetensors: 2 tensors, .* step 200$" "$TMP/out"
cmp -s "$TMP/model.safetensors" "$CK/step-00000200/model.safetensors"
expect export-bytes 0 $?
"$BIN" checkpoint export "$RUN" --format npz -o "$TMP/x.npz" >"$TMP/out" 2>&1
expect export-format 2 $? "the one format is safetensors" "$TMP/out"

# The exported file in PyTorch, where safetensors is installed.
if command -v python3 >/dev/null && python3 -c 'import safetensors.torch' 2>/dev/null; then
  python3 -c '
import sys, safetensors.torch as st
t = st.load_file(sys.argv[1])
assert sorted(t) == ["fc/b", "fc/w"], sorted(t)
assert t["fc/w"].tolist() == [[200, 200.5, -200], [400, 0.25, 1]], t["fc/w"]
assert t["fc/b"].tolist() == [50, -1], t["fc/b"]
' "$TMP/model.safetensors" >"$TMP/out" 2>&1
  expect torch-load 0 $?
else
  echo "skip torch-load: python3 with safetensors is not installed"
fi

# A corrupted checkpoint: one byte of fc/w's data flipped (its last byte,
# since the data is the file's end: fc/b then fc/w in name order).
M=$CK/step-00000200/model.safetensors
size=$(stat -c %s "$M")
printf '\x55' | dd of="$M" bs=1 seek=$((size - 1)) conv=notrunc status=none
"$BIN" checkpoint verify "$RUN" >"$TMP/out" 2>&1
expect verify-corrupt 1 $? "tensor 'fc/w' has CRC-32 [0-9a-f]{8}, checksums.json records" "$TMP/out"
expect verify-corrupt-line 1 1 "^CORRUPT +$CK/step-00000200$" "$TMP/out"
expect verify-other-ok 1 1 "^ok +$CK/step-00000100$" "$TMP/out"
"$BIN" checkpoint verify "$CK/step-00000100" >"$TMP/out" 2>&1
expect verify-one-ok 0 $?
"$BIN" checkpoint verify "$CK/step-00000200" --json >"$TMP/out" 2>&1
expect verify-json-corrupt 1 $? '"ok": false' "$TMP/out"
"$BIN" checkpoint export "$CK/step-00000200" -o "$TMP/bad.safetensors" >"$TMP/out" 2>&1
expect export-corrupt 1 $? "refusing a corrupt checkpoint" "$TMP/out"
[ ! -e "$TMP/bad.safetensors" ]
expect export-corrupt-nothing 0 $?
rm "$M"
"$BIN" checkpoint verify "$CK/step-00000200" >"$TMP/out" 2>&1
expect verify-missing-file 1 $? "model.safetensors: missing" "$TMP/out"
"$BIN" checkpoint verify "$TMP/nowhere" >"$TMP/out" 2>&1
expect verify-nowhere 2 $?

# status: the preempted run, for people and as JSON.
"$BIN" status "$RUN" >"$TMP/out" 2>&1
expect status 0 $? "^state +preempted \(exit 75\)$" "$TMP/out"
expect status-step 0 0 "^step +200 / 1000 \(20%\)$" "$TMP/out"
expect status-ckpt 0 0 "^checkpoint +step 200 +$CK/step-00000200$" "$TMP/out"
expect status-next 0 0 "^next +sexpgpu run test.lisp --steps 1000 --resume latest$" "$TMP/out"
expect status-best 0 0 "^best +train/loss 0.005 @200$" "$TMP/out"
"$BIN" status "$RUN" --json >"$TMP/out" 2>&1
expect status-json 0 $? '"state": "preempted"' "$TMP/out"
expect status-json-next 0 0 '"next": "sexpgpu run test.lisp --steps 1000 --resume latest"' "$TMP/out"
"$BIN" status "$TMP/nowhere" >"$TMP/out" 2>&1
expect status-missing 2 $? "nowhere: no such run directory" "$TMP/out"
mkdir -p "$TMP/empty"
"$BIN" status "$TMP/empty" >"$TMP/out" 2>&1
expect status-no-file 2 $? "no status file" "$TMP/out"
echo '{"state": "running", "step": "x"}' >"$RUN/status.json"
"$BIN" status "$RUN" >"$TMP/out" 2>&1
expect status-bad 3 $? "a status field has the wrong type" "$TMP/out"

# The events the run wrote: one JSON object per line, kind first.
lines=$(wc -l <"$RUN/events.jsonl")
[ "$lines" = 7 ]
expect events-lines 0 $?
grep -c '^{"kind":"[a-z]*","time":"[0-9T:.-]*Z"' "$RUN/events.jsonl" >"$TMP/out"
expect events-shape 0 $? "^7$" "$TMP/out"

echo "checkpoint.sh: $pass passed, $fail failed"
[ "$fail" = 0 ]
