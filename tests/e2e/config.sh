#!/usr/bin/env bash
# End-to-end tests of the config file and the effective settings
# (docs/environment.md, docs/doctor.md): a malformed file is E-CONFIG at its
# line and column (exit 2), an unknown key a warning, and each setting of
# the file is used by run and doctor and loses to the environment and the
# flags. The full example of docs/environment.md is fed to the binary, and
# doctor's settings table is compared with docs/doctor.md's.
# Usage: config.sh PATH/TO/sexpgpu SOURCE_DIR TEST_PLUGIN_DIR
set -u
BIN=$1
SRC=$2
TESTPLUGINS=$3
command -v jq >/dev/null || { echo "SKIP: jq is not installed (scripts/install-deps.sh)"; exit 77; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
pass=0
fail=0

check() {  # check NAME CONDITION-EXIT-STATUS [detail file]
  if [ "$2" -eq 0 ]; then
    pass=$((pass + 1))
  else
    echo "FAIL $1"
    [ $# -ge 3 ] && sed 's/^/    /' "$3" | head -40
    fail=$((fail + 1))
  fi
}
jq_is() {  # jq_is NAME FILE FILTER: the filter yields true
  [ "$(jq -r "$3" "$2" 2>/dev/null)" = "true" ]
  check "$1" $? "$2"
}

# A clean slate: no setting from the caller's environment or home.
unset SEXPGPU_CONFIG SEXPGPU_RUNS SEXPGPU_DEVICE SEXPGPU_PLUGIN_PATH SEXPGPU_LOG \
  AWS_ENDPOINT_URL AWS_REGION AWS_PROFILE SEXPGPU_TEST_DEVICE_AVAILABLE
export HOME="$TMP/home"
mkdir -p "$HOME"
cd "$TMP" || exit 1
FILE="$SRC/examples/smallest.lisp"
CFG="$TMP/config.toml"
export SEXPGPU_CONFIG="$CFG"

# No config file at the default path: fine, every setting its default.
env -u SEXPGPU_CONFIG "$BIN" doctor --json >"$TMP/out" 2>"$TMP/err"
check no-config-exit-0 $? "$TMP/err"
jq_is no-config-located "$TMP/out" \
  ".config == {\"path\": \"$HOME/.config/sexpgpu/config.toml\", \"source\": \"default\", \"present\": false}"
jq_is no-config-defaults "$TMP/out" \
  '[.settings[] | [.name, .value, .source]] == [["runs.dir", "runs", "default"], ["device", "auto", "default"], ["plugins.path", "the build tree'"'"'s, then the installed", "default"], ["log.level", "warn", "default"], ["s3.endpoint", null, "default"], ["s3.region", null, "default"], ["s3.profile", "default", "default"]]'

# Malformed: E-CONFIG FILE:LINE:COL, exit 2, for every verb that reads settings.
printf '[runs]\ndir = \n' >"$CFG"
for verb in doctor "check $FILE" "ir $FILE" "explain $FILE" "run $FILE --steps 1"; do
  # shellcheck disable=SC2086
  "$BIN" $verb >"$TMP/out" 2>"$TMP/err"
  rc=$?
  name=${verb%% *}
  check "malformed-$name-exit-2" $((rc != 2)) "$TMP/err"
  grep -qF "sexpgpu $name: E-CONFIG $CFG:2:7: " "$TMP/err"
  check "malformed-$name-line-col" $? "$TMP/err"
done
[ ! -e "$TMP/runs" ]
check malformed-run-writes-nothing $?
"$BIN" run "$FILE" --steps 1 --json >"$TMP/out" 2>"$TMP/err"
jq_is malformed-run-json-close "$TMP/out" '.kind == "close" and .exit_code == 2 and .error.code == "E-CONFIG"'
# The verbs that need no setting ignore the file.
"$BIN" fmt --check "$FILE" >"$TMP/out" 2>"$TMP/err"
check malformed-fmt-ignores $? "$TMP/err"
"$BIN" docs environment >/dev/null 2>"$TMP/err"
check malformed-docs-ignores $? "$TMP/err"
# A wrong type and a wrong level, at the value.
printf '[runs]\ndir = 3\n' >"$CFG"
"$BIN" doctor >/dev/null 2>"$TMP/err"
check wrong-type-exit-2 $(($? != 2)) "$TMP/err"
grep -qxF "sexpgpu doctor: E-CONFIG $CFG:2:7: [runs] dir is an integer; it takes a string" "$TMP/err"
check wrong-type-message $? "$TMP/err"
printf '[log]\nlevel = "loud"\n' >"$CFG"
"$BIN" doctor >/dev/null 2>"$TMP/err"
check wrong-level-exit-2 $(($? != 2)) "$TMP/err"
grep -qF "E-CONFIG $CFG:2:9: [log] level is \"loud\"" "$TMP/err"
check wrong-level-message $? "$TMP/err"
# SEXPGPU_CONFIG names a file that is not there.
SEXPGPU_CONFIG="$TMP/absent.toml" "$BIN" doctor >/dev/null 2>"$TMP/err"
check named-missing-exit-2 $(($? != 2)) "$TMP/err"
grep -qxF "sexpgpu doctor: E-CONFIG $TMP/absent.toml: no such file (named by SEXPGPU_CONFIG)" "$TMP/err"
check named-missing-message $? "$TMP/err"
: >"$CFG"
# A log level that is none is skipped with a warning: the verb goes on,
# with the config file's [log] level next.
printf '[log]\nlevel = "info"\n' >"$CFG"
SEXPGPU_LOG=loud "$BIN" doctor >/dev/null 2>"$TMP/err"
check bad-log-env-exit-0 $(($? != 0)) "$TMP/err"
grep -qF "warning: SEXPGPU_LOG=loud is not a log level" "$TMP/err"
check bad-log-env-message $? "$TMP/err"
grep -q "info\] " "$TMP/err"
check bad-log-env-config-level $? "$TMP/err"
SEXPGPU_LOG=loud "$BIN" doctor --json 2>/dev/null | jq -e '.settings[] | select(.name == "log.level") | .value == "info" and .source == "config file"' >/dev/null
check bad-log-env-table $? "$TMP/err"
: >"$CFG"

# Unknown keys and tables: W-CONFIG on standard error, the verb works; a
# credential is ignored and its value never shown.
printf '[runs]\ndir = "runs"\ndri = "x"\n[colours]\nmode = 1\n[s3]\nsecret_access_key = "wJalrXUtnSECRET"\n' >"$CFG"
"$BIN" doctor >"$TMP/out" 2>"$TMP/err"
check unknown-key-exit-0 $? "$TMP/err"
grep -qxF "sexpgpu doctor: W-CONFIG $CFG:3:1: unknown key [runs] dri (ignored); [runs] has dir" "$TMP/err"
check unknown-key-warning $? "$TMP/err"
grep -qF "W-CONFIG $CFG:4:1: unknown table [colours]" "$TMP/err"
check unknown-table-warning $? "$TMP/err"
grep -qF "W-CONFIG $CFG:7:1: [s3] secret_access_key is ignored" "$TMP/err"
check secret-key-warning $? "$TMP/err"
"$BIN" doctor --json >>"$TMP/out" 2>>"$TMP/err"
! grep -q "wJalrXUtnSECRET" "$TMP/out" "$TMP/err"
check secret-never-shown $?
"$BIN" doctor --quiet >/dev/null 2>"$TMP/err"
! grep -q "W-CONFIG" "$TMP/err"
check quiet-no-warning $? "$TMP/err"

# [runs] dir: used by run when SEXPGPU_RUNS is unset, and overridden by it.
printf '[runs]\ndir = "%s/cfgruns"\n' "$TMP" >"$CFG"
"$BIN" run "$FILE" --steps 2 --quiet >"$TMP/out" 2>"$TMP/err"
check runs-dir-run-exit-0 $? "$TMP/err"
[ -f "$TMP/cfgruns/smallest.steps=2/events.jsonl" ]
check runs-dir-from-config $?
SEXPGPU_RUNS="$TMP/envruns" "$BIN" run "$FILE" --steps 2 --quiet >"$TMP/out" 2>"$TMP/err"
check runs-dir-env-exit-0 $? "$TMP/err"
[ -f "$TMP/envruns/smallest.steps=2/events.jsonl" ]
check runs-dir-env-wins $?
"$BIN" doctor "$FILE" --json >"$TMP/out" 2>"$TMP/err"
jq_is runs-dir-doctor "$TMP/out" \
  ".file.disk.dir == \"$TMP/cfgruns\" and (.settings[0] | .name == \"runs.dir\" and .source == \"config file\" and .origin == \"$CFG:2:1\")"
# A run directory under a file cannot be made: doctor FILE says why, exit 5.
: >"$TMP/afile"
printf '[runs]\ndir = "%s/afile/runs"\n' "$TMP" >"$CFG"
"$BIN" doctor "$FILE" >"$TMP/out" 2>"$TMP/err"
check runs-dir-unusable-exit-5 $(($? != 5)) "$TMP/err"
grep -qxF "sexpgpu doctor: E-IO $TMP/afile/runs: run directories cannot be created there ($TMP/afile is not a directory)" "$TMP/err"
check runs-dir-unusable-reason $? "$TMP/err"

# [device] default: in doctor's table from the config file, losing to
# SEXPGPU_DEVICE and to --device; winning over defrun :device; used by run.
printf '[device]\ndefault = "cpu"\n' >"$CFG"
device_is() {  # device_is NAME VALUE SOURCE ORIGIN [ENV...] -- ARGS...
  local name=$1 value=$2 source=$3 origin=$4
  shift 4
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  env "${envs[@]}" "$BIN" doctor --json "$@" >"$TMP/out" 2>"$TMP/err"
  jq_is "$name" "$TMP/out" \
    ".settings | any(.name == \"device\" and .value == \"$value\" and .source == \"$source\" and .origin == \"$origin\")"
}
device_is device-config cpu "config file" "$CFG:2:1" --
device_is device-env-wins auto environment SEXPGPU_DEVICE SEXPGPU_DEVICE=auto --
device_is device-flag-wins cuda:1 flag --device SEXPGPU_DEVICE=auto -- --device cuda:1
printf '(require "sexpgpu/nn")\n(require "sexpgpu/optim")\n(defloader train :source (synthetic :regression :features 2 :examples 8 :seed 1) :batch 4)\n(defmodel net (x) (nn:linear x 1 :name "fc"))\n(defun objective (batch ctx) (mse (net (getf batch :x)) (getf batch :y)))\n(defun optimizer () (optim:sgd :lr 0.1))\n(defrun :steps 1 :device :cuda)\n' >"$TMP/cudafile.lisp"
device_is device-config-over-run-file cpu "config file" "$CFG:2:1" -- "$TMP/cudafile.lisp"
jq_is device-config-doctor-file "$TMP/out" ".file.device == \"cpu\" and .file.device_from == \"config file $CFG:2:1\""
SEXPGPU_CONFIG="$TMP/empty.toml"
: >"$SEXPGPU_CONFIG"
device_is device-run-file cuda "run file" "defrun :device" -- "$TMP/cudafile.lisp"
SEXPGPU_CONFIG="$CFG"
printf '[device]\ndefault = "bogus"\n' >"$CFG"
"$BIN" run "$FILE" --steps 1 --out "$TMP/bogus" >"$TMP/out" 2>"$TMP/err"
check device-run-uses-config $(($? != 3)) "$TMP/err"
grep -qF "no device plugin named 'bogus'" "$TMP/err"
check device-run-names-config-device $? "$TMP/err"
"$BIN" run "$FILE" --steps 1 --out "$TMP/flagged" --device cpu --quiet >"$TMP/out" 2>"$TMP/err"
check device-run-flag-wins $? "$TMP/err"

# [plugins] path: searched after SEXPGPU_PLUGIN_PATH, before the build tree.
printf '[plugins]\npath = ["%s"]\n' "$TESTPLUGINS" >"$CFG"
"$BIN" doctor --json >"$TMP/out" 2>"$TMP/err"
jq_is plugins-config-searched "$TMP/out" \
  ".search_path[0] == {\"dir\": \"$TESTPLUGINS\", \"source\": \"config file\"} and (.plugins | any(.name == \"test-device\" and .status == \"loaded\"))"
mkdir -p "$TMP/mine"
SEXPGPU_PLUGIN_PATH="$TMP/mine" "$BIN" doctor --json >"$TMP/out" 2>"$TMP/err"
jq_is plugins-env-first "$TMP/out" \
  "[.search_path[0:2][] | .source] == [\"SEXPGPU_PLUGIN_PATH\", \"config file\"] and ([.settings[] | select(.name == \"plugins.path\") | .source] == [\"environment\", \"config file\"])"
# check finds a reducer plugin on the config's path, as run would.
sed 's/^(defrun/(defdiagnostic odd :over :params :value (lambda (p) p) :reduce (:fails))\n(defrun/' \
  "$FILE" >"$TMP/diag.lisp"
printf '[plugins]\npath = "%s"\n' "$TESTPLUGINS" >"$CFG"
"$BIN" check "$TMP/diag.lisp" >/dev/null 2>"$TMP/err"
check plugins-config-check-finds-reducer $? "$TMP/err"
: >"$CFG"
"$BIN" check "$TMP/diag.lisp" >"$TMP/err" 2>&1
check plugins-without-config-refused $(($? != 1)) "$TMP/err"
grep -q "E-DIAG-REDUCER defdiagnostic odd: :reduce names 'fails'" "$TMP/err"
check plugins-without-config-says-why $? "$TMP/err"

# NCCL: its version where libnccl.so.2 loads, else why not.
"$BIN" doctor --json >"$TMP/out" 2>"$TMP/err"
jq_is nccl-shape "$TMP/out" \
  '(.nccl.available and (.nccl.version | test("^[0-9]+\\.[0-9]+\\.[0-9]+$")) and (.nccl.library | length > 0)) or (.nccl.available == false and (.nccl.reason | length > 0))'
"$BIN" doctor >"$TMP/out" 2>"$TMP/err"
grep -qE '^nccl: ([0-9]+\.[0-9]+\.[0-9]+ \(.+\)|not available: .+)$' "$TMP/out"
check nccl-human $? "$TMP/out"

# The full example of docs/environment.md, at the default path: no
# warning, every value from the file; SEXPGPU_RUNS beats its [runs] dir.
# doctor's settings table is then exactly docs/doctor.md's example.
unset SEXPGPU_CONFIG
mkdir -p "$HOME/.config/sexpgpu"
awk '/^## The config file/ {on = 1} on && /^```toml$/ {inside = 1; next} inside && /^```$/ {exit} inside' \
  "$SRC/docs/environment.md" >"$HOME/.config/sexpgpu/config.toml"
[ -s "$HOME/.config/sexpgpu/config.toml" ]
check docs-example-found $?
SEXPGPU_RUNS=/scratch/runs "$BIN" doctor >"$TMP/out" 2>"$TMP/err"
check docs-example-exit-0 $? "$TMP/err"
! grep -q "W-CONFIG" "$TMP/err"
check docs-example-no-warning $? "$TMP/err"
awk '/^settings:$/ {on = 1} on && /^$/ {exit} on' "$TMP/out" | sed "s|$HOME|/home/me|g" >"$TMP/table"
awk '/^settings:$/ {on = 1} on && /^```$/ {exit} on' "$SRC/docs/doctor.md" >"$TMP/doc-table"
[ -s "$TMP/doc-table" ] && diff "$TMP/doc-table" "$TMP/table" >"$TMP/diff"
check docs-doctor-table-matches $? "$TMP/diff"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
