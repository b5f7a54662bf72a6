#!/usr/bin/env bash
# End-to-end test of `sexpgpu watch`: a watch --json in the background sees
# a direct write of the file, a write-to-temporary-and-rename save, and an
# edit of a module the file requires (one new JSON line each, with the
# diagnostics that edit causes), ignores a file it does not watch, and
# exits 0 on SIGINT; the plain output is docs/check.md's example, and
# SIGTERM exits 0 too. Polls with deadlines; no fixed long sleeps.
# Usage: watch.sh PATH/TO/sexpgpu SOURCE_DIR
set -u
BIN=$1
SRC=$2
TMP=$(mktemp -d)
pid=
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null
  rm -rf "$TMP"
}
trap cleanup EXIT
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

if ! command -v jq >/dev/null; then
  echo "skip watch: jq is not installed"
  exit 77
fi

# wait_for FILE COMMAND...: until COMMAND succeeds, at most 20 s (a loaded
# CI machine); false on the deadline.
wait_for() {
  local deadline=$((SECONDS + 20))
  while [ "$SECONDS" -lt "$deadline" ]; do
    "$@" && return 0
    sleep 0.05
  done
  return 1
}
lines_at_least() { [ "$(wc -l <"$1")" -ge "$2" ]; }
# line N of FILE
line() { sed -n "$2p" "$1"; }
# stopped PID: the process has exited; its status in $status
stopped() { ! kill -0 "$1" 2>/dev/null; }

cd "$TMP" || exit 1
mkdir mod
cat >mod/lib.lisp <<'EOF'
(defmodule lib (:export f))
(defun f (x) x)
EOF
cat >w.lisp <<'EOF'
(require "./mod/lib.lisp")
(lib:f 1)
EOF

"$BIN" watch w.lisp --json >log 2>err &
pid=$!
wait_for lines_at_least log 1
check first-check $? err
[ "$(line log 1)" = "[]" ]
check first-clean $? log

# A direct write.
printf '(require "./mod/lib.lisp")\n(lib:f 1)\n(undefined-fn 2)\n' >w.lisp
wait_for lines_at_least log 2
check write-seen $? log
line log 2 | jq -e 'length == 1 and .[0].code == "E-UNBOUND" and .[0].line == 3' >/dev/null
check write-diagnostic $? log

# A save as editors make it: a temporary, renamed over the file.
printf '(require "./mod/lib.lisp")\n(lib:f 2)\n' >w.lisp.tmp
mv w.lisp.tmp w.lisp
wait_for lines_at_least log 3
check rename-seen $? log
[ "$(line log 3)" = "[]" ]
check rename-clean-again $? log

# An edit of the required module.
printf '(defmodule lib (:export f))\n(defun f (x) (car x))\n' >mod/lib.lisp
wait_for lines_at_least log 4
check module-seen $? log
line log 4 | jq -e 'length >= 1 and .[0].code == "E-TYPE"' >/dev/null
check module-diagnostic $? log

# A file nobody requires: no check.
echo hello >mod/notes.txt
echo hello >other.txt
sleep 0.4
[ "$(wc -l <log)" -eq 4 ]
check unwatched-ignored $? log

# Every line is one JSON document.
jq -e -s 'length == 4' log >/dev/null
check one-document-per-line $? log

kill -INT "$pid"
wait_for stopped "$pid"
check sigint-stops $?
wait "$pid"
status=$?
pid=
[ "$status" -eq 0 ]
check "sigint-exit-0 (exit $status)" $? err

# docs/check.md's example, written to a file (not a terminal), stopped by
# SIGTERM: the times differ, nothing else.
printf '(defun my-function (x) x)\n' >my.lisp
"$BIN" watch my.lisp >plain 2>err &
pid=$!
wait_for grep -q "^--- .* my.lisp: ok$" plain
check plain-first $? plain
printf '(defun my-function (x) x)\n(my-functoin 1)\n' >my.lisp
wait_for grep -q "fix:" plain
check plain-second $? plain
kill -TERM "$pid"
wait_for stopped "$pid"
wait "$pid"
status=$?
pid=
[ "$status" -eq 0 ]
check "sigterm-exit-0 (exit $status)" $? err
awk '/^```text[ \t]*$/ { inside = 1; text = ""; next }
     inside && /^```/ { inside = 0; if (text ~ /^--- /) printf "%s", text; next }
     inside { text = text $0 "\n" }' "$SRC/docs/check.md" | sed -E 's/[0-9]{2}:[0-9]{2}:[0-9]{2}/T/' >want
sed -E 's/[0-9]{2}:[0-9]{2}:[0-9]{2}/T/' plain >got
[ -s want ] && diff -u want got >d
check docs-check-watch-example $? d

# A missing file is a usage error.
"$BIN" watch nosuch.lisp >out 2>err
[ $? -eq 2 ] && grep -q "no such file" err
check missing-file-exit-2 $? err

echo "watch: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
