#!/usr/bin/env bash
# `cmake --install`: the binary, the plugins, the standard modules and the
# docs (share/doc/sexpgpu) land under the prefix, and the installed binary
# reads its own modules, never the source tree's: an installed copy changed
# on purpose is the one it sees.
# Usage: install.sh BUILD_DIR SOURCE_DIR
set -u
BUILD=$1
SRC=$2
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; fail=$((fail + 1)); }

cmake --install "$BUILD" --prefix "$TMP/prefix" >"$TMP/out" 2>&1 || { cat "$TMP/out"; echo "FAIL install"; exit 1; }
BIN=$TMP/prefix/bin/sexpgpu
for f in bin/sexpgpu include/sexpgpu/plugin.h lib/sexpgpu/plugins/libsexpgpu-cpu.so \
         include/sexpgpu/sdk/errors.h include/sexpgpu/sdk/reducer.h include/sexpgpu/sdk/sink.h \
         include/sexpgpu/sdk/tables.h lib/sexpgpu/plugins/libsexpgpu-quantiles.so \
         lib/sexpgpu/plugins/libsexpgpu-kurtosis.so lib/sexpgpu/plugins/libsexpgpu-log2-histogram.so \
         share/sexpgpu/lisp/sexpgpu/nn.lisp share/sexpgpu/lisp/sexpgpu/optim.lisp \
         share/doc/sexpgpu/lisp.md share/doc/sexpgpu/quickstart.md share/doc/sexpgpu/llms.txt; do
  [ -e "$TMP/prefix/$f" ] && ok "installed $f" || bad "not installed: $f"
done
[ "$(ls "$TMP/prefix/share/doc/sexpgpu"/*.md | wc -l)" -eq "$(ls "$SRC"/docs/*.md | wc -l)" ] &&
  ok "every docs page installed" || bad "share/doc/sexpgpu lacks pages of docs/"

cp "$SRC/examples/mlp.lisp" "$TMP/run.lisp"
"$BIN" check "$TMP/run.lisp" >"$TMP/out" 2>&1 && ok "installed binary checks mlp.lisp" ||
  { bad "installed binary: check mlp.lisp"; cat "$TMP/out"; }
"$BIN" --include-dir >"$TMP/out" 2>&1
[ "$(cat "$TMP/out")" = "$TMP/prefix/include" ] && ok "--include-dir is the prefix's" ||
  { bad "--include-dir: $(cat "$TMP/out")"; }
"$BIN" doctor >"$TMP/out" 2>&1
grep -q "$BUILD" "$TMP/out" && { bad "doctor of the installed binary names the build tree"; cat "$TMP/out"; } ||
  ok "doctor names no build-tree directory"

# The installed reducer plugins load: check accepts a :reduce of theirs.
sed 's/^(defrun/(defdiagnostic spread :over :params :value (lambda (p) p) :reduce (:quantiles :kurtosis))\n(defrun/' \
  "$SRC/examples/mlp.lisp" >"$TMP/reduce.lisp"
grep -q ":reduce (:quantiles" "$TMP/reduce.lisp" && env -u SEXPGPU_PLUGIN_PATH "$BIN" check "$TMP/reduce.lisp" >"$TMP/out" 2>&1 &&
  ok "installed binary knows the installed reducers" || { bad "installed binary: check a :reduce (:quantiles)"; cat "$TMP/out"; }

# A C++ plugin over the installed SDK, built with c++ alone.
cat >"$TMP/twice.cpp" <<'CPP'
#include <sexpgpu/sdk/reducer.h>
struct Twice {
  static constexpr const char* kName = "twice";
  static constexpr const char* kVersion = "0.1.0";
  static constexpr const char* kOutputs[] = {"sum2"};
  explicit Twice(std::string_view options) { sexpgpu::sdk::no_options(options); }
  void update(const float* v, size_t n) { for (size_t i = 0; i < n; ++i) sum += 2 * v[i]; }
  void finish(double* out) { out[0] = sum; }
  double sum = 0;
};
SEXPGPU_SDK_ENTRY(sexpgpu::sdk::ReducerPlugin<Twice>::kPlugin)
CPP
mkdir -p "$TMP/lab"
c++ -std=c++17 -Wall -Wextra -Werror -shared -fPIC -fvisibility=hidden -I"$TMP/prefix/include" \
  "$TMP/twice.cpp" -o "$TMP/lab/libsexpgpu-twice.so" >"$TMP/out" 2>&1 &&
  SEXPGPU_PLUGIN_PATH="$TMP/lab" "$BIN" doctor --json >"$TMP/doctor.json" 2>/dev/null &&
  grep -q '"outputs": \[' "$TMP/doctor.json" && grep -q '"sum2"' "$TMP/doctor.json" &&
  ok "a C++ reducer over the installed SDK builds with c++ alone and loads" ||
  { bad "a C++ reducer over the installed SDK"; cat "$TMP/out"; }

# The installed nn.lisp, broken on purpose: the installed binary must see it.
echo '(defun not-a-module () 1)' >"$TMP/prefix/share/sexpgpu/lisp/sexpgpu/nn.lisp"
"$BIN" check "$TMP/run.lisp" >"$TMP/out" 2>&1
[ $? -eq 1 ] && grep -q "is not a module" "$TMP/out" && ok "installed binary reads the installed modules" ||
  { bad "installed binary did not read the installed nn.lisp"; cat "$TMP/out"; }
echo "install: $fail failures"
exit $((fail > 0))
