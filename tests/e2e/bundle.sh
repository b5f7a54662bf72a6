#!/usr/bin/env bash
# sexpgpu bundle end to end (docs/bundle.md): a bundle of examples/mlp.lisp
# copied elsewhere runs from run.sh, is stopped with SIGTERM after its first
# checkpoint, is started again and ends with the bytes of a run never
# stopped; a changed file is refused by name; --no-data finds the data by the
# usual lookup; another version warns, another IR refuses; modules keep
# their places; what cannot travel is refused.
# Usage: bundle.sh SEXPGPU SOURCE_DIR
set -u
# Absolute: run.sh is started from other directories.
BIN=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
SRC=$(cd "$2" && pwd)
DATA=/usr/share/datasets/fashion-mnist
if [ ! -e "$DATA/train-images-idx3-ubyte.gz" ]; then
  echo "SKIP: no Fashion-MNIST in $DATA (Debian's dataset-fashion-mnist)"
  exit 77
fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
unset SEXPGPU_RUNS SEXPGPU_DATA SEXPGPU_MODULE_PATH SEXPGPU_CONFIG
export HOME=$TMP/home  # no config file of the machine's
mkdir -p "$HOME" "$TMP/bin"
# run.sh finds sexpgpu on PATH; exec keeps the signals and the exit code.
printf '#!/bin/sh\nexec "%s" "$@"\n' "$BIN" >"$TMP/bin/sexpgpu"
chmod +x "$TMP/bin/sexpgpu"
export PATH=$TMP/bin:$PATH
fail=0

# expect NAME WANT_RC GOT_RC [REGEX FILE]...
expect() {
  local name=$1 want=$2 got=$3
  shift 3
  if [ "$got" -ne "$want" ]; then
    echo "FAIL $name: exit $got, expected $want"; cat "$TMP/err" 2>/dev/null | head -5
    fail=$((fail + 1)); return
  fi
  while [ $# -ge 2 ]; do
    if ! grep -q -- "$1" "$2"; then
      echo "FAIL $name: no '$1' in $2:"; cat "$2"; fail=$((fail + 1)); return
    fi
    shift 2
  done
  echo "ok   $name"
}
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; fail=$((fail + 1)); }
# toml FILE EXPR: a Python expression over the parsed bundle.toml `t` (and
# the bundle directory `d`) must be true.
toml() {
  python3 - "$1" "$2" <<'PY'
import hashlib, os, sys, tomllib
d = os.path.dirname(sys.argv[1])
t = tomllib.load(open(sys.argv[1], "rb"))
sha = lambda p: hashlib.sha256(open(os.path.join(d, p), "rb").read()).hexdigest()
sys.exit(0 if eval(sys.argv[2]) else 1)
PY
}

VERSION=$("$BIN" --version | awk '{print $2}')
# A narrow MLP keeps it short; checkpoints at 1000 (defrun's :every) and at the end.
STEPS=2500

# ---- a bundle with its data, moved, preempted and resumed ----------------------------------
mkdir "$TMP/made"
"$BIN" bundle "$SRC/examples/mlp.lisp" --variant quick --set width=64 -o "$TMP/made/mlp" >"$TMP/out" 2>"$TMP/err"
expect bundle-made 0 $? "bundle .*mlp: mlp.quick.width=64" "$TMP/out" "data copied in" "$TMP/out"
B0=$TMP/made/mlp
for f in bundle.toml ir.json run.sh src/mlp.lisp src/fashion-mnist/train-images-idx3-ubyte.gz \
  src/fashion-mnist/train-labels-idx1-ubyte.gz src/fashion-mnist/t10k-images-idx3-ubyte.gz \
  src/fashion-mnist/t10k-labels-idx1-ubyte.gz; do
  [ -f "$B0/$f" ] || bad "bundle-files: no $f"
done
[ -x "$B0/run.sh" ] && ok bundle-run-sh-executable || bad "bundle-run-sh-executable"
ls "$TMP/made" | grep -q partial && bad "bundle-no-partial: a temporary directory is left" || ok bundle-no-partial
cmp -s "$SRC/examples/mlp.lisp" "$B0/src/mlp.lisp" && ok bundle-run-file-as-is || bad "bundle-run-file-as-is"
toml "$B0/bundle.toml" "t['sexpgpu_version'] == '$VERSION' and t['slug'] == 'mlp.quick.width=64' and t['run_file'] == 'src/mlp.lisp' and t['selection'] == {'variants': ['quick'], 'sets': ['width=64'], 'point': ''} and t['data_bundled'] and t['format'] == 1" &&
  ok bundle-toml-selection || bad "bundle-toml-selection"
toml "$B0/bundle.toml" "all(os.path.getsize(os.path.join(d, f['path'])) == f['size'] and sha(f['path']) == f['sha256'] for f in t['files']) and sorted(f['path'] for f in t['files']) == sorted(['ir.json', 'src/mlp.lisp'] + ['src/fashion-mnist/' + n for n in os.listdir(d + '/src/fashion-mnist')])" &&
  ok bundle-toml-checksums || bad "bundle-toml-checksums"
toml "$B0/bundle.toml" "len(t['data']) == 4 and all(e['sha256'] == hashlib.sha256(open('$DATA/' + e['source'].split('/')[-1], 'rb').read()).hexdigest() and e['size'] == os.path.getsize('$DATA/' + e['source'].split('/')[-1]) and e['path'] == 'src/' + e['source'] for e in t['data']) and {e['loader'] for e in t['data']} == {'train', 'test'}" &&
  ok bundle-toml-data || bad "bundle-toml-data"
# The device needs are explain's memory plan: parameters 784*64+64+64*10+10 f32.
toml "$B0/bundle.toml" "t['device']['parameters'] == 4 * (784 * 64 + 64 + 64 * 10 + 10) and t['device']['total'] >= sum(v for k, v in t['device'].items() if k != 'total') - 1" &&
  ok bundle-toml-device || bad "bundle-toml-device"
"$BIN" explain "$SRC/examples/mlp.lisp" --variant quick --set width=64 --json >"$TMP/explain.json" 2>/dev/null
toml "$B0/bundle.toml" "__import__('json').load(open('$TMP/explain.json'))['memory']['parameters'] == t['device']['parameters']" &&
  ok bundle-device-is-explains || bad "bundle-device-is-explains"
# Nothing in it names where it was made.
if grep -rlF -e "$TMP" -e "$SRC" -e /usr/share/datasets "$B0/bundle.toml" "$B0/ir.json" "$B0/run.sh" >/dev/null; then
  bad "bundle-no-absolute-path: $(grep -rlF -e "$TMP" -e "$SRC" -e /usr/share/datasets "$B0"/bundle.toml "$B0"/ir.json "$B0"/run.sh)"
else ok bundle-no-absolute-path; fi
toml "$B0/bundle.toml" "__import__('json').load(open(d + '/ir.json'))['files'][1] == 'src/mlp.lisp'" &&
  ok bundle-ir-relative || bad "bundle-ir-relative"

# Moved to another directory (the place it was made is gone).
mkdir -p "$TMP/elsewhere"
mv "$B0" "$TMP/elsewhere/job"
B=$TMP/elsewhere/job
RUN=$B/runs/mlp.quick.width=64.steps=$STEPS

# The run never stopped: the original file, not the bundle.
"$BIN" run "$SRC/examples/mlp.lisp" --variant quick --set width=64 --steps $STEPS --threads 1 --quiet --out "$TMP/reference" >"$TMP/out" 2>"$TMP/err"
expect reference-run 0 $?

(cd / && exec "$B/run.sh" --steps $STEPS --threads 1 --quiet >"$TMP/out1" 2>"$TMP/err1") &
pid=$!
for _ in $(seq 3000); do [ -e "$RUN/checkpoints/step-00001000" ] && break; sleep 0.01; done
kill -TERM $pid
wait $pid
rc=$?
expect run-sh-preempted 75 $rc
"$BIN" status "$RUN" >"$TMP/status" 2>&1
expect status-preempted 0 $? "preempted (exit 75)" "$TMP/status" "next .*--resume latest" "$TMP/status"
"$BIN" status "$B" >"$TMP/status" 2>&1
expect status-of-bundle 0 $? "^run  *$RUN" "$TMP/status" "preempted (exit 75)" "$TMP/status"
"$BIN" status "$RUN" --json >"$TMP/status.json" 2>&1
python3 -c "import json,sys; s=json.load(open('$TMP/status.json')); sys.exit(0 if s['state']=='preempted' and 0 < s['step'] < $STEPS else 1)" &&
  ok status-preempted-step || bad "status-preempted-step: $(cat "$TMP/status.json" | head -c 300)"

# Started again on "another machine": the bundle, its run inside, moved
# again, and started from another directory. It resumes from the checkpoint
# (the IR names its files relative to the bundle, so the checkpoint's IR hash
# still holds) and ends where the reference did.
mkdir -p "$TMP/another"
mv "$B" "$TMP/another/job"
B=$TMP/another/job
RUN=$B/runs/mlp.quick.width=64.steps=$STEPS
(cd "$TMP" && "$B/run.sh" --steps $STEPS --threads 1 --quiet >"$TMP/out2" 2>"$TMP/err2")
expect run-sh-resumed 0 $?
python3 - "$RUN/events.jsonl" <<'PY' && ok run-sh-resumed-from-checkpoint || bad "run-sh-resumed-from-checkpoint"
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
opens = [e for e in ev if e["kind"] == "open"]
sys.exit(0 if len(opens) == 2 and (opens[1].get("resumed_from") or {}).get("step", 0) > 0
         and sum(e["kind"] == "close" for e in ev) == 2 else 1)
PY
for f in model.safetensors optimizer.safetensors; do
  if cmp -s "$TMP/reference/checkpoints/latest/$f" "$RUN/checkpoints/latest/$f"; then ok "resume-bit-exact $f"; else
    bad "resume-bit-exact: $f differs from the run never stopped"; fi
done
# Once more after it finished: nothing to do, still exit 0.
"$B/run.sh" --steps $STEPS --threads 1 --quiet >"$TMP/out" 2>"$TMP/err"
expect run-sh-after-finish 0 $?

# SEXPGPU_RUNS and --out put the run elsewhere.
SEXPGPU_RUNS=$TMP/envruns "$B/run.sh" --steps 2 --threads 1 --quiet >"$TMP/out" 2>"$TMP/err"
expect run-sh-sexpgpu-runs 0 $?
[ -f "$TMP/envruns/mlp.quick.width=64.steps=2/status.json" ] && ok run-sh-sexpgpu-runs-dir || bad "run-sh-sexpgpu-runs-dir"
"$B/run.sh" --steps 2 --threads 1 --quiet --out "$TMP/outrun" >"$TMP/out" 2>"$TMP/err"
expect run-sh-out 0 $?
[ -f "$TMP/outrun/status.json" ] && ok run-sh-out-dir || bad "run-sh-out-dir"
# The config file's [runs] dir is the laptop's; a bundle keeps its own place.
mkdir -p "$HOME/.config/sexpgpu"
printf '[runs]\ndir = "%s"\n' "$TMP/cfgruns" >"$HOME/.config/sexpgpu/config.toml"
"$B/run.sh" --steps 3 --threads 1 --quiet >"$TMP/out" 2>"$TMP/err"
expect run-sh-config-runs 0 $?
[ -f "$B/runs/mlp.quick.width=64.steps=3/status.json" ] && [ ! -e "$TMP/cfgruns" ] && ok run-sh-config-runs-inside ||
  bad "run-sh-config-runs-inside"
rm "$HOME/.config/sexpgpu/config.toml"
"$BIN" status "$B" >"$TMP/out" 2>"$TMP/err"
expect status-of-bundle-several 2 $? "holds 2 runs; name one" "$TMP/err" "sexpgpu status $B/runs/mlp.quick.width=64.steps=3" "$TMP/err"

# A changed file is refused, naming it; so is a missing one.
cp -r "$B" "$TMP/changed"
rm -rf "$TMP/changed/runs"
echo ";; a change" >>"$TMP/changed/src/mlp.lisp"
"$BIN" run "$TMP/changed" --steps 2 >"$TMP/out" 2>"$TMP/err"
expect changed-file-refused 1 $? "E-BUNDLE .*src/mlp.lisp changed" "$TMP/err"
[ -e "$TMP/changed/runs" ] && bad "changed-file-refused: a run directory was written" || ok changed-file-nothing-written
cp "$B/src/mlp.lisp" "$TMP/changed/src/mlp.lisp"
head -c 1000 "$B/src/fashion-mnist/t10k-labels-idx1-ubyte.gz" >"$TMP/changed/src/fashion-mnist/t10k-labels-idx1-ubyte.gz"
rm "$TMP/changed/ir.json"
"$TMP/changed/run.sh" --steps 2 >"$TMP/out" 2>"$TMP/err"
expect changed-data-refused 1 $? "src/fashion-mnist/t10k-labels-idx1-ubyte.gz changed: 1000 bytes" "$TMP/err" "ir.json is missing" "$TMP/err"
rm -rf "$TMP/changed"

# ---- --no-data: the usual lookup --------------------------------------------------------------
"$BIN" bundle "$SRC/examples/mlp.lisp" --variant quick --no-data -o "$TMP/nodata" >"$TMP/out" 2>"$TMP/err"
expect nodata-made 0 $? "data left out" "$TMP/out"
[ -e "$TMP/nodata/src/fashion-mnist" ] && bad "nodata-no-copies" || ok nodata-no-copies
"$BIN" status "$TMP/nodata" >"$TMP/out" 2>"$TMP/err"
expect status-of-bundle-no-run 2 $? "bundle .*nodata has no run yet (start .*nodata/run.sh)" "$TMP/err"
toml "$TMP/nodata/bundle.toml" "not t['data_bundled'] and len(t['data']) == 4 and all('path' not in e and e['size'] > 0 for e in t['data']) and [f['path'] for f in t['files']] == ['src/mlp.lisp', 'ir.json']" &&
  ok nodata-toml || bad "nodata-toml"
"$TMP/nodata/run.sh" --steps 3 --threads 1 --quiet >"$TMP/out" 2>"$TMP/err"
expect nodata-runs 0 $?
# SEXPGPU_DATA comes before /usr/share/datasets: other files there are refused by size.
mkdir -p "$TMP/otherdata/fashion-mnist"
cp "$DATA/t10k-images-idx3-ubyte.gz" "$TMP/otherdata/fashion-mnist/train-images-idx3-ubyte.gz"
cp "$DATA/t10k-labels-idx1-ubyte.gz" "$TMP/otherdata/fashion-mnist/train-labels-idx1-ubyte.gz"
SEXPGPU_DATA=$TMP/otherdata "$TMP/nodata/run.sh" --steps 3 >"$TMP/out" 2>"$TMP/err"
expect nodata-other-data-refused 1 $? "E-BUNDLE loader train's \"fashion-mnist/train-images-idx3-ubyte.gz\" is $TMP/otherdata/fashion-mnist/train-images-idx3-ubyte.gz" "$TMP/err"
# An absolute data path travels only as a reference.
sed "s|\"fashion-mnist/|\"$DATA/|" "$SRC/examples/mlp.lisp" >"$TMP/absolute.lisp"
"$BIN" bundle "$TMP/absolute.lisp" --variant quick -o "$TMP/abs" >"$TMP/out" 2>"$TMP/err"
expect absolute-data-refused 2 $? "E-BUNDLE loader train names the absolute path \"$DATA/train-images" "$TMP/err"
[ -e "$TMP/abs" ] && bad "absolute-data-refused: the bundle was written" || ok absolute-data-nothing-written
"$BIN" bundle "$TMP/absolute.lisp" --variant quick --no-data -o "$TMP/abs" >"$TMP/out" 2>"$TMP/err"
expect absolute-data-no-data 0 $?
# --no-data leaves behind a file found beside the run file: refused.
mkdir -p "$TMP/beside/fashion-mnist"
cp "$SRC/examples/mlp.lisp" "$TMP/beside/mlp.lisp"
ln -s "$DATA/train-images-idx3-ubyte.gz" "$TMP/beside/fashion-mnist/train-images-idx3-ubyte.gz"
"$BIN" bundle "$TMP/beside/mlp.lisp" --no-data -o "$TMP/besideb" >"$TMP/out" 2>"$TMP/err"
expect nodata-beside-refused 2 $? "E-BUNDLE loader train's \"fashion-mnist/train-images-idx3-ubyte.gz\" is found beside the run file" "$TMP/err"

# ---- another version: a warning; another IR: refused ----------------------------------------
cp -r "$TMP/nodata" "$TMP/old"
rm -rf "$TMP/old/runs"
sed -i "s/^sexpgpu_version = .*/sexpgpu_version = '0.0.1'/" "$TMP/old/bundle.toml"
"$TMP/old/run.sh" --steps 2 --threads 1 >"$TMP/out" 2>"$TMP/err"
expect other-version-warns 0 $? "^sexpgpu run: W-BUNDLE-VERSION" "$TMP/err" \
  "bundle .*old was made by sexpgpu 0.0.1, running on sexpgpu $VERSION" "$TMP/err"
sed -i "s/^ir_hash = .*/ir_hash = '0000000000000000'/" "$TMP/old/bundle.toml"
"$TMP/old/run.sh" --steps 2 --threads 1 >"$TMP/out" 2>"$TMP/err"
expect other-ir-refused 1 $? "E-BUNDLE bundle .*old was made by sexpgpu 0.0.1, it compiles to another IR on sexpgpu $VERSION" "$TMP/err" "fix: run it with sexpgpu 0.0.1" "$TMP/err"

# ---- a malformed bundle.toml, and usage -----------------------------------------------------
cp -r "$TMP/nodata" "$TMP/broken"
rm -rf "$TMP/broken/runs"
sed -i "s|^run_file = .*|run_file = '../../etc/passwd'|" "$TMP/broken/bundle.toml"
"$BIN" run "$TMP/broken" >"$TMP/out" 2>"$TMP/err"
expect toml-path-outside 1 $? "E-BUNDLE .*run_file.* is \"../../etc/passwd\", which is not a path inside the bundle" "$TMP/err"
echo "format = [" >"$TMP/broken/bundle.toml"
"$BIN" run "$TMP/broken" >"$TMP/out" 2>"$TMP/err"
expect toml-not-toml 1 $? "E-BUNDLE .*broken/bundle.toml:1:.*not TOML" "$TMP/err"
"$BIN" run "$TMP/nodata" --variant wide >"$TMP/out" 2>"$TMP/err"
expect run-bundle-selection 2 $? "E-BUNDLE .*selection was fixed when it was made" "$TMP/err"
mkdir "$TMP/plain-dir"
"$BIN" run "$TMP/plain-dir" >"$TMP/out" 2>"$TMP/err"
expect run-plain-directory 2 $? "E-IO .*plain-dir is a directory, neither a run file nor a bundle" "$TMP/err"
"$BIN" bundle "$SRC/examples/mlp.lisp" -o "$TMP/nodata" >"$TMP/out" 2>"$TMP/err"
expect bundle-exists 2 $? "E-BUNDLE .*nodata already exists and is not an empty directory" "$TMP/err"
"$BIN" bundle "$SRC/examples/mlp.lisp" -o "$TMP/no/such/dir" >"$TMP/out" 2>"$TMP/err"
expect bundle-no-parent 2 $? "E-BUNDLE .*its parent directory .* does not exist" "$TMP/err"
"$BIN" bundle "$SRC/examples/mlp.lisp" >"$TMP/out" 2>"$TMP/err"
expect bundle-no-out 2 $? "-o" "$TMP/err"
"$BIN" bundle "$TMP/missing.lisp" -o "$TMP/m" >"$TMP/out" 2>"$TMP/err"
expect bundle-missing-file 2 $? "missing.lisp: no such file" "$TMP/err"
"$BIN" bundle "$SRC/examples/mlp.lisp" --eval-steps 0 -o "$TMP/m" >"$TMP/out" 2>"$TMP/err"
expect bundle-range 2 $? "out of range" "$TMP/err"
"$BIN" bundle "$SRC/examples/mlp.lisp" --set width=0 -o "$TMP/m" >"$TMP/out" 2>"$TMP/err"
expect bundle-file-errors 1 $? "E-KNOB-TYPE\|width" "$TMP/err"
[ -e "$TMP/m" ] && bad "bundle-refusals: a bundle was written" || ok bundle-refusals-write-nothing
sed 's|"fashion-mnist/train-images-idx3-ubyte.gz"|"s3://datasets/fashion-mnist/train-images-idx3-ubyte.gz"|' "$SRC/examples/mlp.lisp" >"$TMP/s3.lisp"
"$BIN" bundle "$TMP/s3.lisp" -o "$TMP/s3" >"$TMP/out" 2>"$TMP/err"
rc=$?
if [ $rc -ne 0 ] && grep -q 's3://datasets/fashion-mnist/train-images-idx3-ubyte.gz' "$TMP/err" && [ ! -e "$TMP/s3" ]; then
  ok "s3-source-refused (exit $rc)"
else bad "s3-source-refused: exit $rc"; cat "$TMP/err"; fi
# run.sh with no sexpgpu on PATH says so.
PATH=/usr/bin:/bin "$TMP/nodata/run.sh" >"$TMP/out" 2>"$TMP/err"
expect run-sh-no-sexpgpu 127 $? "sexpgpu is not on PATH" "$TMP/err"

# ---- modules keep their places ----------------------------------------------------------------
mkdir -p "$TMP/proj/exp/lib" "$TMP/proj/common" "$TMP/proj/data" "$TMP/modpath/lab"
# Data beside the file's directory: "../data/train.csv" climbs out of it.
awk 'BEGIN { for (i = 0; i < 64; i++) { s = 0; row = ""
  for (j = 0; j < 8; j++) { v = ((i * 7 + j * 3) % 11) / 11.0; s += v; row = row v "," }
  print row s / 8 } }' >"$TMP/proj/data/train.csv"
cat >"$TMP/proj/exp/lib/blocks.lisp" <<'LISP'
(defmodule blocks (:export hidden-width))
(require "../../common/sizes.lisp" :as sizes)
(defun hidden-width () (* 2 (sizes:base)))
LISP
cat >"$TMP/proj/common/sizes.lisp" <<'LISP'
(defmodule sizes (:export base))
(defun base () 8)
LISP
cat >"$TMP/modpath/lab/act.lisp" <<'LISP'
(defmodule act (:export act))
(defun act (x) (tanh x))
LISP
cat >"$TMP/proj/exp/small.lisp" <<'LISP'
(require "sexpgpu/nn")
(require "sexpgpu/optim")
(require "./lib/blocks.lisp" :as blocks)
(require "lab/act" :as act)
(defloader train :source (csv "../data/train.csv" :columns ((:x :f32 (0 1 2 3 4 5 6 7)) (:y :f32 (8))))
  :batch 16)
(defmodel net (x) (nn:linear (act:act (nn:linear x (blocks:hidden-width) :name "h")) 1 :name "out"))
(defun objective (batch ctx) (mse (net (getf batch :x)) (getf batch :y)))
(defun optimizer () (optim:sgd :lr 0.1))
(defrun :steps 20)
LISP
SEXPGPU_MODULE_PATH=$TMP/modpath "$BIN" bundle "$TMP/proj/exp/small.lisp" -o "$TMP/smallb" >"$TMP/out" 2>"$TMP/err"
expect modules-bundled 0 $?
toml "$TMP/smallb/bundle.toml" "sorted(f['path'] for f in t['files']) == sorted(['ir.json', 'src/proj/exp/small.lisp', 'src/proj/exp/lib/blocks.lisp', 'src/proj/common/sizes.lisp', 'src/modpath/lab/act.lisp', 'src/proj/data/train.csv']) and t['data'][0]['path'] == 'src/proj/data/train.csv' and t['module_path'] == ['src/modpath'] and t['run_file'] == 'src/proj/exp/small.lisp'" &&
  ok modules-placed || { bad "modules-placed"; cat "$TMP/smallb/bundle.toml"; }
mv "$TMP/smallb" "$TMP/another/smallb"
rm -rf "$TMP/proj" "$TMP/modpath"
"$TMP/another/smallb/run.sh" --threads 1 --quiet >"$TMP/out" 2>"$TMP/err"
expect modules-run-moved 0 $?
[ -f "$TMP/another/smallb/runs/small/checkpoints/latest/model.safetensors" ] && ok modules-run-dir-inside ||
  bad "modules-run-dir-inside"
# A module required by an absolute path cannot travel.
mkdir -p "$TMP/absmod"
cp "$TMP/another/smallb/src/proj/common/sizes.lisp" "$TMP/absmod/sizes.lisp"
cat >"$TMP/absmod/run.lisp" <<LISP
(require "sexpgpu/nn")
(require "sexpgpu/optim")
(require "$TMP/absmod/sizes.lisp" :as sizes)
(defloader train :source (synthetic :regression :features 8 :examples 256 :seed 1) :batch 32)
(defmodel net (x) (nn:linear x (sizes:base) :name "out"))
(defun objective (batch ctx) (mse (net (getf batch :x)) (getf batch :x)))
(defun optimizer () (optim:sgd :lr 0.1))
(defrun :steps 2)
LISP
"$BIN" bundle "$TMP/absmod/run.lisp" -o "$TMP/absb" >"$TMP/out" 2>"$TMP/err"
expect absolute-require-refused 2 $? "E-BUNDLE module .*sizes.lisp is required by an absolute path" "$TMP/err"
[ -e "$TMP/absb" ] && bad "absolute-require-refused: the bundle was written" || ok absolute-require-nothing-written

# --json: what was bundled, or why not, as one JSON object on standard output.
"$BIN" bundle "$SRC/examples/smallest.lisp" -o "$TMP/jsonb" --json >"$TMP/out" 2>"$TMP/err"
expect json-bundle 0 $?
jq -e '.bundle and .slug == "smallest" and (.ir_hash | length) == 16 and .files == 2 and .data_bundled and (.run | endswith("run.sh"))' "$TMP/out" >/dev/null &&
  ok json-bundle-fields || bad "json-bundle-fields: $(cat "$TMP/out")"
"$BIN" bundle "$SRC/examples/smallest.lisp" -o "$TMP/jsonb" --json >"$TMP/out" 2>"$TMP/err"
expect json-bundle-refused 2 $? "E-BUNDLE" "$TMP/err"
jq -e '.error.code == "E-BUNDLE" and (.error.message | test("already exists"))' "$TMP/out" >/dev/null &&
  ok json-bundle-refused-json || bad "json-bundle-refused-json: $(cat "$TMP/out")"
printf '(defrun :steps x)\n' >"$TMP/unbound.lisp"
"$BIN" bundle "$TMP/unbound.lisp" -o "$TMP/jsonb2" --json >"$TMP/out" 2>"$TMP/err"
expect json-bundle-file-errors 1 $?
jq -e '.error.code == "E-UNBOUND" and (.error.diagnostics | map(.code) | index("E-UNBOUND")) != null' "$TMP/out" >/dev/null &&
  ok json-bundle-diagnostics || bad "json-bundle-diagnostics: $(cat "$TMP/out")"

[ $fail -eq 0 ] && echo "bundle: all passed" || echo "bundle: $fail failed"
exit $((fail > 0))
