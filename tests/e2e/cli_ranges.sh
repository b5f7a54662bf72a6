#!/usr/bin/env bash
# End-to-end tests of what the command line refuses and how (issue 16, items
# 3, 5 and 6): numbers out of range (flags, knobs, derived counts, the memory
# plan against the device), runs refused before their directory is written,
# unknown and unbuilt verbs, missing files, --json on every verb, --quiet
# anywhere. Every case is quick: no run trains more than a few steps.
# Usage: cli_ranges.sh PATH/TO/sexpgpu SOURCE_DIR
set -u
BIN=$1
SRC=$2
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
export SEXPGPU_RUNS=$TMP/runs
unset SEXPGPU_DEVICE
pass=0
fail=0

# expect NAME WANT_EXIT ACTUAL_EXIT [REGEX FILE]...: the exit code, then each
# extended regex must match its file.
expect() {
  local name=$1 want=$2 got=$3
  shift 3
  if [ "$want" != "$got" ]; then
    echo "FAIL $name: exit $got, wanted $want"
    sed 's/^/    /' "$TMP/err" 2>/dev/null | head -5
    fail=$((fail + 1))
    return
  fi
  while [ $# -ge 2 ]; do
    if ! grep -qE -- "$1" "$2"; then
      echo "FAIL $name: $2 lacks /$1/:"
      sed 's/^/    /' "$2" | head -10
      fail=$((fail + 1))
      return
    fi
    shift 2
  done
  pass=$((pass + 1))
}
# check NAME JQ-EXPRESSION FILE: the expression must give true.
check() {
  if [ "$(jq -r "$2" "$3" 2>/dev/null)" = "true" ]; then pass=$((pass + 1)); else
    echo "FAIL $1: $2 is not true in $3:"; head -c 2000 "$3" | sed 's/^/    /'; fail=$((fail + 1)); fi
}

cat >"$TMP/knobs.lisp" <<'EOF'
;;;; A run file whose sizes and counts are knobs.
(require "sexpgpu/nn")
(require "sexpgpu/optim")
(defknob width 4 :type integer)
(defknob epochs 1 :type integer)
(defloader train :source (synthetic :regression :features 8 :examples 64 :seed 1) :batch 32)
(defmodel net (x) (nn:linear (nn:linear x width :name "hidden") 1 :name "out"))
(defun objective (batch ctx) (mse (net (getf batch :x)) (getf batch :y)))
(defun optimizer () (optim:sgd :lr 0.01))
(defrun :epochs epochs)
EOF
RUNFILE=$TMP/knobs.lisp

# ---- item 3: numeric flags, each with a handful of malformed numbers -----------------------

# fuzz FLAG RANGE-REGEX VERB-AND-ARGS... -- VALUES...: each value is a usage
# error (exit 2) whose message names the flag and its range; no run directory.
fuzz() {
  local flag=$1 range=$2
  shift 2
  local args=()
  while [ "$1" != "--" ]; do args+=("$1"); shift; done
  shift
  for v in "$@"; do
    rm -rf "$SEXPGPU_RUNS"
    "$BIN" "${args[@]}" "$flag" "$v" >"$TMP/out" 2>"$TMP/err"
    expect "range $flag '$v'" 2 $? "^$flag: .*$range" "$TMP/err"
    [ -e "$SEXPGPU_RUNS" ] && { echo "FAIL range $flag '$v' wrote $SEXPGPU_RUNS"; fail=$((fail + 1)); }
  done
}
MAX='9223372036854775807 \(2\^63-1\)'
fuzz --steps 'at least 1' run "$RUNFILE" -- -5 0 99999999999999999999 9223372036854775808 1.5 0x10 1e3 abc '' ' 3'
fuzz --seed "0 to $MAX" run "$RUNFILE" -- -1 9223372036854775808 99999999999999999999 2.0 0x1 seed
fuzz --threads '0 to 4096' run "$RUNFILE" -- -1 4097 99999999999999999999 1.5 many
for verb in check explain ir; do
  fuzz --eval-steps 'at least 1' $verb "$RUNFILE" -- 0 -1 99999999999999999999 1e7 x
  fuzz --eval-depth '1 to 4294967295' $verb "$RUNFILE" -- 0 -3 4294967296 1.5
  fuzz --eval-heap 'at least 1' $verb "$RUNFILE" -- 0 -1 1GiB 99999999999999999999
  fuzz --ir-nodes 'at least 1' $verb "$RUNFILE" -- 0 -7 100k 99999999999999999999
done
fuzz --eval-steps 'at least 1' eval -e 1 -- 0 -1 1.5
fuzz --eval-depth '1 to 4294967295' variants "$RUNFILE" -- 0 4294967296
fuzz --eval-heap 'at least 1' doctor "$RUNFILE" -- 0 -1

# --device: a malformed ordinal is a usage error, not an internal error.
for d in cuda:99999999999 cuda:-1 cuda: cuda:1.5 'CU DA'; do
  "$BIN" run "$RUNFILE" --device "$d" >"$TMP/out" 2>"$TMP/err"
  expect "device '$d'" 2 $? "^--device: " "$TMP/err"
done

# In range: a run of 2 steps with seed 0 and the largest seed.
"$BIN" run "$RUNFILE" --steps 2 --seed 0 --quiet >"$TMP/out" 2>"$TMP/err"
expect steps-in-range 0 $? "finished at step 2/2" "$TMP/out"
"$BIN" run "$RUNFILE" --steps 1 --seed 9223372036854775807 --quiet >"$TMP/out" 2>"$TMP/err"
expect seed-max 0 $? "finished at step 1/1" "$TMP/out"

# Knob values: an integer literal past 64 bits is E-OVERFLOW, not "not a literal".
"$BIN" check "$RUNFILE" --set width=99999999999999999999999 >"$TMP/out" 2>"$TMP/err"
expect set-overflow 1 $? "E-OVERFLOW --set width=99999999999999999999999" "$TMP/out"
grep -q "not one Lisp literal" "$TMP/out" && { echo "FAIL set-overflow says not a literal"; fail=$((fail + 1)); }
"$BIN" check "$RUNFILE" --set 'width=(1' >"$TMP/out" 2>"$TMP/err"
expect set-not-literal 1 $? "E-KNOB-TYPE --set width=\(1: not one Lisp literal" "$TMP/out"

# Derived counts: 2^62 epochs of 2 batches overflow the step count.
rm -rf "$SEXPGPU_RUNS"
"$BIN" run "$RUNFILE" --set epochs=4611686018427387904 >"$TMP/out" 2>"$TMP/err"
expect epochs-overflow 1 $? "E-OVERFLOW :epochs 4611686018427387904 times 2 batches" "$TMP/err"
[ -e "$SEXPGPU_RUNS" ] && { echo "FAIL epochs-overflow wrote a run directory"; fail=$((fail + 1)); }
"$BIN" check "$RUNFILE" --set epochs=9223372036854775807 >"$TMP/out" 2>"$TMP/err"
expect epochs-overflow-check 1 $? "E-OVERFLOW" "$TMP/out"
"$BIN" check "$RUNFILE" --set epochs=-3 >"$TMP/out" 2>"$TMP/err"
expect epochs-negative 1 $? "E-RUN-KEY :epochs must be a positive integer" "$TMP/out"

# defrun values out of range are the file's diagnostics.
sed 's/(defrun :epochs epochs)/(defrun :steps 2 :microbatches 1000000)/' "$RUNFILE" >"$TMP/micro.lisp"
"$BIN" check "$TMP/micro.lisp" >"$TMP/out" 2>"$TMP/err"
expect microbatches-range 1 $? "E-RUN-KEY :microbatches 1000000 is above 65536" "$TMP/out"
for b in 1023 2147483649 1.5e6; do
  sed "s/(defrun :epochs epochs)/(defrun :steps 2 :bucket-bytes $b)/" "$RUNFILE" >"$TMP/bucket.lisp"
  "$BIN" check "$TMP/bucket.lisp" >"$TMP/out" 2>"$TMP/err"
  expect "bucket-bytes-$b" 1 $? "E-RUN-KEY :bucket-bytes must be an integer from 1024 to 2147483648" "$TMP/out"
done
sed 's/(defrun :epochs epochs)/(defrun :steps 2 :bucket-bytes 1024)/' "$RUNFILE" >"$TMP/bucket.lisp"
"$BIN" check "$TMP/bucket.lisp" >"$TMP/out" 2>"$TMP/err"
expect bucket-bytes-min 0 $?
sed 's/(defrun :epochs epochs)/(defrun :steps 2 :seed -1)/' "$RUNFILE" >"$TMP/seed.lisp"
"$BIN" check "$TMP/seed.lisp" >"$TMP/out" 2>"$TMP/err"
expect defrun-seed 1 $? "E-RUN-KEY :seed must be a non-negative integer" "$TMP/out"

# The memory plan against the device: E-MEMORY at the start, naming need and
# have, before the run directory is written; doctor FILE says the same.
rm -rf "$SEXPGPU_RUNS"
"$BIN" run "$RUNFILE" --set width=1000000000000 --device cpu --json >"$TMP/out" 2>"$TMP/err"
expect memory-run 3 $? "E-MEMORY the memory plan needs [0-9]+ bytes \([0-9.]+ TiB.*device cpu has [0-9]+ bytes" "$TMP/err"
[ -e "$SEXPGPU_RUNS" ] && { echo "FAIL memory-run wrote a run directory"; fail=$((fail + 1)); }
tail -1 "$TMP/out" >"$TMP/close.json"
check memory-run-close '.kind == "close" and .state == "failed" and .exit_code == 3 and .error.code == "E-MEMORY"' "$TMP/close.json"
"$BIN" doctor "$RUNFILE" --set width=1000000000000 >"$TMP/out" 2>"$TMP/err"
expect memory-doctor 5 $? "E-MEMORY the memory plan needs" "$TMP/err" "does not fit" "$TMP/out"
"$BIN" doctor "$RUNFILE" --json >"$TMP/out" 2>"$TMP/err"
expect doctor-file 0 $?
check doctor-file-json '.file.memory.ok and .file.memory.need_bytes > 0 and .file.memory.have_bytes > .file.memory.need_bytes and (.file.data | length) == 1 and .file.problems == []' "$TMP/out"
"$BIN" doctor "$TMP/missing.lisp" >"$TMP/out" 2>"$TMP/err"
expect doctor-missing 2 $? "no such file" "$TMP/err"

# ---- item 5: a refused run leaves nothing that blocks the corrected command ---------------

rm -rf "$SEXPGPU_RUNS"
"$BIN" run "$RUNFILE" --steps 2 --sink nosuch >"$TMP/out" 2>"$TMP/err"
expect sink-refused 3 $? "E-IO --sink nosuch: no sink plugin named 'nosuch'" "$TMP/err"
[ -e "$SEXPGPU_RUNS/knobs.steps=2/events.jsonl" ] && { echo "FAIL sink-refused left events.jsonl"; fail=$((fail + 1)); }
"$BIN" run "$RUNFILE" --steps 2 --quiet >"$TMP/out" 2>"$TMP/err"
expect sink-corrected 0 $? "finished at step 2/2" "$TMP/out"
# A directory whose run never reached `open` (it failed while compiling for
# its device) is taken as empty; one whose run opened is kept.
D=$TMP/never-opened
mkdir -p "$D"
printf '{"kind":"close","time":"2026-01-01T00:00:00.000Z","state":"failed","exit_code":3}\n' >"$D/events.jsonl"
printf '{"state":"failed","exit_code":3,"pid":1,"host":"elsewhere"}\n' >"$D/status.json"
"$BIN" run "$RUNFILE" --steps 2 --out "$D" --quiet >"$TMP/out" 2>"$TMP/err"
expect never-opened 0 $? "finished at step 2/2" "$TMP/out"
check never-opened-events '(map(.kind) | .[0] == "open" and (map(select(. == "close")) | length) == 1)' <(jq -s . "$D/events.jsonl")
"$BIN" run "$RUNFILE" --steps 2 --out "$D" >"$TMP/out" 2>"$TMP/err"
expect opened-kept 2 $? "E-RUN-EXISTS" "$TMP/err"

# Rank variables that are incomplete or malformed are a usage error before
# the run directory (a launcher's N processes would otherwise each train a
# full copy into it); tests/e2e/ranks.sh trains across processes.
for launch in SEXPGPU_WORLD_SIZE=2 WORLD_SIZE=4 SLURM_NTASKS=2 WORLD_SIZE=two; do
  env "$launch" "$BIN" run "$RUNFILE" --steps 2 --out "$TMP/world" >"$TMP/out" 2>"$TMP/err"
  expect "world-$launch" 2 $? "^sexpgpu run: E-WORLD " "$TMP/err" "fix: " "$TMP/err"
  [ -e "$TMP/world" ] && { echo "FAIL world-$launch: the run directory was written"; fail=$((fail + 1)); }
done
SEXPGPU_WORLD_SIZE=1 WORLD_SIZE=4 "$BIN" run "$RUNFILE" --steps 2 --out "$TMP/world1" --quiet >"$TMP/out" 2>"$TMP/err"
expect world-size-1-wins 0 $? "finished at step 2/2" "$TMP/out"
for flags in "--ranks 0" "--ranks 1025" "--gpus 0" "--gpus x" "--device cuda:0,0" "--device cuda:0,x"; do
  "$BIN" run "$RUNFILE" --steps 2 $flags --out "$TMP/world" >"$TMP/out" 2>"$TMP/err"
  expect "range-$flags" 2 $?
done
"$BIN" run "$RUNFILE" --steps 2 --gpus 2 --ranks 2 --out "$TMP/world" --json >"$TMP/out" 2>"$TMP/err"
expect gpus-and-ranks 2 $? "E-WORLD --gpus 2 starts a rank on each" "$TMP/err"
check gpus-and-ranks-close '.kind == "close" and .exit_code == 2 and .error.code == "E-WORLD"' "$TMP/out"
[ -e "$TMP/world" ] && { echo "FAIL several-devices: the run directory was written"; fail=$((fail + 1)); }

# ---- item 6: the command line ---------------------------------------------------------------

"$BIN" chek "$RUNFILE" >"$TMP/out" 2>"$TMP/err"
expect unknown-verb 2 $? "^sexpgpu: unknown verb 'chek'; did you mean 'check'\?" "$TMP/err" "the verbs: .*check.*run.*doctor" "$TMP/err"
grep -q "not expected" "$TMP/err" && { echo "FAIL unknown-verb: CLI11's message"; fail=$((fail + 1)); }
"$BIN" --quiet frobnicate >"$TMP/out" 2>"$TMP/err"
expect unknown-verb-far 2 $? "^sexpgpu: unknown verb 'frobnicate'$" "$TMP/err"

for verb in check explain ir variants run eval fmt doctor; do
  "$BIN" $verb "$TMP/missing.lisp" >"$TMP/out" 2>"$TMP/err"
  expect "missing-file $verb" 2 $? "missing.lisp: no such file" "$TMP/err"
done
"$BIN" annotate "$TMP/no-run" "note" >"$TMP/out" 2>"$TMP/err"
expect missing-run-annotate 2 $? "no such run directory" "$TMP/err"
"$BIN" status "$TMP/no-run" >"$TMP/out" 2>"$TMP/err"
expect missing-run-status 2 $? "no-run: no such run directory" "$TMP/err"
"$BIN" checkpoint list "$TMP/no-run" >"$TMP/out" 2>"$TMP/err"
expect missing-run-checkpoint 2 $? "no-run: no such" "$TMP/err"

# --json on eval, fmt, docs and annotate: one JSON document on stdout.
"$BIN" eval -e '(values (+ 1 2) "a")' --json >"$TMP/out" 2>"$TMP/err"
expect eval-json 0 $?
check eval-json-doc '.values == ["3", "\"a\""] and .diagnostics == []' "$TMP/out"
"$BIN" eval -e '(car 3)' --json >"$TMP/out" 2>"$TMP/err"
expect eval-json-error 1 $?
check eval-json-error-doc '.values == [] and .diagnostics[0].code == "E-TYPE"' "$TMP/out"
printf '(+ 1\n   2)' >"$TMP/fmt.lisp"
"$BIN" fmt --check --json "$TMP/fmt.lisp" >"$TMP/out" 2>"$TMP/err"
expect fmt-json 1 $?
check fmt-json-doc '.[0].file != null and .[0].changed == true and .[0].diagnostics == []' "$TMP/out"
"$BIN" fmt --stdout "$TMP/fmt.lisp" >"$TMP/formatted" 2>"$TMP/err"
"$BIN" fmt --stdout --json "$TMP/fmt.lisp" >"$TMP/out" 2>"$TMP/err"
check fmt-json-text ".[0].text == $(jq -Rs . "$TMP/formatted")" "$TMP/out"
"$BIN" docs cli --json >"$TMP/out" 2>"$TMP/err"
expect docs-json 0 $?
check docs-json-page '.page == "cli" and (.text | startswith("# The command line"))' "$TMP/out"
"$BIN" docs E-MEMORY --json >"$TMP/out" 2>"$TMP/err"
check docs-json-code '.code == "E-MEMORY" and (.text | startswith("## E-MEMORY"))' "$TMP/out"
"$BIN" docs --list --json >"$TMP/out" 2>"$TMP/err"
check docs-json-list '(.pages | index("cli")) != null' "$TMP/out"
"$BIN" run "$RUNFILE" --steps 1 --out "$TMP/annotated" --quiet >/dev/null 2>&1
"$BIN" annotate "$TMP/annotated" "lr looked high" --data '{"lr":0.1}' --json >"$TMP/out" 2>"$TMP/err"
expect annotate-json 0 $?
check annotate-json-event '.kind == "annotation" and .text == "lr looked high" and .data.lr == 0.1 and .step == 1' "$TMP/out"

# explain --json that fails prints check --json's diagnostics list.
printf '(defun f (x) x)\n(f 1 2)\n' >"$TMP/bad.lisp"
"$BIN" explain "$TMP/bad.lisp" --json >"$TMP/out" 2>"$TMP/err"
expect explain-json-fails 1 $?
check explain-json-diagnostics 'type == "array" and .[0].code == "E-ARITY" and .[0].line == 2 and has(0)' "$TMP/out"
"$BIN" explain "$TMP/missing.lisp" --json >"$TMP/out" 2>"$TMP/err"
check explain-json-missing '.[0].code == "E-IO" and (.[0].message | endswith("no such file"))' "$TMP/out"
# So does every verb that reads a run file, for a file it cannot read, and
# ir for a file with errors.
for verb in check ir watch "diff $RUNFILE"; do
  "$BIN" $verb "$TMP/missing.lisp" --json >"$TMP/out" 2>"$TMP/err"
  expect "json-missing-${verb%% *}" 2 $?
  check "json-missing-${verb%% *}-doc" '.[0].code == "E-IO" and .[0].file != null and (.[0].message | endswith("no such file"))' "$TMP/out"
done
"$BIN" ir "$TMP/bad.lisp" --json >"$TMP/out" 2>"$TMP/err"
expect ir-json-fails 1 $?
check ir-json-diagnostics 'type == "array" and .[0].code == "E-ARITY" and .[0].line == 2' "$TMP/out"

# run --json that fails: every line an event, the last a close with the error.
"$BIN" run "$TMP/bad.lisp" --json >"$TMP/out" 2>"$TMP/err"
expect run-json-file-errors 1 $?
tail -1 "$TMP/out" >"$TMP/close.json"
check run-json-close '.kind == "close" and .state == "failed" and .exit_code == 1 and .error.code == "E-ARITY" and .error.diagnostics[0].line == 2' "$TMP/close.json"
rm -rf "$SEXPGPU_RUNS"
"$BIN" run "$RUNFILE" --steps 2 --sink nosuch --json >"$TMP/out" 2>"$TMP/err"
expect run-json-sink 3 $?
check run-json-sink-close '.kind == "close" and .error.code == "E-IO"' <(tail -1 "$TMP/out")
"$BIN" run "$RUNFILE" --steps 2 --out "$D" --json >"$TMP/out" 2>"$TMP/err"
expect run-json-exists 2 $?
check run-json-exists-close '.kind == "close" and .exit_code == 2 and .error.code == "E-RUN-EXISTS"' <(tail -1 "$TMP/out")
jq -e . "$TMP/out" >/dev/null 2>&1 || { echo "FAIL run-json lines are not JSON"; fail=$((fail + 1)); }

# --quiet is global: before or after the verb, on any verb.
for where in before after; do
  rm -rf "$SEXPGPU_RUNS"
  if [ $where = before ]; then
    "$BIN" --quiet run "$RUNFILE" --steps 2 >"$TMP/out" 2>"$TMP/err"
  else
    "$BIN" run "$RUNFILE" --steps 2 --quiet >"$TMP/out" 2>"$TMP/err"
  fi
  expect "quiet-$where" 0 $? "finished" "$TMP/out"
  [ -s "$TMP/err" ] && { echo "FAIL quiet-$where: standard error has"; head -3 "$TMP/err"; fail=$((fail + 1)); }
done
printf '(warn "careful")\n' >"$TMP/warn.lisp"
"$BIN" --quiet eval "$TMP/warn.lisp" -e 1 >"$TMP/out" 2>"$TMP/err"
expect quiet-eval 0 $?
[ -s "$TMP/err" ] && { echo "FAIL quiet-eval: a warning on standard error"; fail=$((fail + 1)); }
"$BIN" eval "$TMP/warn.lisp" -e 1 >"$TMP/out" 2>"$TMP/err"
expect not-quiet-eval 0 $? "W-USER careful" "$TMP/err"

echo "cli_ranges: $pass passed, $fail failed"
[ $fail -eq 0 ]
