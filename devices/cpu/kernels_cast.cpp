// Dtype conversion (cast, every pair of the nine dtypes), the creation ops
// (full, constant, arange), plain copies, and the helpers every kernel
// family shares for names and errors.
#include <cstring>

#include "kernel.h"
#include "parallel.h"
#include "storage.h"

namespace sexpgpu::cpu {

std::string kernel_label(ir::Op op, ir::DType dtype) {
  return std::string(ir::info(op).ir_name) + "<" + std::string(ir::ir_name(dtype)) + ">";
}

KernelResult no_kernel(const KernelRequest& r, const std::string& why) {
  std::string operands;
  for (const ir::TensorType& t : r.inputs)
    operands += (operands.empty() ? "" : ", ") + t.to_string();
  return KernelResult::failure("the CPU device has no kernel for '" +
                               std::string(ir::info(r.op).ir_name) + "' of (" + operands + ") -> " +
                               r.output.to_string() + ": " + why);
}

Kernel make_copy_kernel(size_t bytes) {
  KernelFn fn = [bytes](const void* const* in, void* out) -> std::string {
    if (bytes > 0 && in[0] != out) std::memcpy(out, in[0], bytes);
    return {};
  };
  return Kernel{std::move(fn), "copy"};
}

KernelResult make_cast_kernel(const KernelRequest& r) {
  int64_t n = numel(r.output.shape);
  int threads = r.threads;
  std::string name = "cast<" + std::string(ir::ir_name(r.inputs[0].dtype)) + "->" +
                     std::string(ir::ir_name(r.output.dtype)) + ">";
  return dispatch_storage(r.inputs[0].dtype, [&](auto s) -> KernelResult {
    using S = decltype(s);
    return dispatch_storage(r.output.dtype, [&](auto d) -> KernelResult {
      using D = decltype(d);
      KernelFn fn = [n, threads](const void* const* in, void* out) -> std::string {
        const S* x = static_cast<const S*>(in[0]);
        D* o = static_cast<D*>(out);
        parallel_range(n, 4, threads, [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) o[i] = convert<D>(x[i]);
        });
        return {};
      };
      return Kernel{std::move(fn), name};
    });
  });
}

namespace {

// A kernel that writes value(i) as the output's dtype for every element.
template <class ValueAt>
KernelResult fill_kernel(const KernelRequest& r, ValueAt value_at, const std::string& name) {
  int64_t n = numel(r.output.shape);
  return dispatch_storage(r.output.dtype, [&](auto d) -> KernelResult {
    using D = decltype(d);
    KernelFn fn = [n, value_at](const void* const*, void* out) -> std::string {
      D* o = static_cast<D*>(out);
      for (int64_t i = 0; i < n; ++i) o[i] = convert<D>(value_at(i));
      return {};
    };
    return Kernel{std::move(fn), name};
  });
}

}  // namespace

KernelResult make_creation_kernel(const KernelRequest& r) {
  std::string name = kernel_label(r.op, r.output.dtype);
  switch (r.op) {
    case ir::Op::Full: {
      if (!r.attrs.value) return no_kernel(r, "the `value` attribute is missing");
      double v = *r.attrs.value;
      return fill_kernel(
          r, [v](int64_t) { return v; }, name);
    }
    case ir::Op::Constant: {
      if (!r.attrs.data || int64_t(r.attrs.data->size()) != numel(r.output.shape))
        return no_kernel(r, "`data` needs one number per element");
      std::vector<double> data = *r.attrs.data;
      return fill_kernel(
          r, [data](int64_t i) { return data[size_t(i)]; }, name);
    }
    case ir::Op::Arange: {
      double start = r.attrs.start.value_or(0.0), step = r.attrs.step.value_or(1.0);
      return fill_kernel(
          r, [start, step](int64_t i) { return start + double(i) * step; }, name);
    }
    default: return no_kernel(r, "not a creation op");
  }
}

}  // namespace sexpgpu::cpu
