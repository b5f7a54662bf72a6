#!/usr/bin/env bash
# The contract examples (examples/*.lisp): each checks with no diagnostic at
# all in under a second, is in `sexpgpu fmt`'s layout, and the quick ones
# train to what they promise.
# Usage: examples.sh SEXPGPU SOURCE_DIR
set -u
BIN=$1
SRC=$2
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail=0
for f in "$SRC"/examples/*.lisp; do
  name=$(basename "$f")
  start=$(date +%s%N)
  "$BIN" check --strict "$f" >"$TMP/out" 2>&1
  rc=$?
  ms=$(( ($(date +%s%N) - start) / 1000000 ))
  if [ "$rc" -ne 0 ] || [ -s "$TMP/out" ]; then
    echo "FAIL check $name: exit $rc"; cat "$TMP/out"; fail=$((fail + 1))
  elif [ "$ms" -ge 1000 ]; then
    echo "FAIL check $name: $ms ms (limit 1000)"; fail=$((fail + 1))
  else
    echo "ok   check $name in $ms ms"
  fi
done

# Every example is in the one layout: `sexpgpu fmt --check` changes nothing.
"$BIN" fmt --check "$SRC"/examples/*.lisp >"$TMP/out" 2>&1
rc=$?
if [ "$rc" -eq 0 ]; then echo "ok   fmt --check examples/*.lisp"; else
  echo "FAIL fmt --check: exit $rc; these would change:"; cat "$TMP/out"; fail=$((fail + 1)); fi

# charlm's tiny variant learns: val/loss far below a uniform guess (ln 256 = 5.55).
"$BIN" run "$SRC/examples/charlm.lisp" --variant tiny --quiet --out "$TMP/charlm" >"$TMP/out" 2>&1
rc=$?
loss=$(jq -r '.summary.final["val/loss"]' "$TMP/charlm/status.json" 2>/dev/null)
if [ "$rc" -eq 0 ] && jq -e '.summary.final["val/loss"] < 3.0' "$TMP/charlm/status.json" >/dev/null 2>&1; then
  echo "ok   charlm tiny: val/loss $loss"
else
  echo "FAIL charlm tiny: exit $rc, val/loss $loss"; cat "$TMP/out"; fail=$((fail + 1))
fi

# gpt2's small-test trains on the CPU (bf16 matrix products).
"$BIN" run "$SRC/examples/gpt2.lisp" --variant small-test --quiet --out "$TMP/gpt2" >"$TMP/out" 2>&1
rc=$?
if [ "$rc" -eq 0 ]; then echo "ok   gpt2 small-test"; else
  echo "FAIL gpt2 small-test: exit $rc"; cat "$TMP/out"; fail=$((fail + 1)); fi

# mlp's quick variant: one epoch of Fashion-MNIST reaches 0.80 test accuracy.
"$BIN" run "$SRC/examples/mlp.lisp" --variant quick --quiet --out "$TMP/mlp" >"$TMP/out" 2>&1
rc=$?
acc=$(jq -r '.summary.final["test/acc"]' "$TMP/mlp/status.json" 2>/dev/null)
if [ "$rc" -eq 0 ] && jq -e '.summary.final["test/acc"] >= 0.80' "$TMP/mlp/status.json" >/dev/null 2>&1; then
  echo "ok   mlp quick: test/acc $acc"
else
  echo "FAIL mlp quick: exit $rc, test/acc $acc"; cat "$TMP/out"; fail=$((fail + 1))
fi

# The convnet and the Muon run train (a few steps each: the full runs are
# minutes on a CPU; bench/RESULTS.md and docs record what they reach).
for run in "convnet.lisp --variant quick --steps 40" "muon.lisp --steps 30"; do
  set -- $run
  "$BIN" run "$SRC/examples/$@" --quiet --out "$TMP/${1%.lisp}" >"$TMP/out" 2>&1
  rc=$?
  if [ "$rc" -eq 0 ] && jq -e '.state == "finished"' "$TMP/${1%.lisp}/status.json" >/dev/null 2>&1; then
    echo "ok   $run"
  else
    echo "FAIL $run: exit $rc"; cat "$TMP/out"; fail=$((fail + 1))
  fi
done

echo "$fail failures"
exit $((fail > 0))
