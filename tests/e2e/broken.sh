#!/usr/bin/env bash
# Broken run files (tests/e2e/broken/*.lisp): each says in its first line
# which diagnostic `sexpgpu check` must give and where (";; expect: CODE
# LINE COL"). Each must exit 1 (0 for a warning) with that code at that
# position, never crash, and take under a second.
# Usage: broken.sh SEXPGPU SOURCE_DIR
set -u
BIN=$1
SRC=$2
fail=0
count=0
for f in "$SRC"/tests/e2e/broken/*.lisp; do
  read -r _ _ code line col < <(head -1 "$f")
  count=$((count + 1))
  start=$(date +%s%N)
  out=$("$BIN" check --json "$f" 2>/dev/null)
  rc=$?
  ms=$(( ($(date +%s%N) - start) / 1000000 ))
  name=$(basename "$f")
  want_rc=1
  [ "${code:0:2}" = "W-" ] && want_rc=0
  if [ "$rc" -ne "$want_rc" ]; then
    echo "FAIL $name: exit $rc, expected $want_rc"; echo "$out"; fail=$((fail + 1)); continue
  fi
  got=$(echo "$out" | jq -r --arg c "$code" '[.[] | select(.code == $c)][0] | "\(.line) \(.col)"')
  if [ "$got" != "$line $col" ]; then
    echo "FAIL $name: expected $code at $line:$col, got '$got'"; echo "$out"; fail=$((fail + 1)); continue
  fi
  if [ "$ms" -ge 1000 ]; then
    echo "FAIL $name: check took $ms ms (limit 1000)"; fail=$((fail + 1)); continue
  fi
  echo "ok   $name: $code at $line:$col in $ms ms"
done
[ "$count" -gt 0 ] || { echo "FAIL no broken files found"; exit 1; }
echo "$count files, $fail failures"
exit $((fail > 0))
