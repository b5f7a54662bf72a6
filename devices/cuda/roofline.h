// The ceilings the lowering report's roofline times are computed against:
// the datasheet rates of the GPU the program compiles for (an H200 when
// there is none: plan-only), by the unit an op runs on.
#pragma once

#include <algorithm>
#include <string>

#include "context.h"
#include "ir/ops.h"

namespace sexpgpu::cuda {

struct Roofline {
  std::string gpu;     // what the numbers are for
  double bytes_per_s;  // HBM bandwidth
  double tensor_bf16;  // dense bf16/f16 matrix rate, FLOP/s
  double tensor_tf32;  // dense tf32
  double fp32, fp64;   // CUDA cores (fp64: the tensor-core rate)
};

inline Roofline roofline_of(const Context& ctx) {
  // NVIDIA's datasheets for the SXM parts; other GPUs are priced as an H200,
  // which the report says.
  if (ctx.name.find("H100") != std::string::npos)
    return {"NVIDIA H100 SXM", 3.35e12, 989e12, 494e12, 67e12, 67e12};
  return {"NVIDIA H200 SXM", 4.8e12, 989e12, 494e12, 67e12, 67e12};
}

// The floor of one kernel: its FLOPs at the rate of the unit it uses, or its
// bytes at the memory's, whichever takes longer; in microseconds.
inline double roofline_us(const Roofline& r, ir::Op op, ir::DType dtype, bool tf32, double flops,
                          double bytes) {
  bool matrix = op == ir::Op::MatMul || op == ir::Op::Attention || op == ir::Op::AttentionGrad ||
                op == ir::Op::Conv2d || op == ir::Op::Conv2dGradInput ||
                op == ir::Op::Conv2dGradWeight;
  double rate = r.fp32;
  if (dtype == ir::DType::F64) rate = r.fp64;
  if (matrix && (dtype == ir::DType::BF16 || dtype == ir::DType::F16)) rate = r.tensor_bf16;
  if (matrix && dtype == ir::DType::F32 && tf32) rate = r.tensor_tf32;
  return std::max(flops / rate, bytes / r.bytes_per_s) * 1e6;
}

}  // namespace sexpgpu::cuda
