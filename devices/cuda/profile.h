// Per-kernel timing of a program's runs, for finding where a step's time
// goes: with SEXPGPU_CUDA_PROFILE=PREFIX every run launches its steps one by
// one (no CUDA graph) between CUDA events, waits, and adds each step's time;
// when the program is destroyed (the run's end) it writes
// PREFIX.FUNCTION.json: each step's kernel, mean time and roofline time.
// The first run is a warm-up and is not counted.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace sexpgpu::cuda {

class Profile {
 public:
  // The prefix from the environment, "" when profiling is off.
  static std::string prefix();

  explicit Profile(size_t steps);
  ~Profile();
  Profile(const Profile&) = delete;
  Profile& operator=(const Profile&) = delete;

  // Records the event in front of step k (k == steps: after the last).
  std::string mark(size_t k, cudaStream_t stream);
  // Waits for the run just enqueued and adds its step times.
  std::string collect();
  int64_t runs() const { return runs_; }
  // Mean milliseconds of step k over the counted runs.
  double mean_ms(size_t k) const { return runs_ > 0 ? total_ms_[k] / double(runs_) : 0.0; }

  // Writes the report: `steps` holds one object per step (kernel, ops,
  // roofline_us), to which the measured times are added.
  static void write(const std::string& path, const std::string& function, nlohmann::json steps,
                    const Profile& profile);

 private:
  std::vector<cudaEvent_t> events_;
  std::vector<double> total_ms_;
  int64_t runs_ = 0;
  bool warmed_up_ = false;
};

}  // namespace sexpgpu::cuda
