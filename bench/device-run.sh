#!/bin/bash
# Everything one GPU measurement needs, in one call on the GPU machine
# (../shared/device/README.md): unpack the Debian packages that machine
# lacks, configure and build with all cores, run the GPU tests (conformance
# on the cuda plugin, cuda_parity.py's training checks), then the benchmarks
# against PyTorch; a short table comes last. Logs go to $OUT.
#
#   bench/device-run.sh [build] [test] [nccl] [ab] [cpucore] [cputorch] [cpuprofile] [cpufuse] [startup]
#                       [profile] [mlp-profile] [mlp-wait] [torch-profile] [bench]   (default: build test bench)
#
# The packages travel in .devdeps/debs (ignored by git; carried by the
# device tool): `bench/device-deps.sh` downloads them here. Call it without
# a pipe (the tool returns the output's tail itself) and with a time limit
# the session's remaining device time can cover: starting a machine takes
# one to three minutes of it.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/sexpgpu-out}
# Logs gather here and come back as one archive: the device tool returns at
# most 8 files.
LOGS=/tmp/sexpgpu-logs
mkdir -p "$OUT" "$LOGS"
# Whatever ends the script (its end, or the device tool's time limit), the
# logs so far come back; and everything printed goes to $OUT/run.log too,
# since a killed pipeline returns no output.
trap 'tar czf "$OUT/logs.tgz" -C "$LOGS" . 2>/dev/null' EXIT
trap 'exit 143' TERM INT
exec > >(tee -a "$OUT/run.log") 2>&1
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
# Gloo's CMake package names its library by absolute path: point it here.
sed -i "s|\"/usr/lib/libgloo|\"$DEPS/usr/lib/libgloo|g" "$DEPS"/usr/share/cmake/Gloo/GlooTargets-*.cmake
export LD_LIBRARY_PATH=$LIB/openblas-pthread:$LIB:$DEPS/usr/lib:${LD_LIBRARY_PATH:-}

# configure SOURCE BUILD: the GPU build of a source tree.
configure() {
  local zlib=()
  if [ ! -f /usr/include/zlib.h ]; then
    zlib=(-DZLIB_INCLUDE_DIR="$DEPS/usr/include" -DZLIB_LIBRARY=/usr/lib/x86_64-linux-gnu/libz.so.1)
  fi
  cmake -S "$1" -B "$2" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CUDA_ARCHITECTURES=90a -DSEXPGPU_CUDA=ON \
    -DCMAKE_PREFIX_PATH="$DEPS/usr" -DBLA_VENDOR=OpenBLAS \
    -DCMAKE_LIBRARY_PATH="$LIB/openblas-pthread;$LIB" \
    -DCMAKE_CXX_FLAGS="-I$DEPS/usr/include -I$DEPS/usr/include/x86_64-linux-gnu/openblas-pthread" \
    -DCMAKE_EXE_LINKER_FLAGS="-Wl,-rpath-link,$LIB" \
    -DCMAKE_SHARED_LINKER_FLAGS="-Wl,-rpath-link,$LIB" \
    -DCMAKE_MODULE_LINKER_FLAGS="-Wl,-rpath-link,$LIB" \
    "${zlib[@]}"
}

if has build; then
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm --format=csv | tee "$LOGS/gpu.txt"
  start=$(date +%s)
  configure "$SRC" "$BUILD" > "$LOGS/cmake.log" 2>&1 || { tail -40 "$LOGS/cmake.log"; note "configure FAILED"; }
  # The nccl plugin is built where the toolkit has NCCL (devices/nccl).
  nccl_target=()
  ninja -C "$BUILD" -t targets all 2>/dev/null | grep -q '^sexpgpu-nccl:' && nccl_target=(sexpgpu-nccl)
  if ninja -C "$BUILD" sexpgpu sexpgpu-cpu sexpgpu-cuda "${nccl_target[@]}" conformance cuda_tests \
      > "$LOGS/build.log" 2>&1; then
    note "build ok in $(( $(date +%s) - start )) s"
  else
    grep -E "error|FAILED" "$LOGS/build.log" | head -40
    note "build FAILED"
  fi
fi

if has test; then
  "$BUILD/tests/cuda/cuda_tests" > "$LOGS/cuda_tests.log" 2>&1 && note "cuda_tests ok" \
    || { tail -20 "$LOGS/cuda_tests.log"; note "cuda_tests FAILED"; }
  "$BUILD/tests/conformance/conformance" > "$LOGS/conformance.log" 2>&1
  grep -E "^device|^FAIL" "$LOGS/conformance.log" | head -60
  note "conformance: $(grep -E '^device cuda' "$LOGS/conformance.log")"
  # The fused classifier in blocks of 64 rows: several blocks and a shorter last one.
  SEXPGPU_CUDA_CLASSIFIER_BLOCK_BYTES=4096 "$BUILD/tests/conformance/conformance" \
    linear_cross_entropy > "$LOGS/conformance_blocks.log" 2>&1
  note "conformance, classifier blocks of 64 rows: $(grep -E '^device cuda|^FAIL' "$LOGS/conformance_blocks.log" | head -5)"
  SEXPGPU_DATA=$SRC/.devdeps/data SEXPGPU_FORTUNES=$SRC/.devdeps/data/fortunes \
    python3 "$SRC/tests/e2e/cuda_parity.py" "$BUILD/core/sexpgpu" "$SRC" > "$LOGS/cuda_e2e.log" 2>&1
  rc=$?
  tail -30 "$LOGS/cuda_e2e.log"
  note "cuda_parity.py exit $rc"
  # Each parameter's update launched on its own, the path multi-tensor launches replace.
  SEXPGPU_CUDA_MULTI_TENSOR=0 SEXPGPU_DATA=$SRC/.devdeps/data \
    SEXPGPU_FORTUNES=$SRC/.devdeps/data/fortunes \
    python3 "$SRC/tests/e2e/cuda_parity.py" "$BUILD/core/sexpgpu" "$SRC" > "$LOGS/cuda_e2e_mt.log" 2>&1
  rc=$?
  tail -12 "$LOGS/cuda_e2e_mt.log"
  note "cuda_parity.py with SEXPGPU_CUDA_MULTI_TENSOR=0 exit $rc"
fi

if has nccl; then
  # The nccl device at a world of one: parity with cuda, the buckets'
  # overlap with the backward, the per-step cost (tests/e2e/nccl_parity.py).
  SEXPGPU_DATA=$SRC/.devdeps/data SEXPGPU_FORTUNES=$SRC/.devdeps/data/fortunes \
    python3 "$SRC/tests/e2e/nccl_parity.py" "$BUILD/core/sexpgpu" "$SRC" > "$LOGS/nccl.log" 2>&1
  rc=$?
  tail -20 "$LOGS/nccl.log"
  note "nccl_parity.py exit $rc"
fi

# median_step_ms LOG: the median step-ms of a run's --json step events
# after the first fifth of them ("none" with fewer than four).
median_step_ms() {
  python3 -c "import json,statistics,sys
s=[json.loads(l)['metrics']['step-ms'] for l in open(sys.argv[1]) if l.startswith('{') and json.loads(l)['kind']=='step' and 'step-ms' in json.loads(l).get('metrics',{})]
print(f'{statistics.median(s[len(s)//5:]):.4f}' if len(s)>3 else 'none')" "$1"
}

if has ab; then
  # The same work on two source trees, alternated: a change's before and
  # after in one call. The before is .devdeps/base.tar (`git archive BASE
  # > .devdeps/base.tar` here); AB_WORKS names the examples (default mlp),
  # AB_STEPS their steps. Each side's median step-ms after the first fifth.
  OLD=/tmp/ab-base
  mkdir -p "$OLD" && tar xf "$SRC/.devdeps/base.tar" -C "$OLD"
  configure "$OLD" "$OLD/build-gpu" > "$LOGS/cmake-base.log" 2>&1 &&
    ninja -C "$OLD/build-gpu" sexpgpu sexpgpu-cpu sexpgpu-cuda > "$LOGS/build-base.log" 2>&1 ||
    { tail -20 "$LOGS/build-base.log"; note "base build FAILED"; }
  for work in ${AB_WORKS:-mlp}; do
    for round in 1 2 3; do
      for which in base now; do
        bin=$BUILD/core/sexpgpu
        [ $which = base ] && bin=$OLD/build-gpu/core/sexpgpu
        log=$LOGS/ab-$work-$which-$round.jsonl
        SEXPGPU_DATA=$SRC/.devdeps/data "$bin" run "$SRC/examples/$work.lisp" --device cuda \
          --steps "${AB_STEPS:-2000}" --json --quiet --out "/tmp/ab-$work-$which-$round" --fresh > "$log" 2>&1
        ms=$(median_step_ms "$log")
        note "ab $work round $round $which: median step $ms ms"
      done
    done
  done
fi

# charlm's corpus where device-deps.sh copied it.
CORPUS=$(for f in cookie computers definitions people; do printf '"%s" ' "$SRC/.devdeps/data/fortunes/$f"; done)

if has cpucore; then
  # The CPU device on this machine's Xeon: which OpenBLAS kernel Debian's
  # OpenBLAS picks (its `driver` in doctor), and the mlp's and charlm's
  # steps at one thread under it and under the kernels OPENBLAS_CORETYPE
  # names (issue 22, item 5).
  lscpu | grep -E "Model name|Flags" | cut -c1-200
  for core in ${CPUCORE_LIST:-default SkylakeX Cooperlake Haswell}; do
    for work in ${CPUCORE_WORKS:-mlp charlm}; do
      file=$SRC/examples/$work.lisp; extra=(--steps 400)
      [ $work = charlm ] && extra=(--variant tiny --steps 150 --set "corpus=($CORPUS)")
      env_core=(); [ $core = default ] || env_core=(OPENBLAS_CORETYPE=$core)
      env "${env_core[@]}" SEXPGPU_DATA=$SRC/.devdeps/data \
        "$BUILD/core/sexpgpu" run "$file" "${extra[@]}" --device cpu --threads 1 --json --quiet \
        --out "/tmp/cpucore-$work-$core" --fresh > "$LOGS/cpucore-$work-$core.jsonl" 2>&1
      ms=$(python3 -c "import json,statistics,sys
s=[json.loads(l)['metrics']['step-ms'] for l in open(sys.argv[1]) if l.startswith('{') and json.loads(l)['kind']=='step']
print(f'{statistics.median(s[2:]):.3f}' if len(s)>3 else 'none')" "$LOGS/cpucore-$work-$core.jsonl")
      kernel=$(python3 -c "import json,sys
for l in open(sys.argv[1]):
    if l.startswith('{') and json.loads(l)['kind']=='open':
        print(json.loads(l)['device']['devices'][0].get('driver','?').split('(kernel ')[-1].rstrip(')')); break" "$LOGS/cpucore-$work-$core.jsonl")
      note "cpucore $work OPENBLAS_CORETYPE=$core (kernel $kernel) --threads 1: median step $ms ms"
    done
  done
fi

if has cputorch; then
  # The CPU device against this machine's PyTorch (MKL) on its Xeon, the
  # development machine's bench as it is (issue 22, item 5).
  SEXPGPU_DATA=$SRC/.devdeps/data SEXPGPU_FORTUNES=$SRC/.devdeps/data/fortunes \
    python3 "$SRC/bench/train_vs_torch.py" "$BUILD/core/sexpgpu" ${CPUTORCH_ARGS:-} 2>&1 | tee "$OUT/cputorch.log" | tail -25
  note "cputorch: see cputorch.log"
fi

if has cpuprofile; then
  # charlm's step on this machine's CPU kernel by kernel (SEXPGPU_CPU_PROFILE)
  # at one and two threads, for comparing with the development machine's.
  for t in 1 2; do
    SEXPGPU_CPU_PROFILE=$LOGS/cpuprofile-charlm-$t "$BUILD/core/sexpgpu" run "$SRC/examples/charlm.lisp" \
      --variant tiny --steps 100 --set "corpus=($CORPUS)" --device cpu --threads $t --quiet \
      --out "/tmp/cpuprofile-$t" --fresh 2>&1 | head -1
    python3 "$SRC/bench/profile_summary.py" "$LOGS/cpuprofile-charlm-$t" 14 | sed -n '/^train_step:/,/^update:/p'
  done
  note "cpuprofile: charlm at 1 and 2 threads, in the logs"
fi

if has cpufuse; then
  # The fused classifier's CPU kernel on this machine's Xeon: charlm's step
  # with the pass on and off (SEXPGPU_FUSE_CLASSIFIER), alternated.
  for round in 1 2; do
    for t in 1 2; do
      for fuse in 1 0; do
        log=$LOGS/cpufuse-$t-$fuse-$round.jsonl
        SEXPGPU_FUSE_CLASSIFIER=$fuse "$BUILD/core/sexpgpu" run "$SRC/examples/charlm.lisp" \
          --variant tiny --steps 300 --set "corpus=($CORPUS)" --device cpu --threads $t --json --quiet \
          --out "/tmp/cpufuse" --fresh > "$log" 2>&1
        ms=$(median_step_ms "$log")
        note "cpufuse round $round threads $t fuse $fuse: charlm median step $ms ms"
      done
    done
  done
fi

if has startup; then
  # Process start to the first step event and to exit, empty cache then
  # warm (bench/startup.py; issue 22, item 3); each run's log is kept.
  for work in gpt2 mlp; do
    mkdir -p "$LOGS/startup-$work"
    SEXPGPU_DATA=$SRC/.devdeps/data python3 "$SRC/bench/startup.py" "$BUILD/core/sexpgpu" \
      "$SRC/examples/$work.lisp" --logs "$LOGS/startup-$work" > "$LOGS/startup-$work.txt" 2>&1
    tail -5 "$LOGS/startup-$work.txt"
    note "startup $work: $(grep '^cold:' "$LOGS/startup-$work.txt")"
  done
fi

if has mlp-profile; then
  # The mlp's step kernel by kernel (issue 22, item 4: fewer kernels).
  SEXPGPU_DATA=$SRC/.devdeps/data SEXPGPU_CUDA_PROFILE=$OUT/mlpprof "$BUILD/core/sexpgpu" run \
    "$SRC/examples/mlp.lisp" --device cuda --steps 20 --quiet --out /tmp/mlp-profile --fresh \
    > "$LOGS/mlp_profile_run.log" 2>&1
  python3 "$SRC/bench/profile_summary.py" "$OUT/mlpprof" 40 > "$OUT/mlp_profile.txt"
  head -60 "$OUT/mlp_profile.txt"
  note "mlp profile: see mlp_profile.txt"
fi

if has mlp-wait; then
  # Whether the host or the GPU sets the mlp's pace: each run's log says how
  # much of a step the host waited in the device's synchronize (CUDA graphs
  # on, then off).
  for graphs in 1 1 0; do
    SEXPGPU_DATA=$SRC/.devdeps/data SEXPGPU_CUDA_GRAPHS=$graphs "$BUILD/core/sexpgpu" run \
      "$SRC/examples/mlp.lisp" --device cuda --steps 3000 --log info --out /tmp/mlp-wait --fresh \
      2>&1 | grep "info\] steps:" | sed "s/^/graphs $graphs: /"
  done
  note "mlp-wait: above"
fi

if has profile; then
  # Where GPT-2's step goes: every kernel timed with CUDA events.
  SEXPGPU_CUDA_PROFILE=$OUT/prof "$BUILD/core/sexpgpu" run "$SRC/examples/gpt2.lisp" --device cuda \
    --steps 6 --quiet --out /tmp/gpt2-profile --fresh > "$LOGS/profile_run.log" 2>&1
  python3 "$SRC/bench/profile_summary.py" "$OUT/prof" 25 > "$OUT/profile.txt"
  head -70 "$OUT/profile.txt"
  note "profile: see profile.txt"
fi

if has torch-profile; then
  # Where torch.compile's step goes, to set beside the profile above.
  python3 "$SRC/bench/nanogpt_torch.py" --mode compile --steps 15 --warmup 10 \
    --profile "$OUT/torch_profile.txt" > "$LOGS/torch_profile.log" 2>&1
  head -75 "$OUT/torch_profile.txt"
  note "torch profile: see torch_profile.txt"
fi

if has bench; then
  SEXPGPU_DATA=$SRC/.devdeps/data SEXPGPU_FORTUNES=$SRC/.devdeps/data/fortunes \
    python3 "$SRC/bench/gpu_vs_torch.py" "$BUILD/core/sexpgpu" "$SRC" ${BENCH_ARGS:-} 2>&1 | tee "$OUT/bench.log" | tail -30
  note "bench: see bench.log"
fi

echo
echo "==== summary"
printf '%s\n' "${summary[@]}"
