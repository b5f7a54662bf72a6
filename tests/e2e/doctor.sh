#!/usr/bin/env bash
# End-to-end tests of `sexpgpu doctor` and `--include-dir`: the plugin table
# and its reasons, the cpu device from the build tree, exit 5 without a
# device (an installed layout holding only a sink), and a private plugin built
# outside the project with cc against the installed header alone.
# Usage: doctor.sh PATH/TO/sexpgpu SOURCE_DIR TEST_PLUGIN_DIR
set -u
BIN=$1
SRC=$2
TESTPLUGINS=$3
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

# jq_is NAME FILE FILTER [FALLBACK]: the filter yields true. Without jq
# (not in scripts/install-deps.sh), FALLBACK, a fixed string, must appear in
# FILE instead; checks without one are skipped and counted.
skipped=0
jq_is() {
  if command -v jq >/dev/null; then
    [ "$(jq -r "$3" "$2" 2>/dev/null)" = "true" ]
    check "$1" $? "$2"
  elif [ $# -ge 4 ]; then
    grep -qF -- "$4" "$2"
    check "$1" $? "$2"
  else
    skipped=$((skipped + 1))
  fi
}

unset SEXPGPU_TEST_DEVICE_AVAILABLE

# No plugin path: the build tree's example sink and cpu device load: exit 0.
env -u SEXPGPU_PLUGIN_PATH "$BIN" doctor --json >"$TMP/out" 2>"$TMP/err"
check doctor-cpu-exit-0 $? "$TMP/err"
jq_is doctor-json-sink "$TMP/out" \
  '.plugins | any(.name == "example-sink" and .kind == "sink" and .status == "loaded" and .abi == "1.3")' \
  '"name": "example-sink"'
jq_is doctor-json-build-tree "$TMP/out" '.search_path | any(.source == "build tree")' '"source": "build tree"'
jq_is doctor-json-installed "$TMP/out" '.search_path[-1].source == "installed"'
jq_is doctor-json-cpu-device "$TMP/out" \
  '.devices | any(.plugin == "cpu" and .ok and .probe.available and .probe.count == 1)' \
  '"plugin": "cpu"'
jq_is doctor-json-cpu-extensions "$TMP/out" \
  '.devices | any(.plugin == "cpu" and .extensions == ["sg_device_fill", "sg_program_in_place"])' \
  '"sg_program_in_place"'

# The reducers a :reduce may name: the core's, then each loaded reducer
# plugin's (diagnostics/ and the example) with its outputs.
jq_is doctor-json-core-reducers "$TMP/out" \
  '.reducers.core == ["mean", "rms", "l2", "max-abs", "min", "max", "std", "frac-zero", "frac-nonfinite", "histogram"]'
jq_is doctor-json-reducer-plugins "$TMP/out" \
  '[.reducers.plugins[] | select(.name == "quantiles" or .name == "kurtosis" or .name == "mean-abs")] == [{"name": "mean-abs", "outputs": ["mean", "count"]}, {"name": "kurtosis", "outputs": ["kurtosis"]}, {"name": "quantiles", "outputs": ["p01", "p05", "p25", "p50", "p75", "p95", "p99"]}]' \
  '"outputs"'
env -u SEXPGPU_PLUGIN_PATH "$BIN" doctor >"$TMP/out" 2>"$TMP/err"
grep -q "^  quantiles: p01 p05 p25 p50 p75 p95 p99$" "$TMP/out" && grep -q "^reducers (defdiagnostic :reduce):$" "$TMP/out"
check doctor-human-reducers $? "$TMP/out"

# The test plugins: every reason, and the test device's probe.
SEXPGPU_PLUGIN_PATH="$TESTPLUGINS" "$BIN" doctor --json >"$TMP/out" 2>"$TMP/err"
check doctor-test-plugins-exit-0 $? "$TMP/err"
jq_is doctor-path-first "$TMP/out" \
  ".search_path[0] == {\"dir\": \"$TESTPLUGINS\", \"source\": \"SEXPGPU_PLUGIN_PATH\"}"
reason() {  # reason FILE-NAME WANTED-REASON
  jq_is "doctor-reason-$1" "$TMP/out" \
    ".plugins | any((.path | endswith(\"/$1\")) and .status == \"not loaded\" and .reason == \"$2\")" \
    "\"reason\": \"$2\""
}
reason libsexpgpu-abi2.so "ABI major 2, this core speaks 1"
reason libsexpgpu-no-entry.so "no entry point sexpgpu_plugin_entry_v1"
reason libsexpgpu-null-entry.so "entry point returned NULL (the plugin cannot serve this core)"
reason libsexpgpu-small-struct.so "struct_size 20 is too small for sg_plugin 1.0 (48)"
reason libsexpgpu-throws.so "entry point threw: no GPU driver found"
reason libsexpgpu-missing-dep.so \
  "libsexpgpu-dep-absent.so: cannot open shared object file: No such file or directory"
jq_is doctor-device-probed "$TMP/out" \
  '.devices | any(. == {"plugin": "test-device", "ok": false, "probe": {"available": false, "reason": "test device: not available", "devices": [], "count": 0}, "extensions": []})'


# A device that can serve: exit 0.
SEXPGPU_TEST_DEVICE_AVAILABLE=1 SEXPGPU_PLUGIN_PATH="$TESTPLUGINS" "$BIN" doctor >"$TMP/out" 2>"$TMP/err"
check doctor-device-ok-exit-0 $? "$TMP/err"
grep -q '^  test-device: {"available":true' "$TMP/out"
check doctor-human-probe $? "$TMP/out"
grep -A1 '^  test-device: ' "$TMP/out" | grep -q '^    extensions: none$'
check doctor-human-no-extensions $? "$TMP/out"
grep -q "reason: ABI major 2, this core speaks 1" "$TMP/out"
check doctor-human-reason $? "$TMP/out"

# --include-dir holds the header.
INC=$("$BIN" --include-dir)
check include-dir $? 
[ -f "$INC/sexpgpu/plugin.h" ]
check include-dir-has-header $?

# A private plugin: the example sink compiled with cc alone into a temp
# dir. It shadows the build tree's copy (same name, earlier directory).
mkdir -p "$TMP/private"
cc -std=c99 -Wall -Wextra -pedantic -Werror -shared -fPIC -I"$INC" \
  "$SRC/plugins/example-sink/example_sink.c" -o "$TMP/private/libsexpgpu-my-sink.so" 2>"$TMP/cc"
check private-plugin-compiles $? "$TMP/cc"
SEXPGPU_PLUGIN_PATH="$TMP/private:$TMP/nowhere" "$BIN" doctor --json >"$TMP/out" 2>"$TMP/err"
check private-plugin-doctor-exit-0 $? "$TMP/err"
jq_is private-plugin-loaded "$TMP/out" \
  ".plugins[0] == {\"name\": \"example-sink\", \"kind\": \"sink\", \"version\": \"1.0.0\", \"abi\": \"1.3\", \"status\": \"loaded\", \"reason\": \"\", \"path\": \"$TMP/private/libsexpgpu-my-sink.so\"}" \
  "\"path\": \"$TMP/private/libsexpgpu-my-sink.so\""
jq_is private-plugin-shadows "$TMP/out" \
  ".plugins | any(.status == \"not loaded\" and .reason == \"shadowed by $TMP/private/libsexpgpu-my-sink.so\")" \
  "\"reason\": \"shadowed by $TMP/private/libsexpgpu-my-sink.so\""
jq_is private-plugin-path-order "$TMP/out" \
  "[.search_path[].dir][0:2] == [\"$TMP/private\", \"$TMP/nowhere\"]"

# An installed layout (bin/, include/, lib/sexpgpu/plugins/ under one
# prefix): --include-dir is <prefix>/include, the installed plugins load,
# and the build tree is not searched.
P="$TMP/prefix"
mkdir -p "$P/bin" "$P/include/sexpgpu" "$P/lib/sexpgpu/plugins"
cp "$BIN" "$P/bin/sexpgpu"
cp "$INC/sexpgpu/plugin.h" "$P/include/sexpgpu/"
cp "$TMP/private/libsexpgpu-my-sink.so" "$P/lib/sexpgpu/plugins/libsexpgpu-example-sink.so"
[ "$("$P/bin/sexpgpu" --include-dir)" = "$P/include" ]
check installed-include-dir $?
env -u SEXPGPU_PLUGIN_PATH "$P/bin/sexpgpu" doctor --json >"$TMP/out" 2>"$TMP/err"
check installed-doctor-exit-5 $(($? != 5)) "$TMP/err"
grep -q "cannot start a run: no device plugin loads" "$TMP/err"
check installed-no-device-says-why $? "$TMP/err"
jq_is installed-search-path "$TMP/out" \
  ".search_path == [{\"dir\": \"$P/lib/sexpgpu/plugins\", \"source\": \"installed\"}]"
jq_is installed-sink-loaded "$TMP/out" \
  ".plugins == [{\"name\": \"example-sink\", \"kind\": \"sink\", \"version\": \"1.0.0\", \"abi\": \"1.3\", \"status\": \"loaded\", \"reason\": \"\", \"path\": \"$P/lib/sexpgpu/plugins/libsexpgpu-example-sink.so\"}]"

# Also as C++17: the header is C and C++ alike.
printf '#include <sexpgpu/plugin.h>\nint main() { return SG_ABI_MAJOR - 1; }\n' >"$TMP/h.cpp"
c++ -std=c++17 -Wall -Wextra -pedantic -Werror -I"$INC" "$TMP/h.cpp" -o "$TMP/h" 2>"$TMP/cc" && "$TMP/h"
check header-cxx17 $? "$TMP/cc"

[ "$skipped" -gt 0 ] && echo "$skipped checks skipped: jq is not installed"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
