#!/usr/bin/env bash
# End-to-end tests of `sexpgpu explain`: the report of the examples against
# numbers worked out by hand (parameter counts, the forward FLOPs by the cost
# model's rules), the JSON document, --device, and the exit codes.
# Usage: explain.sh PATH/TO/sexpgpu SOURCE_DIR
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

# jq_is NAME FILE FILTER: the filter yields true.
jq_is() {
  [ "$(jq -r "$3" "$2" 2>/dev/null)" = "true" ]
  check "$1" $? "$2"
}

if ! command -v jq >/dev/null; then
  echo "skip explain: jq is not installed"
  exit 0
fi

# smallest.lisp: y = x w + b with w [8,1]: 9 parameters. Forward per step of
# 32 rows: the product 2*32*8*1 = 512, the bias 32, mse's subtract, square
# and mean 3*32: 640.
"$BIN" explain "$SRC/examples/smallest.lisp" >"$TMP/out" 2>"$TMP/err"
check smallest-exit-0 $? "$TMP/err"
grep -qE "^  net\.fc\.weight +\[8,1\] +f32 +8 " "$TMP/out"
check smallest-text-param $? "$TMP/out"
grep -qE "^  total 9 in 2 tensors" "$TMP/out"
check smallest-text-total $? "$TMP/out"
"$BIN" explain "$SRC/examples/smallest.lisp" --json >"$TMP/out" 2>"$TMP/err"
check smallest-json-exit-0 $? "$TMP/err"
jq_is smallest-json-count "$TMP/out" '.parameter_totals == {"tensors": 2, "count": 9, "trainable": 9, "frozen": 0, "bytes": 36}'
jq_is smallest-json-forward "$TMP/out" '.flops.forward == 640'
jq_is smallest-json-total "$TMP/out" '.flops.total == .flops.forward + .flops.backward + .flops.update'
jq_is smallest-json-loader "$TMP/out" \
  '.loaders[0] | .examples == 1024 and .batches_per_epoch == 32 and .fields[0].shape == [32, 8] and .train'
jq_is smallest-json-memory "$TMP/out" \
  '.memory | .parameters == 36 and .gradients == 36 and .total == .parameters + .gradients + .optimizer_state + .update_outputs + .batch + .activations + .workspace'
jq_is smallest-json-no-tokens "$TMP/out" '.flops.per_token == null'

# mlp.lisp (Debian's dataset-fashion-mnist): 784*256+256 + 256*10+10.
if [ -r /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ]; then
  "$BIN" explain "$SRC/examples/mlp.lisp" --json --variant wide >"$TMP/out" 2>"$TMP/err"
  check mlp-exit-0 $? "$TMP/err"
  jq_is mlp-wide-count "$TMP/out" '.parameter_totals.count == 784*1024 + 1024 + 1024*10 + 10'
  jq_is mlp-slug "$TMP/out" '.selection.slug == "mlp.wide"'
  jq_is mlp-eval-loader "$TMP/out" '.loaders[1] | .name == "test" and .evals == ["test"] and (.train | not)'
  jq_is mlp-adamw-state "$TMP/out" '.memory.optimizer_state == 2 * .memory.parameters'
else
  echo "skip mlp: dataset-fashion-mnist is not installed"
fi

# gpt2.lisp, small-test: depth 2, width 128, vocab 512, seq-len 64, batch 4.
# Parameters: wte 512*128, wpe 64*128, per block 2 norms (2*256) + qkv
# (128*384+384) + proj (128*128+128) + fc (128*512+512) + proj (512*128+128),
# and ln-f 256. Forward FLOPs: the matmuls 2*256 tokens*(2*196608 + 65536)
# and causal attention 2*(4*4*64*64*32*4/2), plus a little elementwise work.
sed 's/:precision :bf16/:precision :f32/' "$SRC/examples/gpt2.lisp" >"$TMP/gpt2.lisp"
"$BIN" explain "$TMP/gpt2.lisp" --variant small-test --json >"$TMP/out" 2>"$TMP/err"
check gpt2-small-exit-0 $? "$TMP/err"
jq_is gpt2-small-count "$TMP/out" \
  '.parameter_totals.count == 512*128 + 64*128 + 2*(512 + 128*384+384 + 128*128+128 + 128*512+512 + 512*128+128) + 256'
jq_is gpt2-small-forward "$TMP/out" \
  '(2*256*(2*196608 + 65536) + 2*(4*4*64*64*32*2)) as $mm | .flops.forward >= $mm and .flops.forward < 1.02 * $mm'
jq_is gpt2-small-tokens "$TMP/out" '.flops.tokens_per_step == 256 and .flops.per_token == .flops.total / 256'
"$BIN" explain "$TMP/gpt2.lisp" --json >"$TMP/out" 2>"$TMP/err"
check gpt2-exit-0 $? "$TMP/err"
jq_is gpt2-count "$TMP/out" '.parameter_totals.count == 124475904'

# --device: the cpu plugin's lowering report; a plugin that is not there.
"$BIN" explain "$SRC/examples/smallest.lisp" --device cpu --json >"$TMP/out" 2>"$TMP/err"
check device-cpu-exit-0 $? "$TMP/err"
jq_is device-cpu-report "$TMP/out" \
  '.lowering.functions[0] | .function == "train_step" and .report.device == "cpu" and .memory_plan_bytes > 0'
"$BIN" explain "$SRC/examples/smallest.lisp" --device no-such-device >"$TMP/out" 2>"$TMP/err"
[ $? -eq 2 ] && grep -q "no plugin of that name" "$TMP/err" && [ ! -s "$TMP/out" ]
check device-missing-exit-2 $? "$TMP/err"

# --device cuda: the cuda plugin plans for an H200 where there is no GPU
# (CI), so its lowering report needs none; a plan too big for the device is
# E-MEMORY with need and have. Skipped where the plugin was not built.
if [ -f "$(dirname "$BIN")/../plugins/libsexpgpu-cuda.so" ]; then
  "$BIN" explain "$SRC/examples/gpt2.lisp" --device cuda --json >"$TMP/out" 2>"$TMP/err"
  check device-cuda-exit-0 $? "$TMP/err"
  cp "$TMP/out" "$TMP/out.json"
  jq_is device-cuda-report "$TMP/out" \
    '.lowering.functions[0].report | .device == "cuda" and .kernels > 100 and .roofline_us > 0
     and ([.steps[] | select(.kernel | test("^matmul<bf16> cublasLt"))] | length) >= 48
     and ([.steps[] | select(.kernel | test("^fused\\["))] | length) > 0
     and ([.steps[] | select(.ops == ["attention"])] | length) >= 12'
  # Attention reads q, k, v and g where the products left them and writes
  # o and dq, dk, dv where their readers want them (attention_views.h): no
  # permute, slice-and-pad or qkv-split kernel is left around it.
  jq_is device-cuda-attention-in-place "$TMP/out" \
    '.lowering.functions[0].report
     | ([.steps[] | select(.kernel | test("^attention(_grad)?<bf16> .* strided"))] | length) == 24
       and ([.steps[] | select(.kernel | test("^permute<bf16>"))] | length) == 0
       and ([.steps[] | select(.ops | index("pad"))] | length) == 0
       and ([.steps[] | select(.kernel | test("bf16\\[16,12,1024,64\\]"))] | length) == 0'
  "$BIN" explain "$SRC/examples/gpt2.lisp" --set batch=2048 --device cuda >"$TMP/out" 2>"$TMP/err"
  [ $? -eq 3 ] && grep -q "E-MEMORY" "$TMP/err" && grep -q "needs [0-9]* bytes" "$TMP/err"
  check device-cuda-memory-exit-3 $? "$TMP/err"
  # The fused classifier (devices.md): four blocks of 4,096 rows, and the
  # peak a run measures, above the train step's plan.
  jq_is device-cuda-fused-classifier "$TMP/out.json" \
    '([.lowering.functions[0].report.steps[] | select(.kernel | test("^linear_cross_entropy<bf16> rows=16384 C=768 V=50304 blocks=4x4096"))] | length) == 1
     and .lowering.peak_bytes > .lowering.functions[0].memory_plan_bytes'
  SEXPGPU_CUDA_CLASSIFIER_BLOCK_BYTES=0 "$BIN" explain "$SRC/examples/gpt2.lisp" --device cuda >"$TMP/out" 2>"$TMP/err"
  [ $? -eq 3 ] && grep -q "SEXPGPU_CUDA_CLASSIFIER_BLOCK_BYTES=0: write a byte count" "$TMP/err"
  check device-cuda-classifier-block-bytes-range $? "$TMP/err"
fi

# A file with errors: exit 1, the diagnostics on standard error only.
printf '(defloader train :source (synthetic :regression :features 8 :examples 64) :batch 8)\n(defrun :steps 1)\n' >"$TMP/bad.lisp"
"$BIN" explain "$TMP/bad.lisp" >"$TMP/out" 2>"$TMP/err"
[ $? -eq 1 ] && grep -q "E-CONTRACT-MISSING" "$TMP/err" && [ ! -s "$TMP/out" ]
check errors-exit-1 $? "$TMP/err"
printf '(+ 1 2)\n' >"$TMP/plain.lisp"
"$BIN" explain "$TMP/plain.lisp" >"$TMP/out" 2>"$TMP/err"
[ $? -eq 1 ] && grep -q "not a run file" "$TMP/err"
check plain-file-exit-1 $? "$TMP/err"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
