// libsexpgpu-cpu.so through its C table, loaded by the plugin host from the
// build tree: probe, open, compile an IR JSON document, buffers, run,
// memory stats, all_reduce and broadcast, and the errors, each an sg_error
// with a code and a message.
#include <nlohmann/json.hpp>

#include "host/plugin_host.h"
#include "ir/json.h"
#include "test_cpu_util.h"
#include "train/device.h"

using namespace cpu_test;

namespace {

struct Loaded {
  host::PluginHost host{{{SEXPGPU_BUILD_PLUGIN_DIR, "build tree"}}};
  const sg_device_api* api = nullptr;
  Loaded() {
    api = host.device("cpu");
    const host::PluginRecord* rec = host.find("cpu");
    INFO((rec ? rec->reason
              : std::string("libsexpgpu-cpu.so not found in ") + SEXPGPU_BUILD_PLUGIN_DIR));
    REQUIRE(api != nullptr);
  }
  // "" on success, else the error's message (the error is freed).
  std::string check(sg_error* e) { return host::take_error(api, e); }
};

// f(x f32[2,3], w f32[3]) = relu(x * w) and sum(x).
std::string ir_document() {
  Case c;
  NodeId x = c.input(DType::F32, {2, 3});
  NodeId w = c.input(DType::F32, {3});
  c.output(c.add(Op::Relu, {c.add(Op::Mul, {x, w})}), "y");
  c.output(c.add(Op::Sum, {x}), "total");
  return ir::to_json(c.module).dump();
}

sg_buffer* make_buffer(Loaded& p, sg_device* dev, sg_dtype dtype, std::vector<int64_t> shape) {
  sg_buffer* b = nullptr;
  REQUIRE(p.check(p.api->alloc(dev, dtype, shape.data(), shape.size(), &b)) == "");
  return b;
}

}  // namespace

TEST_CASE("cpu plugin: probe, compile, run through the C ABI", "[cpu]") {
  Loaded p;
  const char* probe = nullptr;
  size_t probe_len = 0;
  REQUIRE(p.check(p.api->probe(&probe, &probe_len)) == "");
  nlohmann::json pj = nlohmann::json::parse(std::string(probe, probe_len));
  CHECK(pj["available"] == true);
  CHECK(pj["count"] == 1);
  CHECK(pj["devices"][0]["name"] == "cpu");
  CHECK(pj["devices"][0]["memory_bytes"].get<uint64_t>() > 0);

  sg_device* dev = nullptr;
  std::string options = R"({"threads": 1})";
  REQUIRE(p.check(p.api->open(options.data(), options.size(), &dev)) == "");

  std::string doc = ir_document();
  sg_program* prog = nullptr;
  const char* report = nullptr;
  size_t report_len = 0;
  uint64_t plan_bytes = 1;
  REQUIRE(p.check(p.api->compile(dev, doc.data(), doc.size(), "f", 1, &prog, &report, &report_len,
                                 &plan_bytes)) == "");
  CHECK(plan_bytes == 64);  // x * w lives in the arena; relu and sum write the outputs
  nlohmann::json rj = nlohmann::json::parse(std::string(report, report_len));
  CHECK(rj["steps"].size() == 3);

  sg_buffer* x = make_buffer(p, dev, SG_DTYPE_F32, {2, 3});
  sg_buffer* w = make_buffer(p, dev, SG_DTYPE_F32, {3});
  sg_buffer* y = make_buffer(p, dev, SG_DTYPE_F32, {2, 3});
  sg_buffer* total = make_buffer(p, dev, SG_DTYPE_F32, {});
  float xs[] = {1, -2, 3, -4, 5, 6}, ws[] = {2, 1, -1};
  REQUIRE(p.check(p.api->upload(x, xs, sizeof xs, 0)) == "");
  REQUIRE(p.check(p.api->upload(w, ws, sizeof ws, 0)) == "");
  sg_buffer* ins[] = {x, w};
  sg_buffer* outs[] = {y, total};
  REQUIRE(p.check(p.api->run(prog, ins, 2, outs, 2, 0)) == "");
  REQUIRE(p.check(p.api->synchronize(dev, 0)) == "");
  float ys[6], t = 0;
  REQUIRE(p.check(p.api->download(y, ys, sizeof ys, 0)) == "");
  REQUIRE(p.check(p.api->download(total, &t, sizeof t, 0)) == "");
  CHECK(std::vector<float>(ys, ys + 6) == std::vector<float>{2, 0, 0, 0, 5, 0});
  CHECK(t == 9);

  const char* stats = nullptr;
  size_t stats_len = 0;
  REQUIRE(p.check(p.api->memory_stats(dev, &stats, &stats_len)) == "");
  nlohmann::json sj = nlohmann::json::parse(std::string(stats, stats_len));
  CHECK(sj["bytes_in_use"] == 24 + 12 + 24 + 4);
  CHECK(sj["peak_bytes_in_use"] == 24 + 12 + 24 + 4);

  // Errors: a wrong size, a wrong buffer type, a broken document.
  sg_error* e = p.api->upload(x, xs, 8, 0);
  REQUIRE(e != nullptr);
  CHECK(p.api->error_code(e) == SG_ERROR_INVALID_ARGUMENT);
  CHECK(p.check(e) == "cpu: upload of 8 bytes to a buffer of f32[2,3] (24 bytes)");
  sg_buffer* swapped[] = {w, x};
  CHECK(p.check(p.api->run(prog, swapped, 2, outs, 2, 0)) ==
        "cpu: input 0 is f32[3], the function needs f32[2,3]");
  sg_program* none = nullptr;
  std::string broken = "{\"version\": 1";
  std::string msg = p.check(p.api->compile(dev, broken.data(), broken.size(), "f", 1, &none,
                                           &report, &report_len, &plan_bytes));
  CHECK(msg.rfind("cpu: reading the IR: ", 0) == 0);
  msg = p.check(p.api->compile(dev, doc.data(), doc.size(), "g", 1, &none, &report, &report_len,
                               &plan_bytes));
  CHECK(msg == "cpu: compiling 'g': no function 'g' in the module");

  // In place: y = relu(x * w) written over x itself, which it reads.
  sg_buffer* in_place[] = {x, total};
  REQUIRE(p.check(p.api->run(prog, ins, 2, in_place, 2, 0)) == "");
  REQUIRE(p.check(p.api->download(x, ys, sizeof ys, 0)) == "");
  CHECK(std::vector<float>(ys, ys + 6) == std::vector<float>{2, 0, 0, 0, 5, 0});
  CHECK(p.check(p.api->download(total, &t, sizeof t, 0)) == "");
  CHECK(t == 9);  // the sum of the original x, read before x was overwritten

  REQUIRE(p.check(p.api->free(y)) == "");
  p.api->program_destroy(prog);
  REQUIRE(p.check(p.api->close(dev)) == "");  // frees x, w and total too
}

TEST_CASE("cpu plugin: all_reduce and broadcast across devices", "[cpu]") {
  Loaded p;
  sg_device* devs[3] = {};
  for (sg_device*& d : devs) REQUIRE(p.check(p.api->open("", 0, &d)) == "");
  sg_buffer* bufs[3];
  for (int i = 0; i < 3; ++i) {
    bufs[i] = make_buffer(p, devs[i], SG_DTYPE_F32, {2});
    float v[] = {float(i + 1), float(10 * (i + 1))};
    REQUIRE(p.check(p.api->upload(bufs[i], v, sizeof v, 0)) == "");
  }
  REQUIRE(p.check(p.api->all_reduce(devs, bufs, 3, SG_REDUCE_SUM, 0)) == "");
  for (sg_buffer* b : bufs) {
    float v[2];
    REQUIRE(p.check(p.api->download(b, v, sizeof v, 0)) == "");
    CHECK(v[0] == 6);
    CHECK(v[1] == 60);
  }
  REQUIRE(p.check(p.api->all_reduce(devs, bufs, 3, SG_REDUCE_MEAN, 0)) == "");
  float m[2];
  REQUIRE(p.check(p.api->download(bufs[2], m, sizeof m, 0)) == "");
  CHECK(m[0] == 6);  // the mean of three 6s
  float root[] = {7, 8};
  REQUIRE(p.check(p.api->upload(bufs[1], root, sizeof root, 0)) == "");
  REQUIRE(p.check(p.api->broadcast(devs, bufs, 3, 1, 0)) == "");
  float got[2];
  REQUIRE(p.check(p.api->download(bufs[0], got, sizeof got, 0)) == "");
  CHECK(got[0] == 7);
  CHECK(got[1] == 8);

  sg_buffer* other = make_buffer(p, devs[0], SG_DTYPE_I32, {2});
  sg_buffer* mixed[] = {bufs[0], other};
  CHECK(p.check(p.api->all_reduce(devs, mixed, 2, SG_REDUCE_SUM, 0)) ==
        "cpu: buffer 1 is i32[2], buffer 0 is f32[2]");
  CHECK(p.check(p.api->broadcast(devs, bufs, 3, 5, 0)) == "cpu: root 5 of 3 buffers");
  for (sg_device* d : devs) REQUIRE(p.check(p.api->close(d)) == "");
}

TEST_CASE("cpu plugin: sg_device_fill on the table's chain (ABI 1.2)", "[cpu]") {
  Loaded p;
  const sg_device_fill* fill = host::device_fill_of(p.api);
  REQUIRE(fill != nullptr);

  sg_device* dev = nullptr;
  std::string options = R"({"threads": 1})";
  REQUIRE(p.check(p.api->open(options.data(), options.size(), &dev)) == "");
  // 7 elements: the doubling copies end on a part shorter than the filled one.
  sg_buffer* f = make_buffer(p, dev, SG_DTYPE_F32, {7});
  const float half = 0.5f;
  REQUIRE(p.check(fill->fill(f, &half, sizeof half, 0)) == "");
  std::vector<float> got(7, -1.0f);
  REQUIRE(p.check(p.api->download(f, got.data(), 7 * sizeof(float), 0)) == "");
  CHECK(got == std::vector<float>(7, 0.5f));

  sg_buffer* i = make_buffer(p, dev, SG_DTYPE_I64, {3});
  const int64_t big = -(int64_t(1) << 40) - 3;
  REQUIRE(p.check(fill->fill(i, &big, sizeof big, 0)) == "");
  int64_t ints[3] = {};
  REQUIRE(p.check(p.api->download(i, ints, sizeof ints, 0)) == "");
  CHECK(std::vector<int64_t>(ints, ints + 3) == std::vector<int64_t>(3, big));

  // A value that is not one element of the buffer's dtype.
  sg_error* e = fill->fill(f, &big, sizeof big, 0);
  REQUIRE(e != nullptr);
  CHECK(p.api->error_code(e) == SG_ERROR_INVALID_ARGUMENT);
  CHECK(p.check(e).find("fill with a value of 8 bytes") != std::string::npos);

  sg_buffer* none = make_buffer(p, dev, SG_DTYPE_F32, {0});
  CHECK(p.check(fill->fill(none, &half, sizeof half, 0)) == "");
  for (sg_buffer* b : {f, i, none}) REQUIRE(p.check(p.api->free(b)) == "");
  REQUIRE(p.check(p.api->close(dev)) == "");
}

// train::Device::fill on both paths: the cpu plugin's sg_device_fill, and
// the upload of the repeated value for a device without it (cpu-v11: the
// same plugin with its extension chain removed, as an ABI 1.1 device is).
TEST_CASE("train::Device::fill with and without the plugin's sg_device_fill", "[cpu]") {
  host::PluginHost plugins{
      {{SEXPGPU_BUILD_PLUGIN_DIR, "build tree"}, {SEXPGPU_TEST_V11_PLUGIN_DIR, "test plugins"}}};
  for (const char* name : {"cpu", "cpu-v11"}) {
    INFO(name);
    const host::PluginRecord* rec = plugins.find(name);
    INFO((rec ? rec->reason : std::string("not found")));
    REQUIRE((rec && rec->loaded));
    CHECK((host::device_fill_of(plugins.device(name)) != nullptr) == (std::string(name) == "cpu"));
    auto device = train::Device::open(plugins, name, nlohmann::json{{"threads", 1}});
    INFO(device.error());
    REQUIRE(device.ok());
    auto b = (*device)->alloc(ir::TensorType{DType::F32, ir::Shape{1000}});
    REQUIRE(b.ok());
    const float value = -2.5f;
    REQUIRE((*device)->fill(*b, std::as_bytes(std::span(&value, 1))).ok());
    std::vector<float> got(1000, 0.0f);
    REQUIRE((*device)->download(*b, got.data(), got.size() * sizeof(float)).ok());
    REQUIRE((*device)->synchronize().ok());
    CHECK(got == std::vector<float>(1000, value));
    // A value that is not one element of the dtype, on either path.
    const double wide = 1.0;
    auto refused = (*device)->fill(*b, std::as_bytes(std::span(&wide, 1)));
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.code() == "E-DEVICE");
  }
}
