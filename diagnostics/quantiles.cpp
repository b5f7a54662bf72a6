// The `quantiles` reducer plugin (diagnostics/README.md): seven quantiles
// of a tensor's finite values, p01 p05 p25 p50 p75 p95 p99, by linear
// interpolation between the closest ranks (the sorted values x[0..n-1],
// quantile q at rank q*(n-1): numpy's default, R's type 7). NaN and ±inf
// are left out, as the core histogram leaves them; with no finite value
// every quantile is NaN (null in the diag event). Exact: the values are
// kept and sorted once at finish, so a tensor costs its size in host memory.
#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <vector>

#include "sexpgpu/sdk/reducer.h"

namespace {

class Quantiles {
 public:
  static constexpr const char* kName = "quantiles";
  static constexpr const char* kVersion = "1.0.0";
  static constexpr const char* kOutputs[] = {"p01", "p05", "p25", "p50", "p75", "p95", "p99"};
  static constexpr double kLevels[] = {0.01, 0.05, 0.25, 0.5, 0.75, 0.95, 0.99};
  static_assert(std::size(kOutputs) == std::size(kLevels));

  explicit Quantiles(std::string_view options) { sexpgpu::sdk::no_options(options); }

  void update(const float* values, size_t count) {
    for (size_t i = 0; i < count; ++i)
      if (std::isfinite(values[i])) finite_.push_back(values[i]);
  }

  void finish(double* out) {
    std::sort(finite_.begin(), finite_.end());
    for (size_t i = 0; i < std::size(kLevels); ++i) out[i] = quantile(kLevels[i]);
  }

 private:
  double quantile(double q) const {
    if (finite_.empty()) return std::numeric_limits<double>::quiet_NaN();
    double rank = q * double(finite_.size() - 1);
    size_t below = size_t(rank);
    if (below + 1 >= finite_.size()) return finite_.back();
    double lo = finite_[below], hi = finite_[below + 1];
    return lo + (rank - double(below)) * (hi - lo);
  }

  std::vector<float> finite_;
};

}  // namespace

SEXPGPU_SDK_ENTRY(sexpgpu::sdk::ReducerPlugin<Quantiles>::kPlugin)
