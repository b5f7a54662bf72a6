// The IR's dtypes and the C ABI's (sg_dtype of sexpgpu/plugin.h), which
// number them differently: one table, read both ways, by the core when it
// hands a device a buffer and by the device plugins when they take one.
// In core/ir, not in plugins/sdk: the SDK stands on the ABI alone and
// knows no IR, while the core and every device plugin stand on the IR.
#pragma once

#include <optional>
#include <utility>

#include "ir/types.h"
#include "sexpgpu/plugin.h"

namespace sexpgpu::ir {

inline constexpr std::pair<DType, sg_dtype> kAbiDTypes[] = {
    {DType::F32, SG_DTYPE_F32}, {DType::BF16, SG_DTYPE_BF16}, {DType::F16, SG_DTYPE_F16},
    {DType::F64, SG_DTYPE_F64}, {DType::I32, SG_DTYPE_I32},   {DType::I64, SG_DTYPE_I64},
    {DType::U8, SG_DTYPE_U8},   {DType::U16, SG_DTYPE_U16},   {DType::Bool, SG_DTYPE_BOOL},
};
static_assert(std::size(kAbiDTypes) == kDTypeCount, "every IR dtype has an ABI number");

constexpr sg_dtype abi_dtype(DType d) {
  for (const auto& [ir, abi] : kAbiDTypes)
    if (ir == d) return abi;
  return SG_DTYPE_F32;  // unreachable: the table covers every DType
}

// The IR dtype of an ABI number; nullopt for a number the ABI does not
// define (a buffer asked for by a plugin's caller with a bad dtype).
constexpr std::optional<DType> dtype_of_abi(int abi) {
  for (const auto& [ir, number] : kAbiDTypes)
    if (number == abi) return ir;
  return std::nullopt;
}

}  // namespace sexpgpu::ir
