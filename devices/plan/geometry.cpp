// Strides, broadcasting and the collapsing of iteration spaces (geometry.h).
#include "geometry.h"

namespace sexpgpu::cpu {

Dims contiguous_strides(const ir::Shape& shape) {
  Dims s(size_t(shape.rank()), 1);
  for (int64_t a = shape.rank() - 1; a > 0; --a) s[size_t(a - 1)] = s[size_t(a)] * shape[a];
  return s;
}

Dims broadcast_strides(const ir::Shape& from, const ir::Shape& to) {
  Dims own = contiguous_strides(from);
  Dims s(size_t(to.rank()), 0);
  int64_t lead = to.rank() - from.rank();
  for (int64_t a = 0; a < from.rank(); ++a)
    if (from[a] != 1) s[size_t(a + lead)] = own[size_t(a)];
  return s;
}

Space make_space(const ir::Shape& out, std::span<const Dims> strides) {
  Space sp;
  sp.operands = int(strides.size());
  sp.numel = numel(out);
  if (sp.numel == 0) {  // nothing to visit: one empty row
    sp.dims = {0};
    for (int k = 0; k < sp.operands; ++k) sp.strides[size_t(k)] = {0};
    return sp;
  }
  for (int64_t a = 0; a < out.rank(); ++a) {
    if (out[a] == 1) continue;
    bool merge = !sp.dims.empty();
    for (int k = 0; k < sp.operands && merge; ++k)
      merge = sp.strides[size_t(k)].back() == strides[size_t(k)][size_t(a)] * out[a];
    if (merge) {
      sp.dims.back() *= out[a];
      for (int k = 0; k < sp.operands; ++k)
        sp.strides[size_t(k)].back() = strides[size_t(k)][size_t(a)];
    } else {
      sp.dims.push_back(out[a]);
      for (int k = 0; k < sp.operands; ++k)
        sp.strides[size_t(k)].push_back(strides[size_t(k)][size_t(a)]);
    }
  }
  return sp;
}

int64_t Space::row_offset(int k, int64_t r) const {
  int64_t off = 0;
  for (size_t a = dims.empty() ? 0 : dims.size() - 1; a-- > 0;) {
    off += (r % dims[a]) * strides[size_t(k)][a];
    r /= dims[a];
  }
  return off;
}

TakeGeometry take_geometry(const ir::Shape& x, int64_t axis, const ir::Shape& ids) {
  TakeGeometry g;
  for (int64_t a = 0; a < x.rank(); ++a) {
    if (a < axis)
      g.pre *= x[a];
    else if (a == axis)
      g.n = x[a];
    else
      g.post *= x[a];
  }
  g.ids = numel(ids);
  return g;
}

}  // namespace sexpgpu::cpu
