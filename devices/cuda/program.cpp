// cuda::Program: compile() lowers the function as the CPU device does
// (devices/plan/lower.h, keeping bf16/f16 matrix products native), makes one
// kernel per live node or fusion group, places every intermediate and every
// kernel's scratch in one arena (devices/plan/memory_plan.h) and keeps a flat
// list of steps. Creation ops are evaluated once, when the program is
// prepared, into device constants; reshape and stop_gradient read their
// operand in place. run() enqueues the steps; the second run with the same
// buffers is captured as a CUDA graph and every later one replays it.
//
// The parts: program_plan.h (the class), program_plan.cpp (build, plan),
// program_merge.cpp (multi-tensor launches), program_run.cpp (prepare,
// run, graphs), program_report.cpp (the report). This file: compile().
#include "program.h"

#include "cuda/plan/program_plan.h"
#include "ir/verify.h"

namespace sexpgpu::cuda {

using program_detail::CudaProgram;

ir::Result<std::shared_ptr<Program>> Program::compile(const ir::Module& module, std::string_view fn,
                                                      Context& context) {
  using R = ir::Result<std::shared_ptr<Program>>;
  const ir::Function* f = module.find(fn);
  if (!f) return R::failure("no function '" + std::string(fn) + "' in the module");
  if (std::string e = ir::verify(module, *f); !e.empty()) return R::failure(e);
  auto program = std::make_shared<CudaProgram>(context);
  if (std::string e = program->build(*f); !e.empty()) return R::failure(e);
  return std::shared_ptr<Program>(std::move(program));
}

}  // namespace sexpgpu::cuda
