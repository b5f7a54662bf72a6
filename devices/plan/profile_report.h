// The per-kernel profile file both devices write (SEXPGPU_CPU_PROFILE,
// SEXPGPU_CUDA_PROFILE): PREFIX.FUNCTION.json, each step with its
// measured_us (and roofline_us, 0 where the device has none), their totals
// and the number of runs averaged. bench/profile_summary.py reads it.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

namespace sexpgpu::plan {

void write_profile_report(const std::string& prefix, const std::string& function,
                          nlohmann::json steps, int64_t runs, const std::string& device);

}  // namespace sexpgpu::plan
