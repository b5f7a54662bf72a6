// Placeholder until the CPU executor lands: compile() reports that it does
// not exist yet. (Replaced by the executor's real implementation.)
#include "program.h"

namespace sexpgpu::cpu {

ir::Result<std::shared_ptr<Program>> Program::compile(const ir::Module&, std::string_view,
                                                      const Options&) {
  return ir::Result<std::shared_ptr<Program>>::failure("the CPU executor is not built yet");
}

}  // namespace sexpgpu::cpu
