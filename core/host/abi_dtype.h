// The C ABI's dtype numbers (sg_dtype of sexpgpu/plugin.h) for the IR's
// dtypes: the two enumerations number them differently.
#pragma once

#include "ir/types.h"
#include "sexpgpu/plugin.h"

namespace sexpgpu::host {

inline sg_dtype abi_dtype(ir::DType d) {
  switch (d) {
    case ir::DType::F32: return SG_DTYPE_F32;
    case ir::DType::BF16: return SG_DTYPE_BF16;
    case ir::DType::F16: return SG_DTYPE_F16;
    case ir::DType::F64: return SG_DTYPE_F64;
    case ir::DType::I32: return SG_DTYPE_I32;
    case ir::DType::I64: return SG_DTYPE_I64;
    case ir::DType::U8: return SG_DTYPE_U8;
    case ir::DType::U16: return SG_DTYPE_U16;
    case ir::DType::Bool: return SG_DTYPE_BOOL;
  }
  return SG_DTYPE_F32;
}

}  // namespace sexpgpu::host
