// core/bundle: SHA-256, bundle.toml written and read back, checking a
// bundle's files, the decision on a bundle another version made, and the
// path arithmetic of the layout (docs/bundle.md).
#include "bundle/manifest.h"
#include "bundle/sha256.h"
#include "bundle/verify.h"
#include "catch.hpp"
#include "test_temp_files.h"

using namespace sexpgpu::bundle;
using sexpgpu::Result;
using sexpgpu::Status;
using test_files::TempDir;
using test_files::write_file;
namespace fs = std::filesystem;

namespace {

Manifest sample() {
  Manifest m;
  m.sexpgpu_version = "0.1.0";
  m.run_file = "src/mlp.lisp";
  m.slug = "mlp.quick";
  m.ir_hash = "0123456789abcdef";
  m.variants = {"quick"};
  m.sets = {{"width", "64"}, {"lr", "3e-3"}};
  m.point = "lr-scan:1";
  m.module_path = {"src/lib"};
  m.data_bundled = true;
  m.device = {100, 100, 200, 30, 40, 50, 520};
  m.files = {{"src/mlp.lisp", 12, std::string(64, 'a')}, {"ir.json", 3, std::string(64, 'b')}};
  m.data = {{"train", "fashion-mnist/x.gz", 9, std::string(64, 'c'), "src/fashion-mnist/x.gz"},
            {"test", "/abs/y.gz", 7, std::string(64, 'd'), ""}};
  DataEntry remote{"test", "s3://bucket/y.gz", 26421856, "", ""};
  remote.etag = "\"cf8536b0aa1a6ac5fa3f23001093305c\"";
  m.data.push_back(remote);
  return m;
}

}  // namespace

TEST_CASE("sha256 through libcrypto gives the standard digests", "[bundle]") {
  CHECK(sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  TempDir dir("bundle");
  std::string big(3 << 20, 'x');  // more than one read of the file
  write_file(dir / "big", big);
  Result<std::string> sum = sha256_file(dir / "big");
  REQUIRE(sum);
  CHECK(*sum == sha256_hex(big));
  Result<std::string> missing = sha256_file(dir / "nope");
  REQUIRE_FALSE(missing);
  CHECK(missing.code() == "E-IO");
  CHECK(missing.error().find("nope") != std::string::npos);
}

TEST_CASE("bundle.toml reads back what was written", "[bundle]") {
  Manifest m = sample();
  std::string text = to_toml(m);
  CHECK(text.rfind("# A bundle made by `sexpgpu bundle`", 0) == 0);
  Result<Manifest> back = parse_manifest(text, "bundle.toml");
  REQUIRE(back);
  CHECK(back->sexpgpu_version == m.sexpgpu_version);
  CHECK(back->run_file == m.run_file);
  CHECK(back->slug == m.slug);
  CHECK(back->ir_hash == m.ir_hash);
  CHECK(back->variants == m.variants);
  CHECK(back->sets == m.sets);
  CHECK(back->point == m.point);
  CHECK(back->module_path == m.module_path);
  CHECK(back->data_bundled);
  CHECK(back->device.total == 520);
  CHECK(back->device.optimizer_state == 200);
  REQUIRE(back->files.size() == 2);
  CHECK(back->files[0].path == "src/mlp.lisp");
  CHECK(back->files[0].size == 12);
  REQUIRE(back->data.size() == 3);
  // An s3:// reference: its ETag, no SHA-256 and no copy.
  CHECK(back->data[2].etag == "\"cf8536b0aa1a6ac5fa3f23001093305c\"");
  CHECK(back->data[2].sha256.empty());
  CHECK(back->data[2].path.empty());
  CHECK(back->data[2].size == 26421856);
  CHECK(text.find("sha256 = ''") == std::string::npos);
  CHECK(back->data[0].path == "src/fashion-mnist/x.gz");
  CHECK(back->data[1].path.empty());
  CHECK(back->data[1].source == "/abs/y.gz");
  CHECK(back->data[1].size == 7);
}

TEST_CASE("a malformed bundle.toml is E-BUNDLE saying where and what", "[bundle]") {
  Result<Manifest> not_toml = parse_manifest("format = = 1\n", "b/bundle.toml");
  REQUIRE_FALSE(not_toml);
  CHECK(not_toml.code() == "E-BUNDLE");
  CHECK(not_toml.error().find("b/bundle.toml:1:") == 0);

  std::string good = to_toml(sample());
  auto with = [&](const std::string& from, const std::string& to) {
    std::string t = good;
    size_t at = t.find(from);
    REQUIRE(at != std::string::npos);
    return parse_manifest(t.replace(at, from.size(), to), "bundle.toml");
  };
  Result<Manifest> escapes = with("run_file = 'src/mlp.lisp'", "run_file = '../mlp.lisp'");
  REQUIRE_FALSE(escapes);
  CHECK(escapes.error().find("not a path inside the bundle") != std::string::npos);
  Result<Manifest> absolute = with("path = 'src/fashion-mnist/x.gz'", "path = '/etc/passwd'");
  REQUIRE_FALSE(absolute);
  CHECK(absolute.error().find("/etc/passwd") != std::string::npos);
  Result<Manifest> newer = with("format = 1", "format = 2");
  REQUIRE_FALSE(newer);
  CHECK(newer.error().find("format 2 is not one this sexpgpu reads") != std::string::npos);
  Result<Manifest> typed = with("slug = 'mlp.quick'", "slug = 3");
  REQUIRE_FALSE(typed);
  CHECK(typed.error().find("`slug` is not a string") != std::string::npos);
  Result<Manifest> negative = with("total = 520", "total = -1");
  REQUIRE_FALSE(negative);
  CHECK(negative.error().find("`total` is not a whole number") != std::string::npos);
  Result<Manifest> missing = with("ir_hash = '0123456789abcdef'", "");
  REQUIRE_FALSE(missing);
  CHECK(missing.error().find("has no `ir_hash`") != std::string::npos);
  Result<Manifest> bad_set = with("'width=64'", "'width'");
  REQUIRE_FALSE(bad_set);
  CHECK(bad_set.error().find("not KNOB=VALUE") != std::string::npos);
}

TEST_CASE("paths inside a bundle are relative and never climb", "[bundle]") {
  CHECK(inside_path("src/mlp.lisp"));
  CHECK(inside_path("ir.json"));
  CHECK_FALSE(inside_path(""));
  CHECK_FALSE(inside_path("/src/mlp.lisp"));
  CHECK_FALSE(inside_path("src/../../x"));
  CHECK_FALSE(inside_path("./x"));
  CHECK_FALSE(inside_path("src//x"));
  CHECK_FALSE(inside_path("src/"));
}

TEST_CASE("check_files names each file missing or changed", "[bundle]") {
  TempDir dir("bundle");
  fs::create_directories(dir / "src");
  write_file(dir / "src/run.lisp", "(defrun)");
  write_file(dir / "ir.json", "{}");
  Manifest m;
  m.run_file = "src/run.lisp";
  m.files = {{"src/run.lisp", 8, sha256_hex("(defrun)")}, {"ir.json", 2, sha256_hex("{}")}};
  CHECK(check_files(dir.path(), m));

  write_file(dir / "src/run.lisp", "(defrux)");  // same size, other bytes
  Status changed = check_files(dir.path(), m);
  REQUIRE_FALSE(changed);
  CHECK(changed.code() == "E-BUNDLE");
  CHECK(changed.error().find("src/run.lisp changed: its SHA-256 is") != std::string::npos);
  CHECK(changed.error().find("ir.json") == std::string::npos);

  write_file(dir / "src/run.lisp", "(defrun)");
  fs::remove(dir / "ir.json");
  Status missing = check_files(dir.path(), m);
  REQUIRE_FALSE(missing);
  CHECK(missing.error().find("ir.json is missing") != std::string::npos);

  write_file(dir / "ir.json", "{ }");
  Status longer = check_files(dir.path(), m);
  REQUIRE_FALSE(longer);
  CHECK(longer.error().find("ir.json changed: 3 bytes, bundled 2") != std::string::npos);
}

TEST_CASE("another version warns, and only another IR refuses", "[bundle]") {
  VersionCheck same = check_version("0.1.0", "0.1.0", "aa", "aa");
  CHECK(same.verdict == Verdict::Run);
  CHECK(same.message.empty());

  VersionCheck other = check_version("0.0.9", "0.1.0", "aa", "aa");
  CHECK(other.verdict == Verdict::Warn);
  CHECK(other.message.find("sexpgpu 0.0.9") != std::string::npos);
  CHECK(other.message.find("sexpgpu 0.1.0") != std::string::npos);

  VersionCheck changed = check_version("0.0.9", "0.1.0", "aa", "bb");
  CHECK(changed.verdict == Verdict::Refuse);
  CHECK(changed.message.find("IR hash bb, bundled aa") != std::string::npos);
  CHECK(changed.message.find("fix: run it with sexpgpu 0.0.9") != std::string::npos);

  VersionCheck data = check_version("0.1.0", "0.1.0", "aa", "bb");
  CHECK(data.verdict == Verdict::Refuse);
  CHECK(data.message.find("another IR") != std::string::npos);
}

TEST_CASE("the layout's path arithmetic", "[bundle]") {
  CHECK(common_directory({"/a/b/c", "/a/b/d/e", "/a/b"}) == fs::path("/a/b"));
  CHECK(common_directory({"/a/b", "/x"}) == fs::path("/"));
  CHECK(common_directory({"/a/b"}) == fs::path("/a/b"));
  CHECK(relative_inside("/a/b", "/a/b/c/d.lisp") == "c/d.lisp");
  CHECK_FALSE(relative_inside("/a/b", "/a/c/d.lisp"));
  CHECK_FALSE(relative_inside("/a/b", "/a/b"));
  CHECK(absolute_path("/a/./b/../c") == fs::path("/a/c"));

  std::vector<std::string> files = {"", "/bundles/m/src/mlp.lisp", "/elsewhere/x.lisp"};
  relabel_files(files, "/bundles/m");
  CHECK(files == std::vector<std::string>{"", "src/mlp.lisp", "/elsewhere/x.lisp"});
}
