// The `kurtosis` reducer plugin (diagnostics/README.md): a tensor's excess
// kurtosis, m4 / m2² − 3 over its n values (population moments: 0 for a
// normal distribution, −1.2 for a uniform one, large for heavy tails such
// as outlier features). The moments are updated one value at a time
// (Pébay's formulas), so a large mean costs no digits and update may be
// called any number of times. A constant tensor's kurtosis is undefined
// (NaN, null in the diag event), as is one holding NaN or ±inf.
#include <cmath>
#include <cstdint>

#include "sexpgpu/sdk/reducer.h"

namespace {

class Kurtosis {
 public:
  static constexpr const char* kName = "kurtosis";
  static constexpr const char* kVersion = "1.0.0";
  static constexpr const char* kOutputs[] = {"kurtosis"};

  explicit Kurtosis(std::string_view options) { sexpgpu::sdk::no_options(options); }

  void update(const float* values, size_t count) {
    for (size_t i = 0; i < count; ++i) add(values[i]);
  }

  void finish(double* out) { out[0] = double(n_) * m4_ / (m2_ * m2_) - 3.0; }

 private:
  // One value into the running mean and central sums m2, m3, m4.
  void add(double x) {
    double n1 = double(n_);
    ++n_;
    double n = double(n_);
    double delta = x - mean_, delta_n = delta / n, delta_n2 = delta_n * delta_n;
    double term = delta * delta_n * n1;
    mean_ += delta_n;
    m4_ += term * delta_n2 * (n * n - 3 * n + 3) + 6 * delta_n2 * m2_ - 4 * delta_n * m3_;
    m3_ += term * delta_n * (n - 2) - 3 * delta_n * m2_;
    m2_ += term;
  }

  uint64_t n_ = 0;
  double mean_ = 0, m2_ = 0, m3_ = 0, m4_ = 0;
};

}  // namespace

SEXPGPU_SDK_ENTRY(sexpgpu::sdk::ReducerPlugin<Kurtosis>::kPlugin)
