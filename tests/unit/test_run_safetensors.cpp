// core/run safetensors: the bytes against those the reference implementation
// (safetensors 0.8.0, Python) writes for the same tensors, round trips of
// every dtype, and each way a file can be malformed, named by the reader.
#include <fcntl.h>
#include <unistd.h>

#include "run/safetensors.h"
#include "test_run_util.h"

using namespace sexpgpu;
using namespace sexpgpu::run;
using namespace run_test;

namespace {

// A file from a header written by hand: length, header padded to 8, data.
std::string raw_file(std::string header, const std::string& data) {
  header.append((8 - header.size() % 8) % 8, ' ');
  std::string out;
  for (int i = 0; i < 8; ++i) out += static_cast<char>((header.size() >> (8 * i)) & 0xff);
  return out + header + data;
}

std::string open_error(const fs::path& path, const std::string& content) {
  write_file(path, content);
  auto f = SafetensorsFile::open(path.string());
  REQUIRE_FALSE(f.ok());
  CHECK(f.error().find(path.string()) == 0);  // every message names the file first
  return f.error();
}

const std::string kEightBytes(8, '\0');

}  // namespace

TEST_CASE("safetensors bytes equal the reference implementation's", "[run][safetensors]") {
  std::vector<float> a = {1.0f, 2.0f}, b = {3.0f};
  // Given out of order: the file is sorted by name.
  auto bytes = serialize_safetensors(
      {{"b", ir::DType::F32, {1}, bytes_of(b)}, {"a", ir::DType::F32, {2}, bytes_of(a)}},
      {{"format", "pt"}});
  REQUIRE(bytes.ok());
  // safetensors.numpy.save({"b": [3.], "a": [1., 2.]} as f32, metadata={"format": "pt"})
  std::string want_header =
      "{\"__metadata__\":{\"format\":\"pt\"},\"a\":{\"dtype\":\"F32\",\"shape\":[2],"
      "\"data_offsets\":[0,8]},\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]}}"
      "     ";
  std::string want = std::string("\x90\0\0\0\0\0\0\0", 8) + want_header +
                     std::string("\x00\x00\x80\x3f\x00\x00\x00\x40\x00\x00\x40\x40", 12);
  CHECK(want_header.size() == 144);
  CHECK(as_string(*bytes) == want);
}

TEST_CASE("safetensors: the streamed file equals the serialized bytes", "[run][safetensors]") {
  TempDir dir;
  std::vector<int32_t> scalar = {7};
  std::vector<double> m = {1.5, -2.25, 0, 4, 5, 6};
  std::vector<TensorView> ts = {{"w/m", ir::DType::F64, {2, 3}, bytes_of(m)},
                                {"b", ir::DType::I32, {}, bytes_of(scalar)}};
  auto bytes = serialize_safetensors(ts);
  REQUIRE(bytes.ok());
  auto written = write_safetensors((dir / "x.safetensors").string(), ts);
  REQUIRE(written.ok());
  CHECK(*written == bytes->size());
  CHECK(read_file(dir / "x.safetensors") == as_string(*bytes));
  // 8 + header (a multiple of 8) means the data starts 8-aligned.
  auto f = SafetensorsFile::open((dir / "x.safetensors").string());
  REQUIRE(f.ok());
  CHECK((*f)->header_bytes() % 8 == 0);
  CHECK((*f)->tensors()[0].offset % 8 == 0);
}

TEST_CASE("safetensors round trip of every dtype", "[run][safetensors]") {
  TempDir dir;
  std::vector<std::vector<std::byte>> storage;
  std::vector<TensorView> ts;
  int k = 0;
  for (ir::DType d : ir::kAllDTypes) {
    std::vector<std::byte> data(ir::size_bytes(d) * 6);
    for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<std::byte>(i * 7 + k);
    storage.push_back(std::move(data));
    ts.push_back({"t" + std::to_string(k++), d, {2, 3}, storage.back()});
  }
  ts.push_back({"empty", ir::DType::F32, {0, 4}, {}});
  REQUIRE(write_safetensors((dir / "all.safetensors").string(), ts, {{"k", "v"}}).ok());
  auto f = SafetensorsFile::open((dir / "all.safetensors").string());
  REQUIRE(f.ok());
  CHECK((*f)->metadata() == Metadata{{"k", "v"}});
  REQUIRE((*f)->tensors().size() == ir::kDTypeCount + 1);
  CHECK((*f)->tensors()[0].name == "empty");  // name order
  CHECK((*f)->tensors()[0].data.empty());
  for (size_t i = 0; i < ir::kDTypeCount; ++i) {
    const TensorEntry* e = (*f)->find("t" + std::to_string(i));
    REQUIRE(e != nullptr);
    CHECK(e->dtype == ir::kAllDTypes[i]);
    CHECK(e->shape == std::vector<int64_t>{2, 3});
    CHECK(e->elements() == 6);
    CHECK(as_string(e->data) == as_string(storage[i]));
  }
  CHECK((*f)->find("nope") == nullptr);
  CHECK(safetensors_dtype_name(ir::DType::Bool) == "BOOL");
  CHECK(safetensors_dtype_name(ir::DType::BF16) == "BF16");
  CHECK(parse_safetensors_dtype("U16") == ir::DType::U16);
  CHECK_FALSE(parse_safetensors_dtype("f32").has_value());
}

TEST_CASE("safetensors writer refuses what it cannot write", "[run][safetensors]") {
  std::vector<float> three = {1, 2, 3};
  auto r = serialize_safetensors({{"x", ir::DType::F32, {2, 2}, bytes_of(three)}});
  REQUIRE_FALSE(r.ok());
  CHECK(r.error() == "tensor 'x' has 12 bytes, but F32[2,2] needs 16");
  r = serialize_safetensors(
      {{"x", ir::DType::F32, {3}, bytes_of(three)}, {"x", ir::DType::F32, {3}, bytes_of(three)}});
  CHECK(r.error() == "two tensors are named 'x'");
  r = serialize_safetensors({{"__metadata__", ir::DType::F32, {3}, bytes_of(three)}});
  CHECK(r.error() == "a tensor may not be named '__metadata__'");
  r = serialize_safetensors({{"x", ir::DType::F32, {-3}, bytes_of(three)}});
  CHECK_FALSE(r.ok());
}

TEST_CASE("safetensors reader names each malformation", "[run][safetensors]") {
  TempDir dir;
  fs::path p = dir / "bad.safetensors";
  auto entry = [](const std::string& name, const std::string& dtype, const std::string& shape,
                  int begin, int end) {
    return "\"" + name + "\":{\"dtype\":\"" + dtype + "\",\"shape\":" + shape +
           ",\"data_offsets\":[" + std::to_string(begin) + "," + std::to_string(end) + "]}";
  };
  CHECK(open_error(p, "abc") ==
        p.string() +
            ": 3 bytes is too short for a safetensors file (the header length alone is 8)");
  CHECK(open_error(p, std::string("\xff\0\0\0\0\0\0\0", 8) + "{}") ==
        p.string() + ": the header length 255 does not fit the file's 10 bytes");
  CHECK(open_error(p, raw_file("[1,2]", "")) ==
        p.string() + ": the header does not start with '{'");
  CHECK(open_error(p, raw_file("{\"a\":", "")) == p.string() + ": the header is not a JSON object");
  CHECK(open_error(p, raw_file("{" + entry("a", "F8", "[2]", 0, 2) + "}", "xx")) ==
        p.string() + ": tensor 'a': dtype F8 is not one of F32 BF16 F16 F64 I32 I64 U8 U16 BOOL");
  CHECK(open_error(p, raw_file("{" + entry("a", "F32", "[2]", 0, 4) + "}", "xxxx")) ==
        p.string() + ": tensor 'a': F32[2] needs 8 bytes, but data_offsets [0,4] hold 4");
  CHECK(open_error(p, raw_file("{" + entry("a", "U8", "[4]", 0, 4) + "}", "xx")) ==
        p.string() + ": tensor 'a': data_offsets [0,4] run past the data, which is 2 bytes");
  CHECK(open_error(p, raw_file("{" + entry("a", "U8", "[4]", 4, 0) + "}", "xxxx")) ==
        p.string() + ": tensor 'a': data_offsets [4,0] end before they begin");
  CHECK(open_error(p, raw_file("{" + entry("a", "U8", "[4]", 0, 4) + "," +
                                   entry("b", "U8", "[4]", 2, 6) + "}",
                               "xxxxxx")) == p.string() + ": tensor 'b' overlaps tensor 'a'");
  CHECK(open_error(p, raw_file("{" + entry("a", "U8", "[2]", 0, 2) + "," +
                                   entry("b", "U8", "[2]", 3, 5) + "}",
                               "xxxxx")) == p.string() + ": 1 unused bytes before tensor 'b'");
  CHECK(open_error(p, raw_file("{" + entry("a", "U8", "[2]", 0, 2) + "}", "xxxx")) ==
        p.string() + ": 2 bytes after the last tensor's data belong to no tensor");
  CHECK(open_error(p, raw_file("{" + entry("a", "U8", "[-2]", 0, 2) + "}", "xx")) ==
        p.string() + ": tensor 'a': shape [-2] is not dims >= 0");
  CHECK(open_error(p, raw_file("{\"__metadata__\":{\"n\":1}}", "")) ==
        p.string() + ": __metadata__ value 'n' is not a string");
  CHECK(open_error(p, raw_file("{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1],"
                               "\"extra\":1}}",
                               "x")) == p.string() + ": tensor 'a': unknown header key 'extra'");
  CHECK(open_error(p, raw_file("{\"a\":{\"dtype\":\"U8\",\"shape\":[1]}}", "x")) ==
        p.string() + ": tensor 'a': data_offsets is not [begin, end]");
  // A file cut short: the header's offsets now run past the data.
  std::vector<float> v = {1, 2, 3, 4};
  auto good = serialize_safetensors({{"v", ir::DType::F32, {4}, bytes_of(v)}});
  REQUIRE(good.ok());
  std::string cut = as_string(*good).substr(0, good->size() - 3);
  CHECK(open_error(p, cut).find("run past the data") != std::string::npos);
  // An empty file: nothing to read.
  CHECK(open_error(p, "").find("too short") != std::string::npos);
  auto missing = SafetensorsFile::open((dir / "none.safetensors").string());
  CHECK(missing.error().find("none.safetensors: cannot open") != std::string::npos);
}

TEST_CASE("safetensors offsets past 4 GiB (a sparse file)", "[run][safetensors]") {
  TempDir dir;
  fs::path p = dir / "big.safetensors";
  const uint64_t big = (uint64_t{1} << 32) + 8;  // one byte per element, U8
  std::string header = "{\"big\":{\"dtype\":\"U8\",\"shape\":[" + std::to_string(big) +
                       "],\"data_offsets\":[0," + std::to_string(big) +
                       "]},\"z\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[" +
                       std::to_string(big) + "," + std::to_string(big + 4) + "]}}";
  write_file(p, raw_file(header, ""));
  uint64_t data_start = fs::file_size(p);
  int fd = ::open(p.c_str(), O_WRONLY);
  REQUIRE(fd >= 0);
  float z = 2.5f;
  REQUIRE(::pwrite(fd, &z, 4, static_cast<off_t>(data_start + big)) == 4);  // the rest is a hole
  ::close(fd);
  auto f = SafetensorsFile::open(p.string());
  INFO(f.error());
  REQUIRE(f.ok());
  CHECK((*f)->file_bytes() == data_start + big + 4);
  const TensorEntry* b = (*f)->find("big");
  const TensorEntry* zt = (*f)->find("z");
  REQUIRE((b && zt));
  CHECK(b->data.size() == big);
  CHECK(b->elements() == static_cast<int64_t>(big));
  CHECK(zt->offset == data_start + big);
  float back = 0;
  std::memcpy(&back, zt->data.data(), 4);
  CHECK(back == 2.5f);
}
