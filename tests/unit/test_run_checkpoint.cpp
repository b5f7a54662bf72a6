// core/run checkpoints: the directory a write leaves, latest and :keep,
// loading back, verify's findings on damaged files, and a crash simulated
// after every stage of a write leaving the previous checkpoint intact.
#include <unistd.h>

#include "run/checkpoint.h"
#include "run/crc32.h"
#include "test_run_util.h"

using namespace sexpgpu;
using namespace sexpgpu::run;
using namespace run_test;

namespace {

// A model of two parameters and an Adam-like state, values depending on step.
struct Fixture {
  std::vector<float> w, b, w_m, b_m;
  explicit Fixture(int64_t step) {
    float s = static_cast<float>(step);
    w = {s, s + 0.5f, -s, 2 * s, 0.25f, 1};
    b = {s / 4, -1};
    w_m = {0.1f * s, 0, 0, 0, 0, 0};
    b_m = {1, 2};
  }
  CheckpointContent content(int64_t step) const {
    CheckpointContent c;
    c.step = step;
    c.params = {{"fc/w", ir::DType::F32, {2, 3}, bytes_of(w)},
                {"fc/b", ir::DType::F32, {2}, bytes_of(b)}};
    c.optimizer = {{optimizer_tensor_name("fc/w", "m"), ir::DType::F32, {2, 3}, bytes_of(w_m)},
                   {optimizer_tensor_name("fc/b", "m"), ir::DType::F32, {2}, bytes_of(b_m)}};
    c.state = {{"loaders", {{"train", {{"position", step * 32}}}}}, {"rng", "philox:7"}};
    return c;
  }
};

CheckpointOptions keep(int64_t n) {
  CheckpointOptions o;
  o.keep = n;
  return o;
}

CheckpointWritten write_ok(const fs::path& dir, int64_t step, CheckpointOptions options = {}) {
  Fixture f(step);
  auto r = write_checkpoint(dir.string(), f.content(step), options);
  INFO(r.error());
  REQUIRE(r.ok());
  return *r;
}

std::vector<int64_t> steps_of(const fs::path& dir) {
  auto all = list_checkpoints(dir.string());
  REQUIRE(all.ok());
  std::vector<int64_t> out;
  for (const CheckpointInfo& c : *all) out.push_back(c.step);
  return out;
}

int64_t latest_step(const fs::path& dir) {
  auto l = find_latest(dir.string());
  REQUIRE(l.has_value());
  return l->step;
}

std::vector<std::string> names_in(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

TEST_CASE("checkpoint directory names", "[run][checkpoint]") {
  CHECK(checkpoint_dir_name(500) == "step-00000500");
  CHECK(checkpoint_dir_name(123456789) == "step-123456789");
  CHECK(parse_checkpoint_dir_name("step-00000500") == 500);
  CHECK(parse_checkpoint_dir_name("step-123456789") == 123456789);
  CHECK_FALSE(parse_checkpoint_dir_name("step-500").has_value());
  CHECK_FALSE(parse_checkpoint_dir_name(".tmp-step-500").has_value());
  CHECK_FALSE(parse_checkpoint_dir_name("step-0000050x").has_value());
  CHECK(optimizer_tensor_name("blocks/0/attn/w", "v") == "blocks/0/attn/w/v");
  // Python: format(zlib.crc32(b"hello world"), "08x")
  std::string hello = "hello world";
  CHECK(crc32_hex(std::as_bytes(std::span(hello))) == "0d4a1185");
}

TEST_CASE("a written checkpoint: files, latest, load", "[run][checkpoint]") {
  TempDir tmp;
  fs::path dir = tmp / "checkpoints";
  CheckpointWritten w = write_ok(dir, 500);
  CHECK(w.path == (dir / "step-00000500").string());
  CHECK(names_in(dir) == std::vector<std::string>{"latest", "step-00000500"});
  CHECK(names_in(w.path) == std::vector<std::string>{"checksums.json", "model.safetensors",
                                                     "optimizer.safetensors", "state.json"});
  CHECK(fs::read_symlink(dir / "latest") == "step-00000500");
  uint64_t sum = 0;
  for (const auto& e : fs::directory_iterator(w.path)) sum += e.file_size();
  CHECK(w.bytes == sum);
  CHECK(w.kept == std::vector<std::string>{"step-00000500"});
  CHECK(w.removed.empty());
  CHECK(w.ms >= 0);

  auto c = load_checkpoint(w.path);
  INFO(c.error());
  REQUIRE(c.ok());
  CHECK(c->step == 500);
  CHECK(c->state["step"] == 500);
  CHECK(c->state["loaders"]["train"]["position"] == 16000);
  CHECK(c->model->metadata() == Metadata{{"format", "pt"}});
  REQUIRE(c->model->tensors().size() == 2);
  CHECK(c->model->tensors()[0].name == "fc/b");  // by name
  const TensorEntry* w_t = c->model->find("fc/w");
  REQUIRE(w_t);
  CHECK(w_t->shape == std::vector<int64_t>{2, 3});
  Fixture f(500);
  CHECK(as_string(w_t->data) == as_string(bytes_of(f.w)));
  CHECK(c->optimizer->find("fc/w/m") != nullptr);
  CHECK(c->checksums["algorithm"] == "crc32");
  CHECK(c->checksums["files"]["model.safetensors"]["crc32"] == crc32_hex(c->model->bytes()));
  CHECK(c->checksums["tensors"]["optimizer.safetensors"]["fc/b/m"] == crc32_hex(bytes_of(f.b_m)));
  CHECK(verify_checkpoint(w.path).empty());
  // Summed in memory while written, read back from the disk: the same.
  auto read_back = compute_checksums(w.path);
  REQUIRE(read_back.ok());
  CHECK(*read_back == c->checksums);

  // The same parameters give the same model bytes, wherever they are written.
  TempDir other;
  CheckpointWritten w2 = write_ok(other / "ck", 500);
  CHECK(read_file(fs::path(w2.path) / "model.safetensors") ==
        read_file(fs::path(w.path) / "model.safetensors"));
}

TEST_CASE("keep N removes older checkpoints once the new one is complete", "[run][checkpoint]") {
  TempDir tmp;
  fs::path dir = tmp / "checkpoints";
  for (int64_t s : {100, 200, 300}) write_ok(dir, s, keep(2));
  CHECK(steps_of(dir) == std::vector<int64_t>{200, 300});
  CheckpointWritten w = write_ok(dir, 400, keep(2));
  CHECK(w.removed == std::vector<std::string>{"step-00000200"});
  CHECK(w.kept == std::vector<std::string>{"step-00000300", "step-00000400"});
  CHECK(latest_step(dir) == 400);
  // A resume from 300 that writes 350: 400 belongs to an abandoned timeline
  // and is not older, so it stays; latest follows the symlink.
  write_ok(dir, 350, keep(2));
  CHECK(steps_of(dir) == std::vector<int64_t>{300, 350, 400});
  CHECK(latest_step(dir) == 350);
  // Without a symlink, latest is the highest step.
  fs::remove(dir / "latest");
  CHECK(latest_step(dir) == 400);
  CHECK(names_in(dir) ==
        std::vector<std::string>{"step-00000300", "step-00000350", "step-00000400"});
}

TEST_CASE("writing a step again replaces it atomically", "[run][checkpoint]") {
  TempDir tmp;
  fs::path dir = tmp / "checkpoints";
  write_ok(dir, 100);
  Fixture other(7);  // different values, same step
  auto r = write_checkpoint(dir.string(), other.content(100), {});
  REQUIRE(r.ok());
  auto c = load_checkpoint(r->path);
  REQUIRE(c.ok());
  CHECK(as_string(c->model->find("fc/w")->data) == as_string(bytes_of(other.w)));
  CHECK(names_in(dir) == std::vector<std::string>{"latest", "step-00000100"});
  CHECK(verify_checkpoint(r->path).empty());
}

TEST_CASE("a crash at any stage leaves the previous checkpoint", "[run][checkpoint]") {
  for (WriteStage stage : {WriteStage::kModel, WriteStage::kOptimizer, WriteStage::kState,
                           WriteStage::kChecksums, WriteStage::kRenamed, WriteStage::kLatest}) {
    INFO("crash after stage " << static_cast<int>(stage));
    TempDir tmp;
    fs::path dir = tmp / "checkpoints";
    write_ok(dir, 100, keep(1));
    Fixture f(200);
    CheckpointOptions crash_options = keep(1);
    crash_options.crash_after = stage;
    auto r = write_checkpoint(dir.string(), f.content(200), crash_options);
    CHECK(r.error() == "simulated crash (tests only)");
    bool renamed = stage == WriteStage::kRenamed || stage == WriteStage::kLatest;
    // Before the rename the new one is invisible; after it, it is complete.
    CHECK(steps_of(dir) == (renamed ? std::vector<int64_t>{100, 200} : std::vector<int64_t>{100}));
    CHECK(latest_step(dir) == (stage == WriteStage::kLatest ? 200 : 100));
    CHECK(verify_checkpoint((dir / "step-00000100").string()).empty());
    if (renamed) CHECK(verify_checkpoint((dir / "step-00000200").string()).empty());
    // :keep ran not: nothing was removed by a write that did not finish.
    CHECK(fs::exists(dir / "step-00000100"));
    // The next write cleans up and carries on.
    write_ok(dir, 300, keep(1));
    CHECK(names_in(dir) == std::vector<std::string>{"latest", "step-00000300"});
  }
}

TEST_CASE("optimizer_ready: the optimizer's bytes may arrive while the model file is written",
          "[run][checkpoint]") {
  TempDir tmp;
  fs::path dir = tmp / "checkpoints";
  Fixture f(200);
  CheckpointContent c = f.content(200);
  // The optimizer's tensors hold garbage until the hook fills them, after
  // the model file exists (as the trainer's download does).
  std::vector<float> w_m(6, -7.0f), b_m(2, -7.0f);
  c.optimizer[0].data = bytes_of(w_m);
  c.optimizer[1].data = bytes_of(b_m);
  int calls = 0;
  c.optimizer_ready = [&] {
    ++calls;
    CHECK(fs::exists(dir / ".tmp-step-200" / "model.safetensors"));
    CHECK_FALSE(fs::exists(dir / ".tmp-step-200" / "optimizer.safetensors"));
    w_m = f.w_m;
    b_m = f.b_m;
    return std::string();
  };
  auto r = write_checkpoint(dir.string(), c);
  INFO(r.error());
  REQUIRE(r.ok());
  CHECK(calls == 1);
  CHECK(verify_checkpoint(r->path).empty());
  auto loaded = load_checkpoint(r->path);
  REQUIRE(loaded.ok());
  CHECK(as_string(loaded->optimizer->find("fc/w/m")->data) == as_string(bytes_of(f.w_m)));

  // A hook that fails stops the write as a crash would: the last good one stays.
  CheckpointContent failing = f.content(300);
  failing.optimizer_ready = [] { return std::string("the optimizer state's download failed"); };
  auto bad = write_checkpoint(dir.string(), failing);
  CHECK(bad.error() == "the optimizer state's download failed");
  CHECK(steps_of(dir) == std::vector<int64_t>{200});
  CHECK(latest_step(dir) == 200);
}

TEST_CASE("leftovers of a crash are ignored, then removed", "[run][checkpoint]") {
  TempDir tmp;
  fs::path dir = tmp / "checkpoints";
  write_ok(dir, 100);
  fs::create_directory(dir / ".tmp-step-200");
  write_file(dir / ".tmp-step-200" / "model.safetensors", "partial");
  fs::create_directory(dir / ".trash-step-00000050");
  CHECK(steps_of(dir) == std::vector<int64_t>{100});
  CHECK(latest_step(dir) == 100);
  auto resolved = resolve_checkpoint(tmp.path().string());
  REQUIRE(resolved.ok());
  CHECK(*resolved == (dir / "step-00000100").string());
  write_ok(dir, 200);
  CHECK(names_in(dir) == std::vector<std::string>{"latest", "step-00000100", "step-00000200"});
}

TEST_CASE("resolve_checkpoint accepts a checkpoint, checkpoints/, latest or a run",
          "[run][checkpoint]") {
  TempDir tmp;
  fs::path dir = tmp / "checkpoints";
  write_ok(dir, 100);
  write_ok(dir, 200);
  std::string want = (dir / "step-00000200").string();
  CHECK(*resolve_checkpoint(tmp.path().string()) == want);
  CHECK(*resolve_checkpoint(dir.string()) == want);
  CHECK(*resolve_checkpoint((dir / "latest").string()) == want);
  CHECK(*resolve_checkpoint(want + "/") == want);
  CHECK(*resolve_checkpoint((dir / "step-00000100").string()) == (dir / "step-00000100").string());
  CHECK(resolve_checkpoint((tmp / "nope").string()).error() ==
        (tmp / "nope").string() + ": no such file or directory");
  TempDir empty;
  CHECK(resolve_checkpoint(empty.path().string()).error() ==
        empty.path().string() + ": not a checkpoint, and no checkpoints/ with one in it");
}

TEST_CASE("verify names what is damaged", "[run][checkpoint]") {
  TempDir tmp;
  fs::path dir = tmp / "checkpoints";
  CheckpointWritten w = write_ok(dir, 100);
  fs::path ck(w.path);
  fs::path model = ck / "model.safetensors";
  std::string good_model = read_file(model);
  uint64_t w_offset = 0;
  {
    auto f = SafetensorsFile::open(model.string());
    REQUIRE(f.ok());
    w_offset = (*f)->find("fc/w")->offset;
  }

  SECTION("a flipped bit in a tensor names the tensor") {
    flip_byte(model, w_offset + 5);
    auto problems = verify_checkpoint(w.path);
    REQUIRE(problems.size() == 1);
    CHECK(problems[0].starts_with(model.string() + ": tensor 'fc/w' has CRC-32 "));
    CHECK(problems[0].find("checksums.json records") != std::string::npos);
  }
  SECTION("a damaged header") {
    flip_byte(model, 12);
    auto problems = verify_checkpoint(w.path);
    REQUIRE(problems.size() == 1);
    CHECK(problems[0].starts_with(model.string() + ": "));
  }
  SECTION("a file cut short") {
    write_file(model, good_model.substr(0, good_model.size() - 4));
    auto problems = verify_checkpoint(w.path);
    REQUIRE(problems.size() == 1);
    CHECK(problems[0].find("run past the data") != std::string::npos);
  }
  SECTION("a missing file") {
    fs::remove(ck / "optimizer.safetensors");
    auto problems = verify_checkpoint(w.path);
    REQUIRE(problems.size() == 1);
    CHECK(problems[0] == (ck / "optimizer.safetensors").string() + ": missing");
  }
  SECTION("state.json edited") {
    write_file(ck / "state.json", "{\"step\": 100}\n");
    auto problems = verify_checkpoint(w.path);
    REQUIRE(problems.size() == 1);
    CHECK(problems[0].starts_with((ck / "state.json").string() + ": "));
  }
  SECTION("no checksums") {
    fs::remove(ck / "checksums.json");
    CHECK(verify_checkpoint(w.path) ==
          std::vector<std::string>{(ck / "checksums.json").string() + ": missing"});
  }
  SECTION("state.json's step disagrees with the directory") {
    fs::rename(ck, dir / "step-00000300");
    auto problems = verify_checkpoint((dir / "step-00000300").string());
    REQUIRE(problems.size() == 1);
    CHECK(problems[0] == (dir / "step-00000300" / "state.json").string() +
                             ": step 100 is not the directory's step 300");
  }
}

TEST_CASE("write_checkpoint refuses bad content", "[run][checkpoint]") {
  TempDir tmp;
  Fixture f(1);
  CheckpointContent c = f.content(5);
  c.state["step"] = 4;
  CHECK(write_checkpoint((tmp / "ck").string(), c).error() ==
        "state.json's step 4 is not the checkpoint's step 5");
  c = f.content(5);
  c.params.push_back(c.params[0]);
  auto r = write_checkpoint((tmp / "ck").string(), c);
  CHECK(r.error().ends_with("model.safetensors: two tensors are named 'fc/w'"));
  CHECK(steps_of(tmp / "ck").empty());
}

TEST_CASE("crc32_of_ranges: pieces on several threads put together as one pass",
          "[run][checkpoint]") {
  std::vector<std::byte> data(100003);
  uint32_t x = 12345;
  for (std::byte& b : data) b = std::byte((x = x * 1103515245u + 12345u) >> 24);
  std::span<const std::byte> all(data);
  std::vector<std::span<const std::byte>> ranges{all.subspan(0, 7), all.subspan(7, 0),
                                                 all.subspan(7, 65536), all.subspan(65543)};
  std::vector<std::string> one_pass;
  for (auto r : ranges) one_pass.push_back(crc32_hex(r));
  CHECK(one_pass[1] == "00000000");  // the empty range
  for (size_t piece : {size_t(1) << 20, size_t(4096), size_t(1000), size_t(1)})
    for (unsigned threads : {1u, 3u, 0u}) {
      INFO("piece " << piece << ", threads " << threads);
      std::vector<uint32_t> got = crc32_of_ranges(ranges, piece, threads);
      REQUIRE(got.size() == ranges.size());
      for (size_t k = 0; k < ranges.size(); ++k) CHECK(crc32_hex(got[k]) == one_pass[k]);
    }
  // A file's CRC from its parts' CRCs, as a checkpoint's writer makes it.
  std::vector<uint32_t> parts = crc32_of_ranges(ranges);
  uint32_t joined = parts[0];
  for (size_t k = 1; k < ranges.size(); ++k)
    joined = crc32_concat(joined, parts[k], ranges[k].size());
  CHECK(crc32_hex(joined) == crc32_hex(all));
  CHECK(crc32_of_ranges({}).empty());
}
