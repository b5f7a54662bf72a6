#!/usr/bin/env bash
# The contract examples (examples/*.lisp): each checks with no diagnostic at
# all in under a second, and the quick ones train to what they promise.
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

echo "$fail failures"
exit $((fail > 0))
