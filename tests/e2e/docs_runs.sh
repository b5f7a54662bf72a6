#!/usr/bin/env bash
# Every whole run file in docs/*.md (a ```lisp block with a defrun and an
# objective, as tests/unit/golden_runner.h picks them) is run with `sexpgpu
# run`, as written, to its end: exit 0 and state finished in status.json,
# every stage of its defcurriculum entered, and at least one whole epoch of
# its train loader trained (the epoch's last batch, a remainder where the
# split leaves one, included). The unit tests only compile these blocks; a
# remainder batch nothing was compiled for shows only when one runs.
# Usage: docs_runs.sh SEXPGPU SOURCE_DIR
set -u
BIN=$1
SRC=$2
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
export SEXPGPU_RUNS=$TMP/runs
fail=0
count=0

# Each block as PAGE-LINE.lisp in $TMP/blocks, where LINE is the line of
# its opening fence.
mkdir -p "$TMP/blocks"
for page in "$SRC"/docs/*.md; do
  awk -v out="$TMP/blocks" -v page="$(basename "$page" .md)" '
    /^```lisp[ \t]*$/ { inside = 1; start = NR; text = ""; next }
    inside && /^```/ {
      inside = 0
      if (text ~ /\(defrun[ \t\n)]/ && tolower(text) ~ /\(defun objective[ \t]/) {
        file = out "/" page "-" start ".lisp"
        printf "%s", text > file
        close(file)
      }
      next
    }
    inside { text = text $0 "\n" }
  ' "$page"
done

for file in "$TMP"/blocks/*.lisp; do
  [ -e "$file" ] || continue
  name=$(basename "$file" .lisp)
  count=$((count + 1))
  run="$TMP/runs/$name"
  start=$(date +%s%N)
  "$BIN" run "$file" --quiet --out "$run" >"$TMP/out" 2>"$TMP/err"
  rc=$?
  ms=$((($(date +%s%N) - start) / 1000000))
  if [ "$rc" -ne 0 ]; then
    echo "FAIL $name: exit $rc"; cat "$TMP/err"; fail=$((fail + 1)); continue
  fi
  state=$(jq -r .state "$run/status.json" 2>/dev/null)
  if [ "$state" != "finished" ]; then
    echo "FAIL $name: state $state in status.json"; fail=$((fail + 1)); continue
  fi
  # The stages the file names, each entered (a stage event) in that order.
  want=$(grep -o '(stage :[A-Za-z0-9*+-]*' "$file" | sed 's/(stage ://' | tr 'A-Z' 'a-z' | paste -sd, -)
  got=$(jq -r 'select(.kind == "stage") | .stage' "$run/events.jsonl" | paste -sd, -)
  if [ "$got" != "$want" ]; then
    echo "FAIL $name: stages entered '$got', the file has '$want'"; fail=$((fail + 1)); continue
  fi
  # The last step trained a batch of a later epoch than the first.
  epoch=$(jq -s '[.[] | select(.kind == "step")] | last | .metrics.epoch' "$run/events.jsonl")
  if ! [ "$epoch" -ge 1 ] 2>/dev/null; then
    echo "FAIL $name: the run ended in epoch $epoch, before one whole epoch"
    fail=$((fail + 1)); continue
  fi
  echo "ok   $name: finished, stages '${want:-none}', ended in epoch $epoch, ${ms} ms"
done

if [ "$count" -lt 1 ]; then
  echo "FAIL no whole run file found in $SRC/docs"; fail=$((fail + 1))
fi
echo "$count run files in docs/, $fail failed"
[ "$fail" -eq 0 ]
