#!/usr/bin/env bash
# `sexpgpu check` on a 2,000-line file of ordinary definitions, timed with
# hyperfine when installed (apt-get install hyperfine), else with a loop.
# Target (issue 2): under 100 ms.
# Usage: bench/check_speed.sh [path/to/sexpgpu]
set -euo pipefail
BIN=${1:-build/core/sexpgpu}
FILE=$(mktemp --suffix=.lisp)
trap 'rm -f "$FILE"' EXIT
python3 "$(dirname "$0")/gen_defs.py" 2000 >"$FILE"
"$BIN" check "$FILE"
if command -v hyperfine >/dev/null; then
  hyperfine --warmup 3 --runs 30 "$BIN check $FILE"
else
  python3 - "$BIN" "$FILE" <<'PY'
import subprocess, sys, time
runs = []
for _ in range(30):
    t = time.perf_counter()
    subprocess.run([sys.argv[1], "check", sys.argv[2]], check=True)
    runs.append(time.perf_counter() - t)
runs.sort()
print(f"check of 2,000 lines: median {runs[15]*1000:.1f} ms, min {runs[0]*1000:.1f} ms, max {runs[-1]*1000:.1f} ms (30 runs)")
PY
fi
