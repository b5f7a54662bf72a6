// Per-kernel timing (profile.h).
#include "profile.h"

#include <cstdlib>

#include "check.h"
#include "plan/profile_report.h"

namespace sexpgpu::cuda {

std::string Profile::prefix() {
  const char* p = std::getenv("SEXPGPU_CUDA_PROFILE");
  return p ? std::string(p) : std::string();
}

Profile::Profile(size_t steps) : events_(steps + 1, nullptr), total_ms_(steps, 0.0) {
  for (cudaEvent_t& e : events_) cudaEventCreate(&e);
}

Profile::~Profile() {
  for (cudaEvent_t e : events_)
    if (e) cudaEventDestroy(e);
}

std::string Profile::mark(size_t k, cudaStream_t stream) {
  return cuda_error(cudaEventRecord(events_[k], stream), "cudaEventRecord (profile)");
}

std::string Profile::collect() {
  SG_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(events_.back()));
  if (!warmed_up_) {
    warmed_up_ = true;
    return {};
  }
  for (size_t k = 0; k < total_ms_.size(); ++k) {
    float ms = 0;
    SG_CUDA_RETURN_IF_ERROR(cudaEventElapsedTime(&ms, events_[k], events_[k + 1]));
    total_ms_[k] += double(ms);
  }
  ++runs_;
  return {};
}

void Profile::write(const std::string& path, const std::string& function, nlohmann::json steps,
                    const Profile& profile) {
  for (size_t k = 0; k < steps.size(); ++k) steps[k]["measured_us"] = profile.mean_ms(k) * 1000.0;
  plan::write_profile_report(path, function, std::move(steps), profile.runs(), "cuda");
}

}  // namespace sexpgpu::cuda
