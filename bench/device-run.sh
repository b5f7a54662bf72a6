#!/bin/bash
# Everything one GPU measurement needs, in one call on the GPU machine
# (../shared/device/README.md): unpack the Debian packages that machine
# lacks, configure and build with all cores, run the GPU tests (conformance
# on the cuda plugin, cuda_parity.py's training checks), then the benchmarks
# against PyTorch; a short table comes last. Logs go to $OUT.
#
#   bench/device-run.sh [build] [test] [profile] [bench]   (default: build test bench)
#
# The packages travel in .devdeps/debs (ignored by git; carried by the
# device tool): `bench/device-deps.sh` downloads them here.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/sexpgpu-out}
mkdir -p "$OUT"
SRC=$(pwd)
BUILD=$SRC/build-gpu
STAGES=${*:-build test bench}
has() { [[ " $STAGES " == *" $1 "* ]]; }
summary=()
note() { summary+=("$1"); echo "== $1"; }

DEPS=$SRC/.devdeps/root
LIB=$DEPS/usr/lib/x86_64-linux-gnu
mkdir -p "$DEPS"
for f in "$SRC"/.devdeps/debs/*.deb; do dpkg -x "$f" "$DEPS"; done
export LD_LIBRARY_PATH=$LIB/openblas-pthread:$LIB:${LD_LIBRARY_PATH:-}

if has build; then
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm --format=csv | tee "$OUT/gpu.txt"
  zlib=()
  if [ ! -f /usr/include/zlib.h ]; then
    zlib=(-DZLIB_INCLUDE_DIR="$DEPS/usr/include" -DZLIB_LIBRARY=/usr/lib/x86_64-linux-gnu/libz.so.1)
  fi
  start=$(date +%s)
  cmake -S "$SRC" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CUDA_ARCHITECTURES=90a -DSEXPGPU_CUDA=ON \
    -DCMAKE_PREFIX_PATH="$DEPS/usr" -DBLA_VENDOR=OpenBLAS \
    -DCMAKE_LIBRARY_PATH="$LIB/openblas-pthread;$LIB" \
    -DCMAKE_CXX_FLAGS="-I$DEPS/usr/include -I$DEPS/usr/include/x86_64-linux-gnu/openblas-pthread" \
    -DCMAKE_EXE_LINKER_FLAGS="-Wl,-rpath-link,$LIB" \
    -DCMAKE_SHARED_LINKER_FLAGS="-Wl,-rpath-link,$LIB" \
    -DCMAKE_MODULE_LINKER_FLAGS="-Wl,-rpath-link,$LIB" \
    "${zlib[@]}" > "$OUT/cmake.log" 2>&1 || { tail -40 "$OUT/cmake.log"; note "configure FAILED"; }
  if ninja -C "$BUILD" sexpgpu sexpgpu-cpu sexpgpu-cuda conformance cuda_tests \
      > "$OUT/build.log" 2>&1; then
    note "build ok in $(( $(date +%s) - start )) s"
  else
    grep -E "error|FAILED" "$OUT/build.log" | head -40
    note "build FAILED"
  fi
fi

if has test; then
  "$BUILD/tests/cuda/cuda_tests" > "$OUT/cuda_tests.log" 2>&1 && note "cuda_tests ok" \
    || { tail -20 "$OUT/cuda_tests.log"; note "cuda_tests FAILED"; }
  "$BUILD/tests/conformance/conformance" > "$OUT/conformance.log" 2>&1
  grep -E "^device|^FAIL" "$OUT/conformance.log" | head -60
  note "conformance: $(grep -E '^device cuda' "$OUT/conformance.log")"
  SEXPGPU_DATA=$SRC/.devdeps/data SEXPGPU_FORTUNES=$SRC/.devdeps/data/fortunes \
    python3 "$SRC/tests/e2e/cuda_parity.py" "$BUILD/core/sexpgpu" "$SRC" > "$OUT/cuda_e2e.log" 2>&1
  rc=$?
  tail -30 "$OUT/cuda_e2e.log"
  note "cuda_parity.py exit $rc"
  # The multi-tensor launches, off by default until this passes on a GPU.
  SEXPGPU_CUDA_MULTI_TENSOR=1 SEXPGPU_DATA=$SRC/.devdeps/data \
    SEXPGPU_FORTUNES=$SRC/.devdeps/data/fortunes \
    python3 "$SRC/tests/e2e/cuda_parity.py" "$BUILD/core/sexpgpu" "$SRC" > "$OUT/cuda_e2e_mt.log" 2>&1
  rc=$?
  tail -12 "$OUT/cuda_e2e_mt.log"
  note "cuda_parity.py with SEXPGPU_CUDA_MULTI_TENSOR=1 exit $rc"
fi

if has profile; then
  # Where GPT-2's step goes: every kernel timed with CUDA events.
  SEXPGPU_CUDA_PROFILE=$OUT/prof "$BUILD/core/sexpgpu" run "$SRC/examples/gpt2.lisp" --device cuda \
    --steps 6 --quiet --out /tmp/gpt2-profile --fresh > "$OUT/profile_run.log" 2>&1
  python3 "$SRC/bench/profile_summary.py" "$OUT/prof" 25 | tee "$OUT/profile.txt" | head -70
  note "profile: see profile.txt"
fi

if has bench; then
  SEXPGPU_DATA=$SRC/.devdeps/data SEXPGPU_FORTUNES=$SRC/.devdeps/data/fortunes \
    python3 "$SRC/bench/gpu_vs_torch.py" "$BUILD/core/sexpgpu" "$SRC" ${BENCH_ARGS:-} 2>&1 | tee "$OUT/bench.log" | tail -30
  note "bench: see bench.log"
fi

echo
echo "==== summary"
printf '%s\n' "${summary[@]}"
