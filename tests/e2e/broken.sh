#!/usr/bin/env bash
# Broken run files (tests/e2e/broken/*.lisp): their first lines say which
# diagnostics `sexpgpu check` must give and where, one ";; expect: CODE LINE
# COL" line each (0 0: a diagnostic of the whole file, whose positions are
# null). Each file must exit 1 (0 when only warnings are expected)
# with every expected code at its position, give no error beyond the
# expected ones (a consequence of an error is not a new one: errors.md,
# "never a cascade"), never crash, and take under a second; a file whose
# header says ";; cpu-under: N ms" must also take under N ms of CPU time
# (user and system). Modules the files require are in
# tests/e2e/broken/modules/.
# Usage: broken.sh SEXPGPU SOURCE_DIR
set -u
BIN=$1
SRC=$2
fail=0
count=0
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
TIMEFORMAT='%3U %3S'  # what `time` prints: user and system CPU seconds
for f in "$SRC"/tests/e2e/broken/*.lisp; do
  name=$(basename "$f")
  expects=()
  while read -r c1 c2 code line col; do
    [ "$c1 $c2" = ";; expect:" ] || break
    expects+=("$code $line $col")
  done <"$f"
  cpu_limit=$(sed -n '/^;;/!q; s/^;; cpu-under: \([0-9]*\) ms$/\1/p' "$f")
  count=$((count + 1))
  if [ "${#expects[@]}" -eq 0 ]; then
    echo "FAIL $name: no ';; expect: CODE LINE COL' first line"; fail=$((fail + 1)); continue
  fi
  start=$(date +%s%N)
  cpu=$( { time "$BIN" check --json "$f" >"$tmp" 2>/dev/null; } 2>&1 )
  rc=$?
  ms=$(( ($(date +%s%N) - start) / 1000000 ))
  cpu_ms=$(echo "$cpu" | awk '{ printf "%d", ($1 + $2) * 1000 }')
  out=$(cat "$tmp")
  want_rc=0
  want_errors=0
  for e in "${expects[@]}"; do
    [ "${e:0:2}" = "E-" ] && { want_rc=1; want_errors=$((want_errors + 1)); }
  done
  if [ "$rc" -ne "$want_rc" ]; then
    echo "FAIL $name: exit $rc, expected $want_rc"; echo "$out"; fail=$((fail + 1)); continue
  fi
  bad=""
  for e in "${expects[@]}"; do
    read -r code line col <<<"$e"
    found=$(echo "$out" | jq --arg c "$code" --argjson l "$line" --argjson k "$col" \
      '[.[] | select(.code == $c and ((.line == $l and .col == $k) or ($l == 0 and .line == null)))] | length')
    [ "$found" -ge 1 ] || bad="$bad expected $code at $line:$col;"
  done
  errors=$(echo "$out" | jq '[.[] | select(.severity == "error")] | length')
  [ "$errors" -eq "$want_errors" ] || bad="$bad $errors errors, expected $want_errors;"
  if [ -n "$bad" ]; then
    echo "FAIL $name:$bad"; echo "$out"; fail=$((fail + 1)); continue
  fi
  if [ "$ms" -ge 1000 ]; then
    echo "FAIL $name: check took $ms ms (limit 1000)"; fail=$((fail + 1)); continue
  fi
  if [ -n "$cpu_limit" ] && [ "$cpu_ms" -ge "$cpu_limit" ]; then
    echo "FAIL $name: check took $cpu_ms ms of CPU time (limit $cpu_limit)"; fail=$((fail + 1)); continue
  fi
  echo "ok   $name: ${expects[*]} in $ms ms ($cpu_ms ms CPU)"
done
[ "$count" -gt 0 ] || { echo "FAIL no broken files found"; exit 1; }
echo "$count files, $fail failures"
exit $((fail > 0))
