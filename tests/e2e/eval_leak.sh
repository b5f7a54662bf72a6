#!/usr/bin/env bash
# E-EVAL-LEAK however the evaluation loader's path is spelled: the same file
# named as ./data/x, data/x, through a symlinked directory or a `..` detour
# is one file, and a loader over it cut into other examples (another
# :seq-len) is compared by fractions of it. Disjoint splits stay clean.
# Usage: eval_leak.sh SEXPGPU
set -u
BIN=$1
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail=0
mkdir -p "$TMP/data" "$TMP/other"
head -c 4000 /dev/zero | tr '\0' 'a' >"$TMP/data/corpus.txt"
ln -s data "$TMP/linked"

# run.lisp with train over data/corpus.txt and val over $1 (seq-len $2, split $3).
write_run() {
  cat >"$TMP/run.lisp" <<LISP
(require "sexpgpu/nn")
(require "sexpgpu/optim")
(defloader train :source (text "data/corpus.txt" :seq-len 8) :split (0.0 0.9) :batch 4)
(defloader val :source (text "$1" :seq-len $2) :split $3 :batch 4)
(defmodel net (x) (nn:linear (nn:embedding x 256 8 :name "embed") 256 :name "fc"))
(defun objective (batch ctx) (cross-entropy (net (field batch :x)) (field batch :y)))
(defun evaluate (batch ctx) (metric :loss (objective batch ctx)))
(defeval val :loader val :every 5)
(defun optimizer () (optim:sgd :lr 0.1))
(defrun :steps 10)
LISP
}

# expect NAME CODE-OR-NONE PATH SEQ-LEN SPLIT
expect() {
  write_run "$3" "$4" "$5"
  out=$("$BIN" check --json "$TMP/run.lisp" 2>/dev/null)
  rc=$?
  got=$(echo "$out" | jq -r '[.[] | select(.severity == "error") | .code] | join(",")')
  if [ "$2" = none ]; then
    if [ "$rc" -eq 0 ] && [ -z "$got" ]; then echo "ok   $1: clean"; else
      echo "FAIL $1: expected no error, got exit $rc '$got'"; echo "$out"; fail=$((fail + 1)); fi
  elif [ "$rc" -eq 1 ] && [ "$got" = "$2" ]; then
    echo "ok   $1: $2"
  else
    echo "FAIL $1: expected $2, got exit $rc '$got'"; echo "$out"; fail=$((fail + 1))
  fi
}

expect same-spelling E-EVAL-LEAK data/corpus.txt 8 "(0.8 1.0)"
expect dot-slash E-EVAL-LEAK ./data/corpus.txt 8 "(0.8 1.0)"
expect symlinked-dir E-EVAL-LEAK linked/corpus.txt 8 "(0.8 1.0)"
expect dot-dot E-EVAL-LEAK other/../data/corpus.txt 8 "(0.8 1.0)"
expect absolute E-EVAL-LEAK "$TMP/data/corpus.txt" 8 "(0.8 1.0)"
expect other-seq-len E-EVAL-LEAK ./data/corpus.txt 16 "(0.5 1.0)"
expect disjoint none ./data/corpus.txt 8 "(0.9 1.0)"
expect disjoint-other-seq-len none linked/corpus.txt 16 "(0.9 1.0)"
echo "eval-leak: $fail failures"
exit $((fail > 0))
