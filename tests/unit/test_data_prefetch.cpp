// core/data Prefetcher: the same batch sequence as the loader alone, the
// consumed position for checkpoints, stop-and-rewind, errors forwarded.
#include <algorithm>

#include "data/prefetch.h"
#include "test_data_files.h"

using namespace sexpgpu;
using namespace sexpgpu::data;
using namespace data_test;

namespace {

SourcePtr blobs() {
  ir::Result<SourcePtr> s = open_synthetic({SyntheticKind::Blobs, 103, 3, 4, 0, 0, 5});
  REQUIRE(s.ok());
  return *s;
}

Loader make_loader(SourcePtr s, int64_t batch = 8) {
  ir::Result<Loader> l = Loader::create(std::move(s), {"train", batch, true, false, 0.0, 1.0, 11});
  REQUIRE(l.ok());
  return std::move(l).value();
}

bool same_batch(const Batch& a, const Batch& b) {
  if (a.size != b.size || a.epoch != b.epoch || a.fields.size() != b.fields.size()) return false;
  for (size_t f = 0; f < a.fields.size(); ++f) {
    const BatchField &x = a.fields[f], &y = b.fields[f];
    if (x.name != y.name || !(x.shape == y.shape) || x.size_bytes != y.size_bytes) return false;
    if (!std::equal(x.data().begin(), x.data().end(), y.data().begin())) return false;
  }
  return true;
}

}  // namespace

TEST_CASE("prefetch: yields exactly the loader's batch sequence", "[data]") {
  int depth = GENERATE(1, 3, 16);
  Loader alone = make_loader(blobs());
  Prefetcher ahead(make_loader(blobs()), depth);
  for (int i = 0; i < 40; ++i) {  // about three epochs of 14 batches
    ir::Result<Batch> a = alone.next(), b = ahead.next();
    REQUIRE((a.ok() && b.ok()));
    CHECK(same_batch(*a, *b));
  }
  CHECK(ahead.state() == alone.state());
}

TEST_CASE("prefetch: the saved position is the consumer's, not the thread's", "[data]") {
  Loader alone = make_loader(blobs());
  Prefetcher ahead(make_loader(blobs()), 8);
  for (int i = 0; i < 5; ++i) {
    REQUIRE(alone.next().ok());
    REQUIRE(ahead.next().ok());
  }
  nlohmann::json saved = ahead.save();
  CHECK(saved["offset"] == 40);
  CHECK(saved["counters"]["batches"] == 5);
  Loader resumed = make_loader(blobs());
  REQUIRE(resumed.restore(saved).ok());
  for (int i = 0; i < 20; ++i) CHECK(same_batch(*alone.next(), *resumed.next()));
}

TEST_CASE("prefetch: stop gives the loader back at the consumed position", "[data]") {
  Loader alone = make_loader(blobs());
  Prefetcher ahead(make_loader(blobs()), 4);
  for (int i = 0; i < 3; ++i) {
    REQUIRE(alone.next().ok());
    REQUIRE(ahead.next().ok());
  }
  Loader back = std::move(ahead).stop();
  CHECK(back.state() == alone.state());
  REQUIRE(back.apply_stage({16, std::nullopt}).ok());
  REQUIRE(alone.apply_stage({16, std::nullopt}).ok());
  Prefetcher again(std::move(back), 4);
  for (int i = 0; i < 10; ++i) CHECK(same_batch(*alone.next(), *again.next()));
}

TEST_CASE("prefetch: a load error reaches the consumer, every time", "[data]") {
  TempDir dir;
  write_file(dir / "t.bin", std::string(40, 'a'));
  ir::Result<SourcePtr> t = open_text({dir / "t.bin"}, 4);
  REQUIRE(t.ok());
  std::filesystem::remove(dir / "t.bin");
  ir::Result<Loader> l = Loader::create(*t, {"text", 2, false, false, 0, 1, 0});
  REQUIRE(l.ok());
  Prefetcher ahead(std::move(l).value(), 2);
  for (int i = 0; i < 2; ++i) {
    ir::Result<Batch> b = ahead.next();
    REQUIRE_FALSE(b.ok());
    CHECK(b.error() == "loader text: \"" + (dir / "t.bin").string() + "\": missing (no such file)");
  }
  CHECK(ahead.state().counters.batches == 0);
}

TEST_CASE("prefetch: destroying it with a full queue and an idle consumer is clean", "[data]") {
  for (int i = 0; i < 20; ++i) {
    Prefetcher ahead(make_loader(blobs(), 1), 2);
    if (i % 2) REQUIRE(ahead.next().ok());
  }
  SUCCEED("joined");
}
