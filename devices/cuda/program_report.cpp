// A CUDA program's lowering report (`sexpgpu explain`: every step, its
// kernel, FLOPs, bytes and roofline time, and the memory plan) and, when
// SEXPGPU_CUDA_PROFILE is set, the profile written against it when the
// program is destroyed. Separate because it only reads the plan.
#include <nlohmann/json.hpp>

#include "cuda/plan/program_plan.h"
#include "ir/cost.h"
#include "profile.h"
#include "roofline.h"

namespace sexpgpu::cuda::program_detail {

CudaProgram::~CudaProgram() {
  if (!profile_ || profile_->runs() == 0) return;
  nlohmann::json report = nlohmann::json::parse(report_, nullptr, false);
  if (report.is_object() && report.contains("steps"))
    Profile::write(Profile::prefix(), fn_.name, report["steps"], *profile_);
}

// Every step in order: its kernel or library call, the IR ops it computes,
// FLOPs, bytes read and written, and its roofline time on the device.
std::string CudaProgram::make_report(const Lowered& lowered) const {
  nlohmann::json steps = nlohmann::json::array();
  static const char* kKinds[] = {"input", "output", "arena", "constant", "none"};
  Roofline roof = roofline_of(ctx_);
  bool tf32 = ctx_.precision != Precision::F32;
  double total_flops = 0, total_bytes = 0, total_us = 0;
  for (const Step& s : steps_) {
    double flops = 0;
    nlohmann::json ops = nlohmann::json::array();
    for (NodeId id : s.members) {
      flops += ir::node_flops(fn_, fn_.node(id));
      ops.push_back(std::string(ir::info(fn_.node(id).op).ir_name));
    }
    double us = roofline_us(roof, s.op, s.dtype, tf32, flops, s.bytes);
    nlohmann::json j = {{"node", s.origin}, {"kernel", s.kernel.name}, {"ops", ops},
                        {"flops", flops},   {"bytes", s.bytes},        {"roofline_us", us}};
    j["out"] = {{"in", kKinds[s.output.kind]},
                {s.output.kind == Slot::Arena ? "offset" : "index", s.output.index}};
    if (s.kernel.scratch_bytes) j["scratch_bytes"] = s.kernel.scratch_bytes;
    total_flops += flops;
    total_bytes += s.bytes;
    total_us += us;
    steps.push_back(std::move(j));
  }
  nlohmann::json report = {{"device", "cuda"},
                           {"gpu", ctx_.plan_only ? "none (planned for an H200)" : ctx_.name},
                           {"roofline_gpu", roof.gpu},
                           {"function", fn_.name},
                           {"lowered_nodes", lowered.nodes.size()},
                           {"kernels", steps_.size()},
                           {"arena_bytes", arena_bytes_},
                           {"constant_bytes", constant_bytes_},
                           {"flops", total_flops},
                           {"bytes", total_bytes},
                           {"roofline_us", total_us},
                           {"steps", std::move(steps)}};
  return report.dump();
}

}  // namespace sexpgpu::cuda::program_detail
