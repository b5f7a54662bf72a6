// Which outputs a planned program can write straight over one of its
// inputs, when the caller gives both the same buffer (an optimizer's update
// of a parameter in its own memory, ABI 1.3's sg_program_in_place). Each
// device describes its finished plan as what every step reads of the
// function's inputs and writes of its outputs; the answer is then the same
// rule for all: the output's one writer runs after every other reader of
// the input, and where it reads the input itself it reads each element at
// the index it writes (an elementwise kernel loads its operands' element
// before it stores the result's).
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "ir/graph.h"
#include "ir/types.h"

namespace sexpgpu::plan {

struct Access {
  size_t index;  // the function's input or output number
  ir::Shape shape;  // as the step reads or writes it
};

struct StepAccess {
  // Steps of one launch number run together (a multi-tensor launch);
  // launches run in increasing order.
  size_t launch = 0;
  std::vector<Access> reads;   // of the function's inputs
  std::vector<Access> writes;  // of the function's outputs
  // Each element of what it writes computed from the elements at the same
  // flat index of operands of that shape, loaded before the store.
  bool elementwise = false;
};

// Whether `output` may be written over `input` in the plan `steps`
// (in launch order): exactly one step writes the output; every other step
// reading the input runs in an earlier launch; the writer reads it, if at
// all, elementwise at the written shape.
bool writes_in_place(std::span<const StepAccess> steps, size_t output, size_t input);

}  // namespace sexpgpu::plan

namespace sexpgpu::plan {

// ABI 1.3's answer for a device's program (ProgramT: with function() and
// writes_in_place): numbers out of range are not in place.
template <class ProgramT>
bool in_place_answer(const ProgramT& program, size_t output, size_t input) {
  const ir::Function& fn = program.function();
  return output < fn.outputs.size() && input < fn.inputs.size() &&
         program.writes_in_place(output, input);
}

// Whether a run can write outputs[j] straight over every input that is the
// same buffer (ProgramT: a device's program with writes_in_place).
template <class ProgramT, class Buffer>
bool run_writes_in_place(const ProgramT& program, Buffer* const* inputs, size_t input_count,
                         Buffer* const* outputs, size_t j) {
  for (size_t k = 0; k < input_count; ++k)
    if (inputs[k] == outputs[j] && !program.writes_in_place(j, k)) return false;
  return true;
}

}  // namespace sexpgpu::plan
