// The `log2-histogram` reducer plugin (diagnostics/README.md): a histogram
// of |x| in fixed bins, one per power of two, so that its counts compare
// across steps and runs (the core `histogram` spreads its bins from each
// tensor's min to its max). Bin "2^K" counts 2^K <= |x| < 2^(K+1), for K
// from -24 to 15: the range of f16, whose smallest subnormal is 2^-24 and
// largest finite value 65504, and the part of bf16's range that training
// values live in. Around them: "zero" (exact zeros), "below-2^-24" (nonzero
// and smaller, what f16 flushes to zero), "from-2^16" (|x| >= 2^16, what
// f16 overflows to infinity) and "nonfinite" (NaN and ±inf). 44 counts,
// summing to the tensor's size.
#include <cmath>
#include <iterator>

#include "sexpgpu/sdk/reducer.h"

namespace {

class Log2Histogram {
 public:
  static constexpr const char* kName = "log2-histogram";
  static constexpr const char* kVersion = "1.0.0";
  static constexpr int kLowest = -24, kAbove = 16;  // bins 2^-24 .. 2^15
  static constexpr const char* kOutputs[] = {
      "zero",  "below-2^-24", "2^-24", "2^-23", "2^-22", "2^-21", "2^-20",     "2^-19",    "2^-18",
      "2^-17", "2^-16",       "2^-15", "2^-14", "2^-13", "2^-12", "2^-11",     "2^-10",    "2^-9",
      "2^-8",  "2^-7",        "2^-6",  "2^-5",  "2^-4",  "2^-3",  "2^-2",      "2^-1",     "2^0",
      "2^1",   "2^2",         "2^3",   "2^4",   "2^5",   "2^6",   "2^7",       "2^8",      "2^9",
      "2^10",  "2^11",        "2^12",  "2^13",  "2^14",  "2^15",  "from-2^16", "nonfinite"};
  static_assert(std::size(kOutputs) == 2 + (kAbove - kLowest) + 2);

  explicit Log2Histogram(std::string_view options) { sexpgpu::sdk::no_options(options); }

  void update(const float* values, size_t count) {
    for (size_t i = 0; i < count; ++i) ++counts_[bin(values[i])];
  }

  void finish(double* out) {
    for (size_t i = 0; i < std::size(kOutputs); ++i) out[i] = double(counts_[i]);
  }

 private:
  static size_t bin(float x) {
    constexpr size_t zero = 0, below = 1, first = 2, above = first + (kAbove - kLowest);
    if (!std::isfinite(x)) return above + 1;
    if (x == 0) return zero;
    int exponent = std::ilogb(x);  // floor(log2 |x|), exact, subnormals included
    if (exponent < kLowest) return below;
    if (exponent >= kAbove) return above;
    return first + size_t(exponent - kLowest);
  }

  unsigned long long counts_[std::size(kOutputs)] = {};
};

}  // namespace

SEXPGPU_SDK_ENTRY(sexpgpu::sdk::ReducerPlugin<Log2Histogram>::kPlugin)
