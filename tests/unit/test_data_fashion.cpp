// core/data on the real Fashion-MNIST of Debian's dataset-fashion-mnist
// (/usr/share/datasets/fashion-mnist); skipped where it is not installed.
// Known values from NumPy on the decompressed files: train label 0 is 9
// (ankle boot), labels 1-2 are 0 0; image 0 sums to 76247 with pixel
// (14, 14) = 217; image 59999 sums to 16684; test labels start 9 2 1 1 6.
#include <chrono>
#include <numeric>

#include "data/lookup.h"
#include "data/prefetch.h"
#include "test_data_files.h"

using namespace sexpgpu;
using namespace sexpgpu::data;
using namespace data_test;

namespace {

std::optional<std::pair<fs::path, fs::path>> fashion(const std::string& prefix) {
  DataDirs dirs{fs::temp_directory_path() / "sexpgpu-no-run-dir", {}, kSystemDatasetDir};
  auto images = find_data_file("fashion-mnist/" + prefix + "-images-idx3-ubyte.gz", dirs);
  auto labels = find_data_file("fashion-mnist/" + prefix + "-labels-idx1-ubyte.gz", dirs);
  if (!images || !labels) return std::nullopt;
  return std::make_pair(*images, *labels);
}

int64_t pixel_sum(std::span<const uint8_t> image) {
  return std::accumulate(image.begin(), image.end(), int64_t{0});
}

}  // namespace

TEST_CASE("fashion-mnist: the train set's shapes and known values", "[data]") {
  auto files = fashion("train");
  if (!files) {
    WARN("dataset-fashion-mnist is not installed: skipped");
    return;
  }
  auto opened_at = std::chrono::steady_clock::now();
  ir::Result<SourcePtr> s = open_idx(files->first, files->second);
  double open_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - opened_at)
          .count();
  INFO(s.error());
  REQUIRE(s.ok());
  CHECK(open_ms < 200);  // headers and trailers only: no decompression at open
  CHECK((*s)->size() == 60000);
  CHECK((*s)->fields()[0].shape == ir::Shape{28, 28});
  ir::Result<Loader> l = Loader::create(*s, {"train", 128, false, true, 0.0, 1.0, 0});
  REQUIRE(l.ok());
  Loader loader = std::move(l).value();
  CHECK(loader.batches_per_epoch() == 468);
  ir::Result<Batch> b = loader.next();
  REQUIRE(b.ok());
  std::span<const uint8_t> x = b->find("x")->values<uint8_t>();
  std::span<const int32_t> y = b->find("y")->values<int32_t>();
  CHECK(b->find("x")->shape == ir::Shape{128, 28, 28});
  CHECK(y[0] == 9);
  CHECK(y[1] == 0);
  CHECK(y[2] == 0);
  CHECK(pixel_sum(x.subspan(0, 784)) == 76247);
  CHECK(x[14 * 28 + 14] == 217);
  CHECK(gather_field<uint8_t>(**s, {59999}, 0).size() == 784);
  std::vector<uint8_t> last = gather_field<uint8_t>(**s, {59999}, 0);
  CHECK(pixel_sum(last) == 16684);

  // A shuffled batch of 128 gathers in microseconds (the budget here is loose:
  // the machine may be busy).
  std::vector<int64_t> indices(128);
  for (int64_t i = 0; i < 128; ++i) indices[i] = (i * 7919) % 60000;
  std::vector<std::byte> xs(128 * 784), ys(128 * 4);
  std::vector<std::byte*> out = {xs.data(), ys.data()};
  auto t0 = std::chrono::steady_clock::now();
  const int reps = 200;
  for (int r = 0; r < reps; ++r) (*s)->gather(indices, out);
  double us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() /
      reps;
  WARN("fashion-mnist: gather of 128 images in " << us << " us; open in " << open_ms << " ms");
  CHECK(us < 500);
}

TEST_CASE("fashion-mnist: the test set through a prefetcher", "[data]") {
  auto files = fashion("t10k");
  if (!files) {
    WARN("dataset-fashion-mnist is not installed: skipped");
    return;
  }
  ir::Result<SourcePtr> s = open_idx(files->first, files->second);
  REQUIRE(s.ok());
  ir::Result<Loader> l = Loader::create(*s, {"test", 1000, false, false, 0.0, 1.0, 0});
  REQUIRE(l.ok());
  Prefetcher ahead(std::move(l).value(), 2);
  int64_t examples = 0;
  for (int i = 0; i < 10; ++i) {
    ir::Result<Batch> b = ahead.next();
    REQUIRE(b.ok());
    if (i == 0) {
      std::vector<int32_t> y = field_values<int32_t>(*b, "y");
      CHECK(std::vector<int32_t>(y.begin(), y.begin() + 5) == std::vector<int32_t>{9, 2, 1, 1, 6});
    }
    examples += b->size;
  }
  CHECK(examples == 10000);
  CHECK(ahead.state().counters.epochs == 1);
}
