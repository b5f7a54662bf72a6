// A gradient bucket's all_reduce as both devices lower it (ops.def,
// "Collective"; docs/devices.md, "Gradient buckets"): which requests are
// lowerable (float operands, reduction "mean" or "sum"), and where each
// operand goes in the packed 1-D output.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace sexpgpu::plan {

struct BucketLayout {
  std::vector<size_t> bytes;  // each operand's, packed in order
  size_t total = 0;           // their sum: the output's bytes
  size_t element = 0;         // bytes per element of the dtype
  bool mean = false;          // reduction "mean" (else "sum")
  size_t count() const { return element ? total / element : 0; }
};

// "" with `out` filled, or why the node cannot be an all_reduce kernel.
inline std::string bucket_layout(ir::Op op, ir::DType dtype, const ir::Attrs& attrs,
                                 std::span<const ir::TensorType> inputs, BucketLayout& out) {
  if (op != ir::Op::AllReduce) return "not a collective op";
  if (!ir::is_float(dtype)) return "all_reduce sums floats only";
  if (!attrs.reduction || (*attrs.reduction != "mean" && *attrs.reduction != "sum"))
    return "the `reduction` is not \"mean\" or \"sum\"";
  out = {};
  out.element = ir::size_bytes(dtype);
  out.mean = *attrs.reduction == "mean";
  for (const ir::TensorType& t : inputs) {
    out.bytes.push_back(size_t(t.shape.numel().value_or(0)) * out.element);
    out.total += out.bytes.back();
  }
  return "";
}

}  // namespace sexpgpu::plan
