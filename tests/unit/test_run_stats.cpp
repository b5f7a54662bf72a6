// core/run tensor_stats: f16 and bf16 widened exactly (values from NumPy and
// PyTorch), min/max/mean/RMS over the finite values.
#include <cmath>

#include "run/tensor_stats.h"
#include "test_run_util.h"

using namespace sexpgpu;
using namespace sexpgpu::run;
using namespace run_test;

TEST_CASE("element_value widens f16 and bf16 exactly", "[run][stats]") {
  // np.array([1.5, -2, 65504, 6.1035e-05, 5.96e-08, inf], np.float16).view(np.uint16)
  std::vector<uint16_t> f16 = {0x3e00, 0xc000, 0x7bff, 0x0400, 0x0001, 0x7c00};
  std::vector<double> f16_want = {1.5,     -2.0, 65504.0, 6.103515625e-05, 5.960464477539063e-08,
                                  INFINITY};
  for (size_t i = 0; i < f16.size(); ++i)
    CHECK(element_value(ir::DType::F16, bytes_of(f16).data() + 2 * i) == f16_want[i]);
  uint16_t nan16 = 0x7e00;
  CHECK(std::isnan(element_value(ir::DType::F16, reinterpret_cast<const std::byte*>(&nan16))));
  // torch.tensor([1, -3.5, 1e30], dtype=torch.bfloat16)
  std::vector<uint16_t> bf16 = {0x3f80, 0xc060, 0x714a};
  std::vector<double> bf16_want = {1.0, -3.5, 1.0002555517425873e+30};
  for (size_t i = 0; i < bf16.size(); ++i)
    CHECK(element_value(ir::DType::BF16, bytes_of(bf16).data() + 2 * i) == bf16_want[i]);
  std::vector<int64_t> i64 = {-5};
  CHECK(element_value(ir::DType::I64, bytes_of(i64).data()) == -5.0);
}

TEST_CASE("tensor_stats over the finite values", "[run][stats]") {
  std::vector<double> v = {1.0, -2.0, 3.0, NAN};
  TensorStats s = tensor_stats(ir::DType::F64, bytes_of(v));
  CHECK(s.count == 4);
  CHECK(s.nonfinite == 1);
  CHECK(s.min == -2.0);
  CHECK(s.max == 3.0);
  CHECK(s.mean == Approx(0.6666666666666666).epsilon(1e-15));
  CHECK(s.rms == Approx(2.160246899469287).epsilon(1e-15));
  std::vector<uint8_t> b = {1, 0, 1, 1};
  s = tensor_stats(ir::DType::Bool, bytes_of(b));
  CHECK(s.mean == 0.75);
  CHECK(s.max == 1.0);
  std::vector<float> none;
  s = tensor_stats(ir::DType::F32, bytes_of(none));
  CHECK(s.count == 0);
  CHECK(s.mean == 0.0);
}
