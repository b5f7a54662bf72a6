#!/usr/bin/env bash
# The tensorboard sink end to end: finds the plugin and TensorBoard's
# reader, then runs tensorboard_sink.py (real runs with --sink tensorboard,
# read back with TensorBoard's EventAccumulator and compared with
# events.jsonl). Skips (77) without the tensorboard package in the test
# venv (scripts/install-deps.sh --tests); a build without the plugin skips
# too, except in CI, where it fails: CI must build it.
# Usage: tensorboard_sink.sh PATH/TO/sexpgpu SOURCE_DIR VENV_PYTHON
set -u
BIN=$1
SRC=$2
PY=$3
PLUGIN="$(dirname "$(dirname "$BIN")")/plugins/libsexpgpu-tensorboard.so"
if [ ! -f "$PLUGIN" ]; then
  if [ "${CI:-}" = "true" ]; then
    echo "FAIL: $PLUGIN was not built (no protobuf at configure time?); CI must build it"
    exit 1
  fi
  echo "SKIP: the tensorboard sink was not built (install libprotobuf-dev and protobuf-compiler, then reconfigure)"
  exit 77
fi
if [ ! -x "$PY" ]; then
  echo "SKIP: no test venv at $PY (scripts/install-deps.sh --tests makes it)"
  exit 77
fi
if ! err=$("$PY" -c "import tensorboard.backend.event_processing.event_accumulator" 2>&1); then
  echo "SKIP: $PY cannot import tensorboard (scripts/install-deps.sh --tests installs it): ${err##*$'\n'}"
  exit 77
fi
exec "$PY" "$SRC/tests/e2e/tensorboard_sink.py" "$BIN" "$SRC"
