#!/usr/bin/env bash
# End-to-end tests of `sexpgpu new` and `sexpgpu diff`: new bakes a
# selection into a file's defaults (the result checks, `variants` and
# `explain` see the new defaults, comments survive), refuses to overwrite,
# writes nothing for a bad selection or a result with errors; diff of two
# files, two selections of one (flags before and after the second path),
# two run directories, --json, identical inputs. The examples of
# docs/new.md and docs/explain.md that run `sexpgpu new` or `sexpgpu diff`
# are run as written and their output compared.
# Usage: new_diff.sh PATH/TO/sexpgpu SOURCE_DIR
set -u
BIN=$1
SRC=$2
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
# expect NAME WANTED-EXIT ACTUAL-EXIT [detail file]
expect() {
  [ "$3" -eq "$2" ]
  check "$1 (exit $3, want $2)" $? "${4:-/dev/null}"
}
jq_is() {  # jq_is NAME FILE FILTER: the filter yields true
  [ "$(jq -r "$3" "$2" 2>/dev/null)" = "true" ]
  check "$1" $? "$2"
}

if ! command -v jq >/dev/null; then
  echo "skip new-diff: jq is not installed"
  exit 77
fi
have_mnist=0
[ -r /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ] && have_mnist=1

cd "$TMP" || exit 1
cat >tiny.lisp <<'EOF'
;;;; A file with knobs that compiles anywhere (synthetic data).
(require "sexpgpu/nn")
(require "sexpgpu/optim")

(defknob width 4 :doc "hidden width" :type integer :min 1) ; the one to change
(defknob hidden (* 2 width) :type integer)
(defknob lr 0.1 :type float :min 0.0)
(defknob files '("a.txt" "b.txt"))
(defvariant wide (:width 16))

(defloader train :source (synthetic :regression :features 8 :examples 256 :seed 1) :batch 32)
(defvar *files* files)
(defmodel net (x) (nn:linear (relu (nn:linear x hidden :name "fc1")) 1 :name "fc2"))
(defun objective (batch ctx) (mse (net (getf batch :x)) (getf batch :y)))
(defun optimizer () (optim:sgd :lr lr))
(defrun :steps 5 :log-every 1)
EOF

# ---- new ------------------------------------------------------------------------------------

"$BIN" new tiny.lisp t2.lisp --variant wide --set lr=0.5 --set 'files=("c.txt")' >out 2>err
expect new-exit-0 0 $? err
[ ! -s out ]
check new-stdout-empty $? out
grep -q "^  width 4 -> 16$" err && grep -q "^  lr 0.1 -> 0.5$" err
check new-says-what-changed $? err
head -1 t2.lisp | grep -qE '^;; new from tiny\.lisp \(file_hash [0-9a-f]{16}\) with --variant wide --set lr=0\.5 --set files=\("c\.txt"\)$'
check new-header $? t2.lisp
hash=$(head -1 t2.lisp | sed -E 's/.*file_hash ([0-9a-f]{16}).*/\1/')
grep -q '^(defknob width 16 :doc "hidden width" :type integer :min 1) ; the one to change$' t2.lisp
check new-width-default-comment-kept $? t2.lisp
grep -q "^(defknob hidden (\* 2 width) :type integer)$" t2.lisp
check new-expression-default-kept $? t2.lisp
grep -q "^(defknob files '(\"c.txt\"))$" t2.lisp
check new-list-quoted $? t2.lisp
grep -q "^(defvariant wide (:width 16))$" t2.lisp
check new-variant-kept $? t2.lisp
"$BIN" fmt --check t2.lisp >out 2>&1
check new-formatted $? out
"$BIN" check t2.lisp >out 2>&1
check new-result-checks $? out
"$BIN" variants t2.lisp --json >out 2>err
jq_is new-variants-defaults out \
  '[.knobs[] | {(.name): .default}] | add == {"width": "16", "hidden": "32", "lr": "0.5", "files": "(\"c.txt\")"}'
jq_is new-slug-plain out '.slug == "t2"'
"$BIN" explain t2.lisp --json >out 2>err
jq_is new-explain-shape out '.parameters[0].shape == [8, 32]'
# The file_hash is the one run records (FNV-1a of the text, metrics.md).
"$BIN" run tiny.lisp --steps 1 --out hashrun --quiet --json >out 2>err
jq_is new-hash-is-file-hash <(head -1 out) ".file_hash == \"$hash\""

# No selection: a copy with a header, no default changed.
"$BIN" new tiny.lisp t3.lisp >out 2>err
expect new-plain-exit-0 0 $? err
grep -q "(no default changed)" err
check new-plain-says $? err
[ "$(tail -n +2 t3.lisp)" = "$("$BIN" fmt --stdout tiny.lisp)" ]
check new-plain-is-copy $? t3.lisp

# Refuses to overwrite: exit 2, the file untouched.
cp t2.lisp before
"$BIN" new tiny.lisp t2.lisp --set lr=0.9 >out 2>err
expect new-exists-exit-2 2 $? err
grep -q "t2.lisp already exists" err && grep -q "fix:" err
check new-exists-message $? err
cmp -s before t2.lisp
check new-exists-untouched $?

# A bad selection: exit 1, the diagnostic, nothing written.
"$BIN" new tiny.lisp bad.lisp --set width=0 >out 2>err
expect new-bad-value-exit-1 1 $? err
grep -q "E-KNOB-TYPE" err
check new-bad-value-diagnostic $? err
[ ! -e bad.lisp ]
check new-bad-value-nothing-written $?
"$BIN" new tiny.lisp bad.lisp --variant nosuch >out 2>err
expect new-bad-variant-exit-1 1 $? err
grep -q "E-VARIANT-UNKNOWN" err && [ ! -e bad.lisp ]
check new-bad-variant $? err
"$BIN" new nosuch.lisp bad.lisp >out 2>err
expect new-missing-from-exit-2 2 $? err
"$BIN" new tiny.lisp nodir/x.lisp >out 2>err
expect new-unwritable-exit-3 3 $? err

# A relative require: fine beside FROM (the module named, not copied);
# checked from NEW's directory, so refused in another one.
mkdir -p proj/lib other
cat >proj/lib/blocks.lisp <<'EOF'
(defmodule blocks (:export scale))
(defun scale () 1.0)
EOF
cat >proj/run.lisp <<'EOF'
(require "sexpgpu/nn")
(require "sexpgpu/optim")
(require "./lib/blocks.lisp")

(defknob lr 0.1 :type float :min 0.0)
(defloader train :source (synthetic :regression :features 8 :examples 256 :seed 1) :batch 32)
(defmodel net (x) (nn:linear x 1 :name "fc"))
(defun objective (batch ctx) (* (blocks:scale) (mse (net (getf batch :x)) (getf batch :y))))
(defun optimizer () (optim:sgd :lr lr))
(defrun :steps 5)
EOF
"$BIN" new proj/run.lisp proj/run2.lisp --set lr=0.2 >out 2>err
expect new-module-beside-exit-0 0 $? err
grep -q "not copied: .*proj/lib/blocks.lisp" err && [ ! -e proj/lib/blocks2.lisp ]
check new-module-not-copied $? err
"$BIN" new proj/run.lisp other/run.lisp --set lr=0.2 >out 2>err
expect new-module-elsewhere-exit-1 1 $? err
grep -q "E-REQUIRE-NOT-FOUND" err && grep -q "another directory" err && [ ! -e other/run.lisp ]
check new-module-elsewhere-refused $? err

# mlp.lisp, with --variant and --set.
if [ "$have_mnist" = 1 ]; then
  "$BIN" new "$SRC/examples/mlp.lisp" mlp2.lisp --variant quick --set width=64 >out 2>err
  expect new-mlp-exit-0 0 $? err
  "$BIN" check mlp2.lisp >out 2>&1
  check new-mlp-checks $? out
  "$BIN" explain mlp2.lisp --json >out 2>err
  jq_is new-mlp-explain out \
    '(.selection.knobs | map({(.name): .value}) | add) == {"width": "64", "lr": "0.001", "epochs": "1"} and .parameter_totals.count == 784*64 + 64 + 64*10 + 10'
  "$BIN" variants mlp2.lisp >out 2>err
  grep -q "^  width = 64  integer  ; hidden width$" out
  check new-mlp-variants $? out
fi

# ---- diff -----------------------------------------------------------------------------------

# Identical inputs.
"$BIN" diff tiny.lisp tiny.lisp >out 2>err
expect diff-same-exit-0 0 $? err
grep -qx "no differences" out
check diff-same-says $? out
"$BIN" diff tiny.lisp tiny.lisp --json >out 2>err
jq_is diff-same-json out '.differences == 0 and .knobs == [] and .parameters.changed == []'

# Two files: a knob, a reshaped parameter, FLOPs and memory.
"$BIN" diff tiny.lisp t2.lisp >out 2>err
expect diff-files-exit-0 0 $? err
grep -q "^  - width = 4$" out && grep -q "^  + width = 16$" out
check diff-files-knob $? out
grep -q "^  - net.fc1.weight  shape=\[8,8\]" out && grep -q "^  + net.fc1.weight  shape=\[8,32\]" out
check diff-files-reshaped $? out
grep -q "^flops:" out && grep -q "^memory:" out && ! grep -q "^ops:" out
check diff-files-sections $? out
# Another activation: the op counts differ.
sed 's/(relu /(gelu /' tiny.lisp >gelu.lisp
"$BIN" diff tiny.lisp gelu.lisp >out 2>err
grep -qE "^  - relu = [0-9]+$" out && grep -qE "^  \+ gelu = [0-9]+$" out
check diff-ops $? out
"$BIN" diff tiny.lisp t2.lisp --json >out 2>err
jq_is diff-json-knob out '.knobs | map(select(.name == "width")) == [{"name": "width", "a": "4", "b": "16"}]'
jq_is diff-json-reshaped out \
  '.parameters.changed | map(select(.path == "net.fc1.weight"))[0] | .reshaped and .a.shape == [8, 8] and .b.shape == [8, 32]'
jq_is diff-json-flops out '(.flops | map(select(.name == "total")) | length) == 1 and .differences > 0'

# Two selections of one file: flags after the second path are the second
# side's, before it the first's.
"$BIN" diff tiny.lisp tiny.lisp --variant wide --json >out 2>err
expect diff-after-exit-0 0 $? err
jq_is diff-after out '.a.slug == "tiny" and .b.slug == "tiny.wide" and (.knobs[0] | .a == "4" and .b == "16")'
"$BIN" diff tiny.lisp --variant wide tiny.lisp --json >out 2>err
jq_is diff-before out '.a.slug == "tiny.wide" and .b.slug == "tiny" and (.knobs[0] | .a == "16" and .b == "4")'
"$BIN" diff --set lr=0.3 tiny.lisp tiny.lisp --set=lr=0.4 --json >out 2>err
jq_is diff-both-sides out '.knobs == [{"name": "lr", "a": "0.3", "b": "0.4"}]'
"$BIN" diff tiny.lisp tiny.lisp --set steps=1 >out 2>err
expect diff-bad-selection-exit-1 1 $? err
grep -q "E-KNOB-UNKNOWN" err
check diff-bad-selection-diagnostic $? err

# Two run directories: their selection and final metrics side by side.
"$BIN" run tiny.lisp --out r1 --quiet >/dev/null 2>err
check diff-run1 $? err
"$BIN" run tiny.lisp --variant wide --out r2 --quiet >/dev/null 2>err
check diff-run2 $? err
"$BIN" diff r1 r2 >out 2>err
expect diff-runs-exit-0 0 $? err
grep -q "^--- r1 (run tiny)$" out && grep -q "^+++ r2 (run tiny.wide)$" out
check diff-runs-header $? out
grep -q "^run (final metrics):$" out && grep -qE "^  train/loss +[0-9.e-]+ +[0-9.e-]+$" out
check diff-runs-metrics $? out
"$BIN" diff r1 r2 --json >out 2>err
jq_is diff-runs-json out \
  '.a.run_dir and .b.run_dir and (.knobs[0].name == "width") and (.run | map(select(.name == "state"))[0] | .a == "finished" and .b == "finished") and (.run | map(select(.name == "train/loss")) | length) == 1'
"$BIN" diff r1 tiny.lisp >out 2>err
expect diff-run-vs-file-exit-0 0 $? err
grep -qx "no differences" out
check diff-run-vs-file-same $? out

# Usage errors: exit 2.
"$BIN" diff tiny.lisp >out 2>err
expect diff-one-path 2 $? err
"$BIN" diff tiny.lisp t2.lisp t3.lisp >out 2>err
expect diff-three-paths 2 $? err
"$BIN" diff tiny.lisp t2.lisp --frob >out 2>err
expect diff-unknown-flag 2 $? err
"$BIN" diff r1 --variant wide r2 >out 2>err
expect diff-run-dir-selection 2 $? err
"$BIN" diff proj r2 >out 2>err
expect diff-not-run-dir 2 $? err
"$BIN" diff nosuch.lisp tiny.lisp >out 2>err
expect diff-missing 2 $? err
"$BIN" diff tiny.lisp tiny.lisp --eval-steps 0 >out 2>err
expect diff-eval-steps-range 2 $? err

# ---- the examples of the docs ---------------------------------------------------------------

# Each ```text block of the page whose first line is "$ sexpgpu new" or
# "$ sexpgpu diff": its "$ " lines are run in order in a fresh directory
# holding examples/, and their output (both streams) must be the rest of
# the block. The content hash in a header is left out (it follows the
# example's text).
mkdir -p bin
ln -s "$BIN" bin/sexpgpu
doc_examples() {  # doc_examples PAGE
  local page=$SRC/docs/$1.md n=0
  rm -rf blocks && mkdir blocks
  awk -v out=blocks '
    /^```text[ \t]*$/ { inside = 1; text = ""; next }
    inside && /^```/ {
      inside = 0
      if (text ~ /^\$ sexpgpu (new|diff) /) { n++; printf "%s", text > (out "/" n); close(out "/" n) }
      next
    }
    inside { text = text $0 "\n" }
  ' "$page"
  for block in blocks/*; do
    [ -e "$block" ] || continue
    n=$((n + 1))
    local work=$TMP/doc-$1-$n
    mkdir -p "$work"
    ln -s "$SRC/examples" "$work/examples"
    : >"$work/.actual"
    while IFS= read -r line; do
      case "$line" in
        '$ '*)
          echo "$line" >>"$work/.actual"
          (cd "$work" && PATH=$TMP/bin:$PATH bash -c "${line#\$ }" >>"$work/.actual" 2>&1)
          ;;
      esac
    done <"$block"
    sed -E 's/file_hash [0-9a-f]{16}/file_hash H/' "$block" >"$work/.want"
    sed -E 's/file_hash [0-9a-f]{16}/file_hash H/' "$work/.actual" >"$work/.got"
    diff -u "$work/.want" "$work/.got" >"$work/.diff"
    check "docs-$1-example-$n" $? "$work/.diff"
  done
  [ "$n" -gt 0 ]
  check "docs-$1-has-examples" $?
}
if [ "$have_mnist" = 1 ]; then
  doc_examples new
  doc_examples explain
else
  echo "skip the docs' examples: they use examples/mlp.lisp, which needs dataset-fashion-mnist"
fi

echo "new-diff: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
