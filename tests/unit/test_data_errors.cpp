// core/data errors: every way a source can be missing or malformed gives a
// message that names the path (or the option) and what is wrong.
#include "data/source.h"
#include "test_data_files.h"

using namespace sexpgpu;
using namespace sexpgpu::data;
using namespace data_test;

namespace {

// The error of a failed open, which must name `path` and say `what`.
void check_error(const ir::Result<SourcePtr>& r, const std::string& path, const std::string& what) {
  REQUIRE_FALSE(r.ok());
  INFO(r.error());
  if (!path.empty()) CHECK(r.error().find(path) != std::string::npos);
  CHECK(r.error().find(what) != std::string::npos);
}

std::string u8_images(uint32_t n) {
  return idx_bytes(0x08, {n, 2, 2}, std::string(4 * n, '\x01'));
}

}  // namespace

TEST_CASE("idx errors: missing, magic, truncated, size, shapes", "[data]") {
  TempDir dir;
  write_file(dir / "img", u8_images(3));
  write_file(dir / "lab", idx_bytes(0x08, {3}, "abc"));
  check_error(open_idx(dir / "none", dir / "lab"), (dir / "none").string(), "missing");
  write_file(dir / "magic", std::string("\x00\x00\x07\x01", 4) + be32(3) + "abc");
  check_error(open_idx(dir / "img", dir / "magic"), (dir / "magic").string(),
              "wrong magic number 0x00000701");
  write_file(dir / "short", u8_images(3).substr(0, 20));
  check_error(open_idx(dir / "short", dir / "lab"), (dir / "short").string(),
              "truncated: 20 bytes, the header implies 28 bytes");
  write_file(dir / "tiny", "\x00\x00");
  check_error(open_idx(dir / "tiny", dir / "lab"), (dir / "tiny").string(), "truncated");
  write_file(dir / "long", u8_images(3) + "x");
  check_error(open_idx(dir / "long", dir / "lab"), (dir / "long").string(), "size disagrees");
  write_file(dir / "lab4", idx_bytes(0x08, {4}, "abcd"));
  check_error(open_idx(dir / "img", dir / "lab4"), (dir / "lab4").string(),
              "shape disagrees: \"" + (dir / "img").string() + "\" has 3 examples");
  write_file(dir / "lab2d", idx_bytes(0x08, {3, 1}, "abc"));
  check_error(open_idx(dir / "img", dir / "lab2d"), (dir / "lab2d").string(), "shape disagrees");
  write_file(dir / "huge", idx_bytes(0x08, {0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF}, ""));
  check_error(open_idx(dir / "huge", dir / "lab"), (dir / "huge").string(),
              "the header's dimensions imply more bytes than a file can hold");
  write_file(dir / "labf", idx_bytes(0x0D, {1}, be32(0)));
  write_file(dir / "img1", u8_images(1));
  check_error(open_idx(dir / "img1", dir / "labf"), (dir / "labf").string(), "floats");
}

TEST_CASE("idx gzip errors: a cut file at open, a damaged stream at load", "[data]") {
  TempDir dir;
  std::string pixels;
  for (int i = 0; i < 4000; ++i)
    pixels += static_cast<char>(i * 7919 % 251);  // poorly compressible
  write_gzip(dir / "img.gz", idx_bytes(0x08, {1000, 2, 2}, pixels));
  write_gzip(dir / "lab.gz", idx_bytes(0x08, {1000}, std::string(1000, '\x01')));
  REQUIRE(open_idx(dir / "img.gz", dir / "lab.gz").ok());
  std::ifstream in(dir / "img.gz", std::ios::binary);
  std::string gz((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  write_file(dir / "cut.gz", gz.substr(0, gz.size() / 2));
  check_error(open_idx(dir / "cut.gz", dir / "lab.gz"), (dir / "cut.gz").string(),
              "truncated or damaged: the gzip trailer gives");
  // The middle removed but the trailer kept: the sizes agree, the stream does not.
  write_file(dir / "holed.gz", gz.substr(0, gz.size() / 2) + gz.substr(gz.size() - 8));
  ir::Result<SourcePtr> holed = open_idx(dir / "holed.gz", dir / "lab.gz");
  REQUIRE(holed.ok());
  Status loaded = (*holed)->load();
  REQUIRE_FALSE(loaded.ok());
  CHECK(loaded.error().find((dir / "holed.gz").string() + "\": truncated: decompressed") !=
        std::string::npos);
  CHECK((*holed)->load().error() == loaded.error());  // kept
}

TEST_CASE("tokens and text errors", "[data]") {
  TempDir dir;
  write_file(dir / "odd", std::string(7, '\0'));
  check_error(open_tokens({dir / "odd"}, ir::DType::U16, 2), (dir / "odd").string(),
              "truncated: 7 bytes is not a whole number of u16 tokens (2 bytes each)");
  write_file(dir / "four", std::string(8, '\0'));
  check_error(open_tokens({dir / "four"}, ir::DType::U16, 4), (dir / "four").string(),
              "too short: 4 tokens, and one window of :seq-len 4 needs 5");
  check_error(open_tokens({dir / "four"}, ir::DType::F32, 2), "",
              ":dtype :f32 is not a token dtype");
  check_error(open_tokens({dir / "four"}, ir::DType::U16, 0), "", ":seq-len must be at least 1");
  check_error(open_tokens({}, ir::DType::U16, 2), "", "no files given");
  check_error(open_tokens({dir / "four", dir / "gone"}, ir::DType::U8, 2), (dir / "gone").string(),
              "missing");
  check_error(open_text({dir / "gone.txt"}, 2), (dir / "gone.txt").string(), "missing");
}

TEST_CASE("npy errors: magic, dtype, order, sizes, shapes", "[data]") {
  TempDir dir;
  std::string four_f32 = le_bytes(std::vector<float>{1, 2, 3, 4});
  write_file(dir / "ok.npy", npy_bytes("<f4", "(4,)", four_f32));
  write_file(dir / "magic.npy", "NUMPY" + std::string(60, ' '));
  check_error(open_npy({{"x", dir / "magic.npy"}}), (dir / "magic.npy").string(),
              "wrong magic number");
  write_file(dir / "be.npy", npy_bytes(">f4", "(4,)", four_f32));
  check_error(open_npy({{"x", dir / "be.npy"}}), (dir / "be.npy").string(),
              "dtype '>f4' is not supported");
  write_file(dir / "c8.npy", npy_bytes("<c8", "(2,)", four_f32));
  check_error(open_npy({{"x", dir / "c8.npy"}}), (dir / "c8.npy").string(),
              "dtype '<c8' is not supported");
  std::string fortran = npy_bytes("<f4", "(2, 2)", four_f32);
  fortran.replace(fortran.find("False"), 5, "True ");
  write_file(dir / "f.npy", fortran);
  check_error(open_npy({{"x", dir / "f.npy"}}), (dir / "f.npy").string(), "Fortran order");
  write_file(dir / "short.npy", npy_bytes("<f4", "(5,)", four_f32));
  check_error(open_npy({{"x", dir / "short.npy"}}), (dir / "short.npy").string(),
              "truncated: 144 bytes, the header implies 148 bytes");
  write_file(dir / "long.npy", npy_bytes("<f4", "(3,)", four_f32));
  check_error(open_npy({{"x", dir / "long.npy"}}), (dir / "long.npy").string(), "size disagrees");
  write_file(dir / "huge.npy", npy_bytes("<f4", "(99999999999, 99999999999)", four_f32));
  check_error(open_npy({{"x", dir / "huge.npy"}}), (dir / "huge.npy").string(),
              "the header's shape implies more bytes");
  write_file(dir / "scalar.npy", npy_bytes("<f4", "()", four_f32.substr(0, 4)));
  check_error(open_npy({{"x", dir / "scalar.npy"}}), (dir / "scalar.npy").string(),
              "no first axis");
  write_file(dir / "three.npy", npy_bytes("<f4", "(3,)", four_f32.substr(0, 12)));
  check_error(
      open_npy({{"x", dir / "ok.npy"}, {"y", dir / "three.npy"}}), (dir / "three.npy").string(),
      "shape disagrees: field :x (\"" + (dir / "ok.npy").string() + "\") has 4 examples, field :y");
  check_error(open_npy({{"x", dir / "ok.npy"}, {"x", dir / "ok.npy"}}), "",
              "field :x is given twice");
  check_error(open_npy({{"x", dir / "none.npy"}}), (dir / "none.npy").string(), "missing");
  check_error(open_npy({}), "", "no fields given");
}

TEST_CASE("csv errors: columns, values, rows", "[data]") {
  TempDir dir;
  write_file(dir / "d.csv", "a,b\n1,2\n3,x\n");
  std::string path = (dir / "d.csv").string();
  auto one = [](std::string name, ir::DType d, std::vector<int64_t> cols) {
    bool scalar = cols.size() == 1;
    return CsvColumn{std::move(name), d, std::move(cols), scalar};
  };
  check_error(open_csv(dir / "d.csv", {one("x", ir::DType::F32, {0, 1})}, true), path,
              "line 3, column 1: \"x\" is not a value of :x's dtype :f32");
  check_error(open_csv(dir / "d.csv", {one("x", ir::DType::F32, {2})}, true), path,
              "line 2 has 2 columns, and field :x reads column 2");
  check_error(open_csv(dir / "d.csv", {one("x", ir::DType::F32, {-1})}, true), path,
              "bad :columns: field :x: column -1 is negative");
  check_error(
      open_csv(dir / "d.csv", {one("x", ir::DType::F32, {0}), one("x", ir::DType::I32, {1})}, true),
      path, "field :x is given twice");
  check_error(open_csv(dir / "d.csv", {one("x", ir::DType::F16, {0})}, true), path,
              "dtype :f16 is not read");
  check_error(open_csv(dir / "d.csv", {one("x", ir::DType::F32, {})}, true), path,
              "takes no columns");
  check_error(open_csv(dir / "d.csv", {}, true), path, "no fields given");
  write_file(dir / "big.csv", "300\n");
  check_error(open_csv(dir / "big.csv", {one("x", ir::DType::U8, {0})}, false),
              (dir / "big.csv").string(), "\"300\" is not a value of :x's dtype :u8");
  write_file(dir / "frac.csv", "1.5\n");
  check_error(open_csv(dir / "frac.csv", {one("x", ir::DType::I32, {0})}, false), "",
              "\"1.5\" is not a value");
  write_file(dir / "head.csv", "a,b\n");
  check_error(open_csv(dir / "head.csv", {one("x", ir::DType::F32, {0})}, true), "",
              "no data rows");
  check_error(open_csv(dir / "gone.csv", {one("x", ir::DType::F32, {0})}, true),
              (dir / "gone.csv").string(), "missing");
}

TEST_CASE("synthetic errors name the option", "[data]") {
  check_error(open_synthetic({SyntheticKind::Regression, 0, 3, 0, 0, 0, 1}), "",
              ":examples must be at least 1, not 0");
  check_error(open_synthetic({SyntheticKind::Regression, 5, 0, 0, 0, 0, 1}), "",
              ":features must be at least 1");
  check_error(open_synthetic({SyntheticKind::Blobs, 5, 2, 0, 0, 0, 1}), "",
              ":classes must be at least 1");
  check_error(open_synthetic({SyntheticKind::RandomTokens, 5, 0, 0, 0, 4, 1}), "",
              ":vocab must be at least 1");
  check_error(open_synthetic({SyntheticKind::RandomTokens, 5, 0, 0, 9, 0, 1}), "",
              ":seq-len must be at least 1");
  check_error(open_synthetic({SyntheticKind::RandomTokens, 5, 0, 0, 1LL << 32, 4, 1}), "",
              "does not fit");
}
