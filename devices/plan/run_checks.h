// What every device checks of a `run` call before it touches a buffer
// (plugin.h, sg_device_api::run): as many inputs and outputs as the function
// has, none NULL, each of the type the function gives it; and of a `fill`
// (sg_device_fill), that the value is one element of the buffer's dtype.
// Both devices' sg_buffer hold their `ir::TensorType type`, so one template
// serves both.
#pragma once

#include <string>

#include "ir/graph.h"

namespace sexpgpu::plan {

// "" when a value of `value_bytes` is one element of the buffer's dtype.
template <class Buffer>
std::string fill_value_problem(const Buffer* b, size_t value_bytes) {
  if (value_bytes == ir::size_bytes(b->type.dtype)) return "";
  return "fill with a value of " + std::to_string(value_bytes) + " bytes of a buffer of " +
         b->type.to_string();
}

// "" when the buffers fit `fn`, else the message of the first that does not.
template <class Buffer>
std::string run_buffers_problem(const ir::Function& fn, Buffer* const* inputs, size_t input_count,
                                Buffer* const* outputs, size_t output_count) {
  if (input_count != fn.inputs.size() || output_count != fn.outputs.size())
    return "'" + fn.name + "' takes " + std::to_string(fn.inputs.size()) + " inputs and " +
           std::to_string(fn.outputs.size()) + " outputs, given " + std::to_string(input_count) +
           " and " + std::to_string(output_count);
  // Called once a step for every buffer of every function: the message is
  // built only for a buffer that does not fit.
  auto problem = [](const ir::TensorType& want, const Buffer* b, auto what) {
    if (b && b->type == want) return std::string();
    if (!b) return what() + " is NULL";
    return what() + " is " + b->type.to_string() + ", the function needs " + want.to_string();
  };
  for (size_t k = 0; k < input_count; ++k)
    if (std::string e =
            problem(fn.type(fn.inputs[k]), inputs[k], [&] { return "input " + std::to_string(k); });
        !e.empty())
      return e;
  for (size_t j = 0; j < output_count; ++j)
    if (std::string e = problem(
            fn.type(fn.outputs[j].node), outputs[j],
            [&] { return "output " + std::to_string(j) + " ('" + fn.outputs[j].name + "')"; });
        !e.empty())
      return e;
  return "";
}

}  // namespace sexpgpu::plan
