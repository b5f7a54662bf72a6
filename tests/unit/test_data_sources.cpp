// core/data sources: each source on small files written here, byte by byte
// from its format's specification, and read back through gather; the
// synthetic source against its documented formulas; path lookup.
#include <cmath>
#include <cstdlib>
#include <set>

#include "data/lookup.h"
#include "data/source.h"
#include "ir/philox.h"
#include "test_data_files.h"

using namespace sexpgpu;
using namespace sexpgpu::data;
using namespace data_test;

namespace {

SourcePtr opened(ir::Result<SourcePtr> r) {
  INFO(r.error());
  REQUIRE(r.ok());
  REQUIRE((*r)->load().ok());
  return *r;
}

// Three 2x3 u8 images (pixel = 10 * example + position) and labels 7 0 255.
void write_small_idx(const TempDir& dir, bool gzip) {
  std::string pixels;
  for (int e = 0; e < 3; ++e)
    for (int p = 0; p < 6; ++p) pixels += static_cast<char>(10 * e + p);
  std::string images = idx_bytes(0x08, {3, 2, 3}, pixels);
  std::string labels = idx_bytes(0x08, {3}, std::string("\x07\x00\xff", 3));
  if (gzip) {
    write_gzip(dir / "img.gz", images);
    write_gzip(dir / "lab.gz", labels);
  } else {
    write_file(dir / "img", images);
    write_file(dir / "lab", labels);
  }
}

}  // namespace

TEST_CASE("idx: raw and gzip files give u8 images and i32 labels", "[data]") {
  TempDir dir;
  bool gzip = GENERATE(false, true);
  write_small_idx(dir, gzip);
  SourcePtr s =
      opened(gzip ? open_idx(dir / "img.gz", dir / "lab.gz") : open_idx(dir / "img", dir / "lab"));
  REQUIRE(s->size() == 3);
  REQUIRE(s->fields().size() == 2);
  CHECK(s->fields()[0].name == "x");
  CHECK(s->fields()[0].dtype == ir::DType::U8);
  CHECK(s->fields()[0].shape == ir::Shape{2, 3});
  CHECK(s->fields()[1].name == "y");
  CHECK(s->fields()[1].dtype == ir::DType::I32);
  CHECK(s->fields()[1].shape == ir::Shape{});
  CHECK(s->tokens_per_example() == 0);
  CHECK(gather_field<uint8_t>(*s, {2, 0}, 0) ==
        std::vector<uint8_t>{20, 21, 22, 23, 24, 25, 0, 1, 2, 3, 4, 5});
  CHECK(gather_field<int32_t>(*s, {2, 0, 1}, 1) == std::vector<int32_t>{255, 7, 0});
}

TEST_CASE("idx: multi-byte types are big-endian and keep or widen their dtype", "[data]") {
  TempDir dir;
  // f32 images 1.5 and -2.0 (IEEE bits 3FC00000, C0000000); i16 labels -3 and 513.
  write_file(dir / "img", idx_bytes(0x0D, {2, 1}, be32(0x3FC00000) + be32(0xC0000000)));
  write_file(dir / "lab", idx_bytes(0x0B, {2}, std::string("\xff\xfd\x02\x01", 4)));
  SourcePtr s = opened(open_idx(dir / "img", dir / "lab"));
  CHECK(s->fields()[0].dtype == ir::DType::F32);
  CHECK(gather_field<float>(*s, {0, 1}, 0) == std::vector<float>{1.5f, -2.0f});
  CHECK(gather_field<int32_t>(*s, {0, 1}, 1) == std::vector<int32_t>{-3, 513});
}

TEST_CASE("tokens: non-overlapping windows with next-token targets", "[data]") {
  TempDir dir;
  // 11 u16 tokens 100..110 with seq-len 3: (11 - 1) / 3 = 3 windows, token 110 unused
  // except as the last target... the last window is 106 107 108 -> 107 108 109.
  std::vector<uint16_t> tokens;
  for (uint16_t t = 100; t <= 110; ++t) tokens.push_back(t);
  write_file(dir / "t.bin", le_bytes(tokens));
  SourcePtr s = opened(open_tokens({dir / "t.bin"}, ir::DType::U16, 3));
  CHECK(s->size() == 3);
  CHECK(s->tokens_per_example() == 3);
  CHECK(s->fields()[0].dtype == ir::DType::I32);
  CHECK(s->fields()[0].shape == ir::Shape{3});
  CHECK(gather_field<int32_t>(*s, {0, 2}, 0) == std::vector<int32_t>{100, 101, 102, 106, 107, 108});
  CHECK(gather_field<int32_t>(*s, {0, 2}, 1) == std::vector<int32_t>{101, 102, 103, 107, 108, 109});
}

TEST_CASE("tokens: several files are one stream; windows may span files", "[data]") {
  TempDir dir;
  write_file(dir / "a", le_bytes(std::vector<int32_t>{-1, 70000, 2}));
  write_file(dir / "b", le_bytes(std::vector<int32_t>{3, 4}));
  SourcePtr s = opened(open_tokens({dir / "a", dir / "b"}, ir::DType::I32, 2));
  CHECK(s->size() == 2);  // 5 tokens: (5 - 1) / 2
  CHECK(gather_field<int32_t>(*s, {1, 0}, 0) == std::vector<int32_t>{2, 3, -1, 70000});
  CHECK(gather_field<int32_t>(*s, {1, 0}, 1) == std::vector<int32_t>{3, 4, 70000, 2});
}

TEST_CASE("text: bytes are tokens of vocabulary 256", "[data]") {
  TempDir dir;
  write_file(dir / "c.txt", "h\xc3\xa9llo");  // "héllo": 6 bytes, é is c3 a9
  SourcePtr s = opened(open_text({dir / "c.txt"}, 2));
  CHECK(s->size() == 2);  // (6 - 1) / 2
  CHECK(gather_field<int32_t>(*s, {0, 1}, 0) == std::vector<int32_t>{104, 195, 169, 108});
  CHECK(gather_field<int32_t>(*s, {0, 1}, 1) == std::vector<int32_t>{195, 169, 108, 108});
}

TEST_CASE("npy: every supported dtype, versions 1 and 2", "[data]") {
  TempDir dir;
  write_file(dir / "x.npy",
             npy_bytes("<f4", "(3, 2)", le_bytes(std::vector<float>{0, 1, 2, 3, 4, 5})));
  write_file(dir / "y.npy",
             npy_bytes("<i8", "(3,)", le_bytes(std::vector<int64_t>{-5, 1LL << 40, 9}), 2));
  write_file(dir / "d.npy",
             npy_bytes("<f8", "(3,)", le_bytes(std::vector<double>{0.25, -1, 1e300})));
  write_file(dir / "i.npy",
             npy_bytes("<i4", "(3, 1, 1)", le_bytes(std::vector<int32_t>{-7, 8, 9})));
  write_file(dir / "u.npy", npy_bytes("|u1", "(3,)", std::string("\x01\x02\xff", 3)));
  write_file(dir / "w.npy", npy_bytes("<u2", "(3,)", le_bytes(std::vector<uint16_t>{65535, 0, 7})));
  write_file(dir / "b.npy", npy_bytes("|b1", "(3,)", std::string("\x01\x00\x01", 3)));
  SourcePtr s = opened(open_npy({{"x", dir / "x.npy"},
                                 {"y", dir / "y.npy"},
                                 {"d", dir / "d.npy"},
                                 {"i", dir / "i.npy"},
                                 {"u", dir / "u.npy"},
                                 {"w", dir / "w.npy"},
                                 {"b", dir / "b.npy"}}));
  REQUIRE(s->size() == 3);
  const auto& f = s->fields();
  CHECK((f[0].dtype == ir::DType::F32 && f[0].shape == ir::Shape{2}));
  CHECK((f[1].dtype == ir::DType::I64 && f[1].shape == ir::Shape{}));
  CHECK(f[2].dtype == ir::DType::F64);
  CHECK((f[3].dtype == ir::DType::I32 && f[3].shape == ir::Shape{1, 1}));
  CHECK(f[4].dtype == ir::DType::U8);
  CHECK(f[5].dtype == ir::DType::U16);
  CHECK(f[6].dtype == ir::DType::Bool);
  std::vector<int64_t> order = {2, 0};
  CHECK(gather_field<float>(*s, order, 0) == std::vector<float>{4, 5, 0, 1});
  CHECK(gather_field<int64_t>(*s, order, 1) == std::vector<int64_t>{9, -5});
  CHECK(gather_field<double>(*s, order, 2) == std::vector<double>{1e300, 0.25});
  CHECK(gather_field<int32_t>(*s, order, 3) == std::vector<int32_t>{9, -7});
  CHECK(gather_field<uint8_t>(*s, order, 4) == std::vector<uint8_t>{255, 1});
  CHECK(gather_field<uint16_t>(*s, order, 5) == std::vector<uint16_t>{7, 65535});
  CHECK(gather_field<uint8_t>(*s, order, 6) == std::vector<uint8_t>{1, 1});
}

TEST_CASE("csv: columns into fields, header, quotes, scalars", "[data]") {
  TempDir dir;
  write_file(dir / "iris.csv",
             "a,b,c,d,label\n"
             "5.1, 3.5,1.4,0.2,0\r\n"
             "\"4.9\",3,1.4,0.2,2\n"
             "\n"
             "6.0,2.2,5.0,1.5,1\n");
  std::vector<CsvColumn> cols = {{"x", ir::DType::F32, {0, 1, 2, 3}, false},
                                 {"y", ir::DType::I32, {4}, true},
                                 {"z", ir::DType::F64, {3, 0}, false}};
  SourcePtr s = opened(open_csv(dir / "iris.csv", cols, true));
  REQUIRE(s->size() == 3);
  CHECK(s->fields()[0].shape == ir::Shape{4});
  CHECK(s->fields()[1].shape == ir::Shape{});
  CHECK(s->fields()[2].shape == ir::Shape{2});
  CHECK(gather_field<float>(*s, {1, 2}, 0) ==
        std::vector<float>{4.9f, 3, 1.4f, 0.2f, 6, 2.2f, 5, 1.5f});
  CHECK(gather_field<int32_t>(*s, {0, 1, 2}, 1) == std::vector<int32_t>{0, 2, 1});
  CHECK(gather_field<double>(*s, {0}, 2) == std::vector<double>{0.2, 5.1});
}

TEST_CASE("csv: without a header the first line is data; a quoted cell keeps its comma", "[data]") {
  TempDir dir;
  write_file(dir / "q.csv", "\"1,5\",true\n2,0\n");
  SourcePtr s = opened(open_csv(dir / "q.csv", {{"ok", ir::DType::Bool, {1}, true}}, false));
  CHECK(s->size() == 2);
  CHECK(gather_field<uint8_t>(*s, {0, 1}, 0) == std::vector<uint8_t>{1, 0});
}

TEST_CASE("synthetic :regression follows its formula and a linear fit is exact", "[data]") {
  SourcePtr s = opened(open_synthetic({SyntheticKind::Regression, 64, 3, 0, 0, 0, 7}));
  CHECK(s->size() == 64);
  CHECK(s->fields()[0].shape == ir::Shape{3});
  CHECK(s->fields()[1].shape == ir::Shape{1});
  std::vector<int64_t> all(64);
  for (int64_t i = 0; i < 64; ++i) all[i] = i;
  std::vector<float> x = gather_field<float>(*s, all, 0), y = gather_field<float>(*s, all, 1);
  auto stream = [](const char* name) {
    return *stage::make_rng_stream(7, stage::stream_id(std::string("data:synthetic:") + name), 0,
                                   0);
  };
  for (int64_t k = 0; k < 3 * 64; ++k)
    CHECK(x[k] == stage::rng_normal_f32(stream("regression:x"), k));
  double b = stage::rng_normal_f32(stream("regression:b"), 0);
  for (int64_t i = 0; i < 64; ++i) {
    double yi = b;
    for (int j = 0; j < 3; ++j)
      yi += stage::rng_normal_f32(stream("regression:w"), j) / std::sqrt(3.0) * x[i * 3 + j];
    CHECK(y[i] == static_cast<float>(yi));
  }
  // Deterministic from the seed; another seed gives other data.
  CHECK(gather_field<float>(*opened(open_synthetic({SyntheticKind::Regression, 64, 3, 0, 0, 0, 7})),
                            {5}, 1) == std::vector<float>{y[5]});
  CHECK(gather_field<float>(*opened(open_synthetic({SyntheticKind::Regression, 64, 3, 0, 0, 0, 8})),
                            {5}, 0) != gather_field<float>(*s, {5}, 0));
}

TEST_CASE("synthetic :blobs: labels in range, examples near their class centre", "[data]") {
  const int64_t n = 4000, k = 3, f = 2;
  SourcePtr s = opened(open_synthetic({SyntheticKind::Blobs, n, f, k, 0, 0, 1}));
  std::vector<int64_t> all(n);
  for (int64_t i = 0; i < n; ++i) all[i] = i;
  std::vector<float> x = gather_field<float>(*s, all, 0);
  std::vector<int32_t> y = gather_field<int32_t>(*s, all, 1);
  std::vector<double> sum(k * f), count(k);
  for (int64_t i = 0; i < n; ++i) {
    REQUIRE((y[i] >= 0 && y[i] < k));
    ++count[y[i]];
    for (int64_t j = 0; j < f; ++j) sum[y[i] * f + j] += x[i * f + j];
  }
  auto centres = *stage::make_rng_stream(1, stage::stream_id("data:synthetic:blobs:centers"), 0, 0);
  for (int64_t c = 0; c < k; ++c) {
    CHECK(count[c] > n / k * 0.85);  // roughly balanced
    for (int64_t j = 0; j < f; ++j) {
      // Unit noise: the class mean is within 5 standard errors of its centre.
      double centre = 3.0 * stage::rng_normal_f32(centres, c * f + j);
      CHECK(std::abs(sum[c * f + j] / count[c] - centre) < 5.0 / std::sqrt(count[c]));
    }
  }
}

TEST_CASE("synthetic :random-tokens: one stream, in vocabulary, windowed", "[data]") {
  SourcePtr s = opened(open_synthetic({SyntheticKind::RandomTokens, 10, 0, 0, 50, 4, 3}));
  CHECK(s->tokens_per_example() == 4);
  std::vector<int32_t> x = gather_field<int32_t>(*s, {0, 1, 2}, 0);
  std::vector<int32_t> y = gather_field<int32_t>(*s, {0, 1, 2}, 1);
  for (size_t i = 0; i < x.size(); ++i) CHECK((x[i] >= 0 && x[i] < 50));
  for (size_t i = 0; i + 1 < x.size(); ++i) CHECK(y[i] == x[i + 1]);
  std::set<int32_t> distinct(x.begin(), x.end());
  CHECK(distinct.size() > 6);
}

TEST_CASE("lookup: run dir, then $SEXPGPU_DATA dirs, then the system dir", "[data]") {
  TempDir dir;
  fs::create_directories(dir / "run");
  fs::create_directories(dir / "env1");
  fs::create_directories(dir / "env2/sub");
  fs::create_directories(dir / "sys");
  write_file(dir / "env2/sub/a.bin", "2");
  write_file(dir / "sys/b.bin", "s");
  write_file(dir / "run/b.bin", "r");
  CHECK(split_search_path(":a::b:") == std::vector<fs::path>{"a", "b"});
  DataDirs dirs{dir / "run",
                split_search_path((dir / "env1").string() + ":" + (dir / "env2").string()),
                dir / "sys"};
  CHECK(*find_data_file("sub/a.bin", dirs) == dir / "env2/sub/a.bin");
  CHECK(*find_data_file("b.bin", dirs) == dir / "run/b.bin");  // the run dir first
  fs::remove(dir / "run/b.bin");
  CHECK(*find_data_file("b.bin", dirs) == dir / "sys/b.bin");
  CHECK(*find_data_file((dir / "sys/b.bin").string(), dirs) == dir / "sys/b.bin");
  ir::Result<fs::path> missing = find_data_file("nope.bin", dirs);
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().find("\"nope.bin\": missing") == 0);
  CHECK(missing.error().find((dir / "env2").string()) != std::string::npos);
  ir::Result<fs::path> s3 = find_data_file("s3://bucket/key", dirs);
  REQUIRE_FALSE(s3.ok());
  CHECK(s3.error().find("reads no s3:// addresses") != std::string::npos);
  // An s3:// address goes to the remote fetcher, whose failure keeps its code.
  std::vector<std::string> asked;
  dirs.remote = [&](std::string_view address) -> ir::Result<fs::path> {
    asked.emplace_back(address);
    if (address.ends_with("missing")) return sexpgpu::fail("E-S3", "no such key");
    return dir / "sys/b.bin";
  };
  CHECK(*find_data_file("s3://bucket/key", dirs) == dir / "sys/b.bin");
  ir::Result<fs::path> remote_missing = find_data_file("s3://bucket/missing", dirs);
  CHECK(remote_missing.code() == "E-S3");
  CHECK(asked == std::vector<std::string>{"s3://bucket/key", "s3://bucket/missing"});
  CHECK(*find_data_file("b.bin", dirs) == dir / "sys/b.bin");  // local paths never ask it
  // The program's installed fetcher is what from_environment hands out.
  install_remote_fetch(dirs.remote);
  CHECK(*find_data_file("s3://bucket/key", DataDirs::from_environment(dir / "run")) ==
        dir / "sys/b.bin");
  install_remote_fetch(nullptr);
  CHECK_FALSE(DataDirs::from_environment(dir / "run").remote);
  setenv("SEXPGPU_DATA", (dir / "env2").c_str(), 1);
  CHECK(*find_data_file("sub/a.bin", DataDirs::from_environment(dir / "run")) ==
        dir / "env2/sub/a.bin");
  unsetenv("SEXPGPU_DATA");
  CHECK(DataDirs::from_environment(dir / "run").search_order().back() ==
        fs::path(kSystemDatasetDir));
}
