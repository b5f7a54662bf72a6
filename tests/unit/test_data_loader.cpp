// core/data Loader: split arithmetic, batches and the short last batch,
// drop-last, the seeded shuffle (against an independent Fisher-Yates written
// from loader.h's description), counters, save/restore, stage overrides
// (:batch and a token source's :seq-len), and the batch shapes a curriculum
// can give (stage_rows) against loaders driven through every schedule.
#include <algorithm>
#include <numeric>
#include <set>

#include "data/loader.h"
#include "ir/philox.h"
#include "test_data_files.h"

using namespace sexpgpu;
using namespace sexpgpu::data;
using namespace data_test;

namespace {

// A source of n examples whose :x (i32) is the example's index and :v (f32)
// ten times it: every batch says which examples it holds.
SourcePtr indexed_source(const TempDir& dir, int32_t n) {
  std::vector<int32_t> x(static_cast<size_t>(n));
  std::vector<float> v(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) {
    x[i] = i;
    v[i] = 10.0f * static_cast<float>(i);
  }
  std::string shape = "(" + std::to_string(n) + ",)";
  write_file(dir / "x.npy", npy_bytes("<i4", shape, le_bytes(x)));
  write_file(dir / "v.npy", npy_bytes("<f4", shape, le_bytes(v)));
  ir::Result<SourcePtr> s = open_npy({{"x", dir / "x.npy"}, {"v", dir / "v.npy"}});
  REQUIRE(s.ok());
  return *s;
}

Loader make_loader(SourcePtr source, LoaderOptions options) {
  ir::Result<Loader> l = Loader::create(std::move(source), std::move(options));
  INFO(l.error());
  REQUIRE(l.ok());
  return std::move(l).value();
}

std::vector<int32_t> next_indices(Loader& loader) {
  ir::Result<Batch> b = loader.next();
  INFO(b.error());
  REQUIRE(b.ok());
  std::vector<int32_t> x = field_values<int32_t>(*b, "x");
  REQUIRE(static_cast<int64_t>(x.size()) == b->size);
  std::vector<float> v = field_values<float>(*b, "v");
  for (size_t i = 0; i < x.size(); ++i) CHECK(v[i] == 10.0f * static_cast<float>(x[i]));
  return x;
}

// Fisher-Yates as loader.h describes it, written independently.
std::vector<int64_t> reference_shuffle(int64_t m, uint64_t seed, const std::string& name,
                                       int64_t epoch) {
  std::vector<int64_t> p(static_cast<size_t>(m));
  std::iota(p.begin(), p.end(), 0);
  auto s = *stage::make_rng_stream(seed, stage::stream_id("loader:" + name),
                                   static_cast<uint64_t>(epoch), 0);
  uint64_t k = 0;
  for (int64_t i = m - 1; i >= 1; --i) {
    uint64_t r = stage::rng_u64(s, k++);
    auto j = static_cast<int64_t>(
        (static_cast<unsigned __int128>(r) * static_cast<uint64_t>(i + 1)) >> 64);
    std::swap(p[i], p[j]);
  }
  return p;
}

}  // namespace

TEST_CASE("split_index: floor(fraction * n), exact for decimal fractions", "[data]") {
  CHECK(split_index(0.9, 60000) == 54000);
  CHECK(split_index(0.29, 100) == 29);  // the double 0.29 times 100 is 28.999999999999996
  CHECK(split_index(0.7, 10) == 7);
  CHECK(split_index(1.0 / 3.0, 10) == 3);
  CHECK(split_index(0.5, 7) == 3);
  CHECK(split_index(0.0, 7) == 0);
  CHECK(split_index(1.0, 7) == 7);
}

TEST_CASE("loader: split, batches, a short last batch, epochs and counters", "[data]") {
  TempDir dir;
  Loader l = make_loader(indexed_source(dir, 10), {"train", 2, false, false, 0.2, 0.7, 0});
  CHECK(l.split_begin() == 2);
  CHECK(l.split_end() == 7);
  CHECK(l.batches_per_epoch() == 3);
  CHECK(l.last_batch_size() == 1);
  CHECK(l.batch_types(2)[0] == ir::TensorType{ir::DType::I32, ir::Shape{2}});
  CHECK(next_indices(l) == std::vector<int32_t>{2, 3});
  CHECK(next_indices(l) == std::vector<int32_t>{4, 5});
  CHECK(l.counters().epochs == 0);
  ir::Result<Batch> last = l.next();
  REQUIRE(last.ok());
  CHECK(last->size == 1);
  CHECK(last->epoch == 0);
  CHECK(last->find("x")->shape == ir::Shape{1});
  CHECK(field_values<int32_t>(*last, "x") == std::vector<int32_t>{6});
  CHECK(l.counters() == LoaderCounters{5, 3, 1, 0});  // the epoch ends with its last batch
  CHECK(l.state().epoch == 1);
  CHECK(next_indices(l) == std::vector<int32_t>{2, 3});
}

TEST_CASE("loader: drop-last skips the remainder", "[data]") {
  TempDir dir;
  Loader l = make_loader(indexed_source(dir, 7), {"train", 3, false, true, 0.0, 1.0, 0});
  CHECK(l.batches_per_epoch() == 2);
  CHECK(l.last_batch_size() == 3);
  CHECK(next_indices(l) == std::vector<int32_t>{0, 1, 2});
  CHECK(next_indices(l) == std::vector<int32_t>{3, 4, 5});
  CHECK(l.counters() == LoaderCounters{6, 2, 1, 0});
  CHECK(next_indices(l) == std::vector<int32_t>{0, 1, 2});
}

TEST_CASE("loader: adjacent splits are disjoint and cover the source", "[data]") {
  TempDir dir;
  SourcePtr s = indexed_source(dir, 101);
  Loader a = make_loader(s, {"train", 1000, false, false, 0.0, 0.9, 0});
  Loader b = make_loader(s, {"val", 1000, false, false, 0.9, 1.0, 0});
  std::vector<int32_t> xa = next_indices(a), xb = next_indices(b);
  CHECK(xa.size() == 90);  // floor(0.9 * 101)
  CHECK(xb.size() == 11);
  std::set<int32_t> all(xa.begin(), xa.end());
  all.insert(xb.begin(), xb.end());
  CHECK(all.size() == 101);
}

TEST_CASE("loader: the shuffle is a seeded permutation per epoch", "[data]") {
  TempDir dir;
  SourcePtr s = indexed_source(dir, 50);
  Loader l = make_loader(s, {"train", 8, true, false, 0.2, 1.0, 42});
  std::vector<int64_t> e0 = l.epoch_order(0), e1 = l.epoch_order(1);
  std::vector<int64_t> ref0 = reference_shuffle(40, 42, "train", 0);
  for (int64_t& i : ref0) i += 10;
  CHECK(e0 == ref0);
  std::vector<int64_t> sorted = e0;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int64_t> split(40);
  std::iota(split.begin(), split.end(), 10);
  CHECK(sorted == split);
  CHECK(e0 != e1);
  CHECK(make_loader(s, {"train", 8, true, false, 0.2, 1.0, 42}).epoch_order(1) == e1);
  CHECK(make_loader(s, {"other", 8, true, false, 0.2, 1.0, 42}).epoch_order(0) != e0);
  CHECK(make_loader(s, {"train", 8, true, false, 0.2, 1.0, 43}).epoch_order(0) != e0);
  // The batches follow the order, epoch after epoch.
  std::vector<int64_t> seen;
  for (int b = 0; b < 10; ++b) {
    for (int32_t x : next_indices(l)) seen.push_back(x);
  }
  std::vector<int64_t> expected = e0;
  expected.insert(expected.end(), e1.begin(), e1.end());
  CHECK(seen == expected);
  CHECK(l.counters() == LoaderCounters{80, 10, 2, 0});
}

TEST_CASE("loader: token sources count tokens", "[data]") {
  TempDir dir;
  std::vector<uint16_t> tokens(41);
  std::iota(tokens.begin(), tokens.end(), uint16_t{0});
  write_file(dir / "t.bin", le_bytes(tokens));
  Loader l = make_loader(*open_tokens({dir / "t.bin"}, ir::DType::U16, 4),
                         {"text", 3, false, false, 0, 1, 0});
  for (int i = 0; i < 4; ++i) REQUIRE(l.next().ok());  // 10 windows: 3 3 3 1
  CHECK(l.counters() == LoaderCounters{10, 4, 1, 40});
}

TEST_CASE("loader: a restored loader continues with byte-identical batches", "[data]") {
  TempDir dir;
  std::vector<uint8_t> pixels(37 * 5);
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<uint8_t>(i * 13);
  write_file(dir / "p.npy", npy_bytes("|u1", "(37, 5)", le_bytes(pixels)));
  SourcePtr s = *open_npy({{"p", dir / "p.npy"}});
  LoaderOptions options{"train", 4, true, GENERATE(false, true), 0.0, 1.0, 9};
  Loader uninterrupted = make_loader(s, options);
  Loader first = make_loader(s, options);
  int stop_after = GENERATE(0, 5, 9, 10, 23);
  for (int i = 0; i < stop_after; ++i) {
    REQUIRE(uninterrupted.next().ok());
    REQUIRE(first.next().ok());
  }
  std::string saved = first.save().dump();
  Loader resumed = make_loader(s, options);
  Status restored = resumed.restore(nlohmann::json::parse(saved));
  INFO(restored.error());
  REQUIRE(restored.ok());
  CHECK(resumed.state() == uninterrupted.state());
  for (int i = 0; i < 25; ++i) {
    ir::Result<Batch> a = uninterrupted.next(), b = resumed.next();
    REQUIRE((a.ok() && b.ok()));
    CHECK(a->size == b->size);
    CHECK(a->epoch == b->epoch);
    const BatchField &fa = a->fields[0], &fb = b->fields[0];
    REQUIRE(fa.size_bytes == fb.size_bytes);
    CHECK(std::equal(fa.data().begin(), fa.data().end(), fb.data().begin()));
  }
  CHECK(resumed.counters() == uninterrupted.counters());
}

TEST_CASE("loader: restore refuses another configuration or a bad state", "[data]") {
  TempDir dir;
  SourcePtr s = indexed_source(dir, 20);
  Loader a = make_loader(s, {"train", 4, true, false, 0.0, 0.5, 1});
  REQUIRE(a.next().ok());
  nlohmann::json saved = a.save();
  CHECK(saved["offset"] == 4);
  CHECK(saved["split"] == nlohmann::json::array({0, 10}));
  Status seed = make_loader(s, {"train", 4, true, false, 0.0, 0.5, 2}).restore(saved);
  REQUIRE_FALSE(seed.ok());
  CHECK(seed.error() == "loader train: cannot resume: the checkpoint's seed is 1, this loader's 2");
  Status split = make_loader(s, {"train", 4, true, false, 0.0, 0.6, 1}).restore(saved);
  REQUIRE_FALSE(split.ok());
  CHECK(split.error().find("the checkpoint's split is [0,10], this loader's [0,12]") !=
        std::string::npos);
  CHECK(make_loader(s, {"train", 5, true, false, 0.0, 0.5, 1})
            .restore(saved)
            .ok());  // batch may change
  nlohmann::json bad = saved;
  bad["offset"] = 10;
  CHECK(make_loader(s, {"train", 4, true, false, 0.0, 0.5, 1})
            .restore(bad)
            .error()
            .find("outside the split") != std::string::npos);
  bad.erase("counters");
  CHECK(make_loader(s, {"train", 4, true, false, 0.0, 0.5, 1})
            .restore(bad)
            .error()
            .find("malformed loader state") != std::string::npos);
}

TEST_CASE("loader: a stage's batch applies at once and keeps the order", "[data]") {
  TempDir dir;
  Loader l = make_loader(indexed_source(dir, 12), {"train", 2, false, true, 0.0, 1.0, 0});
  CHECK(next_indices(l) == std::vector<int32_t>{0, 1});
  REQUIRE(l.apply_stage({5, std::nullopt}).ok());
  CHECK(next_indices(l) == std::vector<int32_t>{2, 3, 4, 5, 6});
  CHECK(next_indices(l) == std::vector<int32_t>{7, 8, 9, 10, 11});
  CHECK(l.counters().epochs == 1);
  REQUIRE(l.apply_stage({7, std::nullopt}).ok());
  CHECK(next_indices(l) == std::vector<int32_t>{0, 1, 2, 3, 4, 5, 6});
  CHECK(l.counters().epochs == 2);  // 5 left: not a whole batch of 7
  Status seq = l.apply_stage({std::nullopt, 64});
  REQUIRE_FALSE(seq.ok());
  CHECK(seq.error().find("loader train: a stage's :seq-len 64: npy ") == 0);
  CHECK(seq.error().find("has no :seq-len") != std::string::npos);
  CHECK(l.apply_stage({13, std::nullopt})
            .error()
            .find("the split has 12 examples, fewer than one batch of 13") != std::string::npos);
  CHECK(l.apply_stage({0, std::nullopt}).error().find("at least 1") != std::string::npos);
}

TEST_CASE("loader: option errors, and a source's load error from next()", "[data]") {
  TempDir dir;
  SourcePtr s = indexed_source(dir, 10);
  CHECK(Loader::create(s, {"a", 0, false, false, 0, 1, 0}).error() ==
        "loader a: :batch must be at least 1, not 0");
  CHECK(
      Loader::create(s, {"a", 1, false, false, 0.6, 0.5, 0}).error().find("is not two fractions") !=
      std::string::npos);
  CHECK(
      Loader::create(s, {"a", 1, false, false, 0.0, 1.5, 0}).error().find("is not two fractions") !=
      std::string::npos);
  CHECK(Loader::create(s, {"a", 1, false, false, 0.5, 0.55, 0}).error() ==
        "loader a: the split [5, 5) of 10 examples is empty");
  CHECK(Loader::create(s, {"a", 6, false, true, 0.0, 0.5, 0}).error() ==
        "loader a: the split has 5 examples, fewer than one batch of 6, and :drop-last drops it");
  // A file replaced by a shorter one between open (check) and the first batch.
  write_file(dir / "t.bin", std::string(20, 'a'));
  ir::Result<SourcePtr> t = open_text({dir / "t.bin"}, 4);
  REQUIRE(t.ok());
  write_file(dir / "t.bin", std::string(10, 'a'));
  Loader l = make_loader(*t, {"text", 2, false, false, 0, 1, 0});
  ir::Result<Batch> b = l.next();
  REQUIRE_FALSE(b.ok());
  CHECK(b.error() ==
        "loader text: \"" + (dir / "t.bin").string() + "\": changed size since it was opened");
}

namespace {

// A tokens source whose token k is k itself (i32), so every window says
// where in the stream it is.
SourcePtr counting_tokens(const TempDir& dir, int32_t tokens, int64_t seq_len) {
  std::vector<int32_t> stream(static_cast<size_t>(tokens));
  std::iota(stream.begin(), stream.end(), 0);
  write_file(dir / "count.bin", le_bytes(stream));
  ir::Result<SourcePtr> s = open_tokens({dir / "count.bin"}, ir::DType::I32, seq_len);
  INFO(s.error());
  REQUIRE(s.ok());
  return *s;
}

// The first token of each window of the next batch, and its shape.
std::vector<int32_t> next_starts(Loader& l, int64_t* rows = nullptr, int64_t* seq_len = nullptr) {
  ir::Result<Batch> b = l.next();
  INFO(b.error());
  REQUIRE(b.ok());
  std::vector<int32_t> x = field_values<int32_t>(*b, "x");
  std::vector<int32_t> y = field_values<int32_t>(*b, "y");
  const int64_t n = b->seq_len;
  REQUIRE(int64_t(x.size()) == b->size * n);
  std::vector<int32_t> starts;
  for (int64_t r = 0; r < b->size; ++r) {
    for (int64_t k = 0; k < n; ++k) {
      CHECK(x[size_t(r * n + k)] == x[size_t(r * n)] + k);      // consecutive tokens
      CHECK(y[size_t(r * n + k)] == x[size_t(r * n + k)] + 1);  // next-token targets
    }
    starts.push_back(x[size_t(r * n)]);
  }
  if (rows) *rows = b->size;
  if (seq_len) *seq_len = n;
  return starts;
}

}  // namespace

TEST_CASE("loader: a stage's :seq-len re-windows the split's tokens and keeps the place",
          "[data]") {
  TempDir dir;
  // 101 tokens at seq-len 10: 10 windows; the split (0.2 1.0) is windows
  // [2, 10), tokens [20, 100].
  SourcePtr s = counting_tokens(dir, 101, 10);
  Loader l = make_loader(s, {"train", 2, false, false, 0.2, 1.0, 0});
  CHECK(next_starts(l) == std::vector<int32_t>{20, 30});
  // 20 tokens given; at seq-len 4 the split's 80 tokens are 20 windows, and
  // the place is window ceil(20 / 4) = 5: token 40.
  REQUIRE(l.apply_stage({3, 4}).ok());
  CHECK(l.examples_per_epoch() == 20);
  CHECK(l.seq_len() == 4);
  int64_t rows = 0, n = 0;
  CHECK(next_starts(l, &rows, &n) == std::vector<int32_t>{40, 44, 48});
  CHECK((rows == 3 && n == 4));
  CHECK(l.counters().tokens == 2 * 10 + 3 * 4);
  // Offset 8 at seq-len 4 (32 tokens) is window ceil(32 / 6) = 6 at seq-len 6,
  // of floor(80 / 6) = 13: token 56; the last window ends at token 98 + 1.
  REQUIRE(l.apply_stage({4, 6}).ok());
  CHECK(l.examples_per_epoch() == 13);
  CHECK(next_starts(l) == std::vector<int32_t>{56, 62, 68, 74});
  CHECK(next_starts(l) == std::vector<int32_t>{80, 86, 92});  // the remainder ends the epoch
  CHECK(l.counters().epochs == 1);
  // Back to the length as opened: the source's own windows, the place moved.
  REQUIRE(l.apply_stage({2, 10}).ok());
  CHECK(l.examples_per_epoch() == 8);
  CHECK(next_starts(l) == std::vector<int32_t>{20, 30});

  // A checkpoint records the length its offset counts in.
  REQUIRE(l.apply_stage({2, 5}).ok());
  CHECK(next_starts(l) == std::vector<int32_t>{40, 45});  // offset 2 at 10 is 4 at 5
  nlohmann::json saved = l.save();
  CHECK(saved["seq_len"] == 5);
  CHECK(saved["split"] == nlohmann::json::array({2, 10}));  // in the source's own windows
  Loader back = make_loader(s, {"train", 2, false, false, 0.2, 1.0, 0});
  REQUIRE(back.apply_stage({2, 5}).ok());
  REQUIRE(back.restore(saved).ok());
  CHECK(back.state() == l.state());
  CHECK(next_starts(back) == next_starts(l));
  Loader other = make_loader(s, {"train", 2, false, false, 0.2, 1.0, 0});
  Status wrong = other.restore(saved);
  REQUIRE_FALSE(wrong.ok());
  CHECK(wrong.error() ==
        "loader train: cannot resume: the checkpoint's seq_len is 5, this "
        "loader's 10");

  // Too long for the split, or not a token source: errors that say so.
  CHECK(make_loader(s, {"train", 2, false, false, 0.2, 1.0, 0}).apply_stage({1, 81}).error() ==
        "loader train: a stage's :seq-len 81 needs 82 tokens, and the split has 81");
  CHECK(make_loader(s, {"train", 2, false, true, 0.2, 1.0, 0}).apply_stage({4, 40}).error() ==
        "loader train: a stage's :batch 4 at :seq-len 40: the split has 2 examples, fewer than "
        "one batch of 4, and :drop-last drops it");
}

TEST_CASE("loader: a :seq-len view of random tokens is the same stream", "[data]") {
  SyntheticSpec spec{SyntheticKind::RandomTokens, 12, 0, 0, 50, 8, 3};
  ir::Result<SourcePtr> s = open_synthetic(spec);
  REQUIRE(s.ok());
  Loader l = make_loader(*s, {"train", 12, false, false, 0.0, 1.0, 0});
  ir::Result<Batch> whole = l.next();
  REQUIRE(whole.ok());
  std::vector<int32_t> x8 = field_values<int32_t>(*whole, "x");
  std::vector<int32_t> y8 = field_values<int32_t>(*whole, "y");
  REQUIRE(l.apply_stage({24, 4}).ok());
  ir::Result<Batch> halves = l.next();
  REQUIRE(halves.ok());
  CHECK(halves->size == 24);
  CHECK(field_values<int32_t>(*halves, "x") == x8);  // the same tokens, cut in 4s
  CHECK(field_values<int32_t>(*halves, "y") == y8);
}

namespace {

// Every batch shape a loader gives when driven through `stages`, moving on
// at each step in `changes` (the steps at which the next stage starts).
std::set<std::pair<int64_t, int64_t>> driven(Loader l, const std::vector<StageOverrides>& stages,
                                             const std::vector<int64_t>& changes, int64_t steps) {
  std::set<std::pair<int64_t, int64_t>> seen;
  size_t stage = 0;
  REQUIRE(l.apply_stage(stages[0]).ok());
  for (int64_t step = 0; step < steps; ++step) {
    while (stage < changes.size() && changes[stage] == step) {
      ++stage;
      REQUIRE(l.apply_stage(stages[stage]).ok());
    }
    ir::Result<Batch> b = l.next();
    REQUIRE(b.ok());
    seen.insert({b->size, b->seq_len});
  }
  return seen;
}

}  // namespace

TEST_CASE("loader: stage_rows holds every batch shape any schedule gives", "[data]") {
  TempDir dir;
  // The curriculum page's example: 480 examples, batch 8 then 32. An epoch
  // entered at any multiple of 8 ends in a remainder of 8, 16 or 24.
  SourcePtr blobs = *open_synthetic({SyntheticKind::Blobs, 600, 4, 3, 0, 0, 1});
  Loader page = make_loader(blobs, {"train", 32, true, false, 0.0, 0.8, 0});
  std::vector<StageOverrides> warm_main = {{8, std::nullopt}, {32, std::nullopt}};
  auto rows = page.stage_rows(warm_main, false);
  REQUIRE(rows.ok());
  using Shape = Loader::Shape;
  CHECK(rows->at(0) == std::vector<Shape>{{8, 0}});
  CHECK(rows->at(1) == std::vector<Shape>{{32, 0}, {24, 0}, {16, 0}, {8, 0}});
  // The step the page's run failed at: main from step 30 gives 16 rows at 37.
  CHECK(driven(page, warm_main, {30}, 40).count({16, 0}) == 1);
  // An evaluation pass starts over in each stage: the batch and m mod batch.
  auto restart = page.stage_rows(warm_main, true);
  REQUIRE(restart.ok());
  CHECK(restart->at(1) == std::vector<Shape>{{32, 0}});
  // :drop-last gives whole batches only.
  Loader dropping = make_loader(blobs, {"train", 32, true, true, 0.0, 0.8, 0});
  CHECK(dropping.stage_rows(warm_main, false)->at(1) == std::vector<Shape>{{32, 0}});

  // Against every schedule of three stages over a token source, with
  // :seq-len and :batch changing: what the loader gives is what stage_rows
  // says, no more and (over all schedules) no less.
  SourcePtr tokens = counting_tokens(dir, 1601, 16);  // 100 windows of 16
  for (bool shuffle : {false, true}) {
    Loader l = make_loader(tokens, {"train", 6, shuffle, false, 0.0, 0.97, 5});
    std::vector<StageOverrides> stages = {{10, 4}, {6, 8}, {7, 16}};
    auto want = l.stage_rows(stages, false);
    REQUIRE(want.ok());
    std::set<std::pair<int64_t, int64_t>> all_want, all_seen;
    for (const auto& stage : *want)
      for (const Shape& s : stage) all_want.insert({s.rows, s.seq_len});
    for (int64_t a = 0; a <= 40; ++a)
      for (int64_t b = a; b <= 60; b += 1) {
        std::set<std::pair<int64_t, int64_t>> seen = driven(l, stages, {a, b}, b + 30);
        all_seen.insert(seen.begin(), seen.end());
      }
    INFO("shuffle " << shuffle);
    for (const auto& s : all_seen) {
      INFO("given " << s.first << "x" << s.second);
      CHECK(all_want.count(s) == 1);
    }
    CHECK(all_seen == all_want);
  }
}

TEST_CASE("loader: stage_rows above the scan limit holds the exact shapes, in constant memory",
          "[data]") {
  TempDir dir;
  using Shape = Loader::Shape;
  auto flat = [](const std::vector<std::vector<Shape>>& stages) {
    std::set<std::pair<int64_t, int64_t>> out;
    for (const auto& stage : stages)
      for (const Shape& s : stage) out.insert({s.rows, s.seq_len});
    return out;
  };
  SourcePtr tokens = counting_tokens(dir, 1601, 16);
  SourcePtr blobs = *open_synthetic({SyntheticKind::Blobs, 1000, 4, 3, 0, 0, 1});
  struct Case {
    SourcePtr source;
    int64_t batch;
    std::vector<StageOverrides> stages;
  };
  std::vector<Case> cases = {
      {blobs, 32, {{8, std::nullopt}, {32, std::nullopt}}},
      {blobs, 32, {{12, std::nullopt}, {20, std::nullopt}, {32, std::nullopt}}},
      {tokens, 6, {{10, 4}, {6, 8}, {7, 16}}},
      {tokens, 4, {{16, 4}, {8, 8}, {4, 16}}},
  };
  for (const Case& c : cases) {
    Loader l = make_loader(c.source, {"train", c.batch, false, false, 0.0, 0.97, 0});
    auto exact = l.stage_rows(c.stages, false);
    auto superset = l.stage_rows(c.stages, false, 0);
    REQUIRE(exact.ok());
    REQUIRE(superset.ok());
    std::set<std::pair<int64_t, int64_t>> e = flat(*exact), s = flat(*superset);
    CHECK(std::includes(s.begin(), s.end(), e.begin(), e.end()));
  }
  // Batches that divide one another and lengths that divide the tokens: the
  // superset is exact.
  Loader pow2 = make_loader(tokens, {"train", 4, false, false, 0.0, 0.97, 0});
  std::vector<StageOverrides> warm = {{16, 4}, {8, 8}, {4, 16}};
  CHECK(flat(*pow2.stage_rows(warm, false, 0)) == flat(*pow2.stage_rows(warm, false)));
  // 2^40 synthetic examples: nothing is held per example.
  SourcePtr huge = *open_synthetic({SyntheticKind::Blobs, int64_t(1) << 40, 4, 3, 0, 0, 1});
  Loader big = make_loader(huge, {"train", 32, false, false, 0.0, 1.0, 0});
  auto rows =
      big.stage_rows(std::vector<StageOverrides>{{8, std::nullopt}, {32, std::nullopt}}, false);
  REQUIRE(rows.ok());
  CHECK(rows->at(1) == std::vector<Shape>{{32, 0}, {24, 0}, {16, 0}, {8, 0}});
  // A huge batch after a coprime one: far too many remainders, said at once.
  auto many = big.stage_rows(
      std::vector<StageOverrides>{{3, std::nullopt}, {int64_t(1) << 40, std::nullopt}}, false);
  REQUIRE_FALSE(many.ok());
  CHECK(many.error().find("more than 64 different remainders") != std::string::npos);
  Loader scanned = make_loader(blobs, {"train", 32, false, false, 0.0, 1.0, 0});
  CHECK_FALSE(
      scanned.stage_rows(std::vector<StageOverrides>{{3, std::nullopt}, {900, std::nullopt}}, false)
          .ok());
}

TEST_CASE("loader: ranks share each global batch, and the position is global", "[data]") {
  TempDir dir;
  SourcePtr s = indexed_source(dir, 40);
  // One loader of batch 12 against 3 ranks of batch 4, over three epochs
  // (40 examples: 3 global batches, a remainder of 4 dropped).
  for (bool shuffle : {false, true}) {
    Loader one = make_loader(s, {"train", 12, shuffle, true, 0.0, 1.0, 7});
    std::vector<Loader> ranks;
    for (int r = 0; r < 3; ++r) {
      LoaderOptions o{"train", 4, shuffle, true, 0.0, 1.0, 7};
      o.rank = r, o.ranks = 3;
      ranks.push_back(make_loader(s, o));
    }
    for (int k = 0; k < 9; ++k) {
      std::vector<int32_t> whole = next_indices(one), shared;
      for (Loader& l : ranks) {
        std::vector<int32_t> part = next_indices(l);
        CHECK(part.size() == 4);
        shared.insert(shared.end(), part.begin(), part.end());
      }
      CHECK(shared == whole);
      for (const Loader& l : ranks) CHECK(l.state() == one.state());
    }
  }
  // A position saved on 3 ranks continues on 1 and on 2 at the same example.
  LoaderOptions o3{"train", 4, true, true, 0.0, 1.0, 7};
  o3.rank = 1, o3.ranks = 3;
  Loader three = make_loader(s, o3);
  for (int k = 0; k < 4; ++k) (void)next_indices(three);
  Loader one = make_loader(s, {"train", 12, true, true, 0.0, 1.0, 7});
  REQUIRE(one.restore(three.save()).ok());
  LoaderOptions o2{"train", 6, true, true, 0.0, 1.0, 7};
  o2.rank = 0, o2.ranks = 2;
  Loader two = make_loader(s, o2);
  REQUIRE(two.restore(three.save()).ok());
  std::vector<int32_t> whole = next_indices(one), first = next_indices(two);
  CHECK(std::vector<int32_t>(whole.begin(), whole.begin() + 6) == first);
  CHECK(three.save()["counters"]["examples"] == 48);
}

TEST_CASE("loader: several ranks need whole global batches", "[data]") {
  TempDir dir;
  SourcePtr s = indexed_source(dir, 40);
  LoaderOptions o{"train", 4, false, false, 0.0, 1.0, 0};
  o.rank = 0, o.ranks = 3;
  ir::Result<Loader> l = Loader::create(s, o);
  REQUIRE_FALSE(l.ok());
  CHECK(l.error().find("loader train: the split's 40 examples end in a remainder of 4 after "
                       "whole global batches of 12 (:batch 4 x 3 ranks)") == 0);
  o.ranks = 2;  // 40 = 5 x 8: no remainder
  CHECK(Loader::create(s, o).ok());
  o.ranks = 11, o.drop_last = true;  // 44 > 40
  CHECK(Loader::create(s, o).error() ==
        "loader train: the split has 40 examples, fewer than one global batch of 44 (:batch 4 x "
        "11 ranks), and :drop-last drops it");
  o.rank = 11;
  CHECK(Loader::create(s, o).error() == "loader train: rank 11 of 11 is not a rank of the world");
}
