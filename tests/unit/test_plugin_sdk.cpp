// The plugin SDK (plugins/sdk): the exception firewall turns every kind of
// throw into an error object with its code, the tables carry the sizes and
// error functions of this build, the sink and reducer adapters check their
// handles and free what they made, and the dtype table of core/ir maps the
// ABI's numbers both ways.
#include <limits>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "catch.hpp"
#include "ir/abi_dtype.h"
#include "sexpgpu/sdk/errors.h"
#include "sexpgpu/sdk/reducer.h"
#include "sexpgpu/sdk/sink.h"
#include "sexpgpu/sdk/tables.h"

namespace {

namespace sdk = sexpgpu::sdk;

// The error's code and message; the error is freed.
std::pair<sg_error_code, std::string> take(sg_error* e) {
  REQUIRE(e);
  const char* text = nullptr;
  size_t len = 0;
  sdk::error_message(e, &text, &len);
  std::pair<sg_error_code, std::string> out{sdk::error_code(e), std::string(text, len)};
  sdk::error_destroy(e);
  return out;
}

// A reducer for the adapter: the sum and the number of update calls.
struct SumReducer {
  static constexpr const char* kName = "sum-test";
  static constexpr const char* kVersion = "0.0.1";
  static constexpr const char* kOutputs[] = {"sum", "calls"};
  static inline int alive = 0;
  explicit SumReducer(std::string_view options) {
    sdk::no_options(options);
    ++alive;
  }
  ~SumReducer() { --alive; }
  void update(const float* values, size_t count) {
    for (size_t i = 0; i < count; ++i) sum += values[i];
    ++calls;
    if (sum > 1e30) throw std::runtime_error("too large");
  }
  void finish(double* out) {
    out[0] = sum;
    out[1] = calls;
  }
  double sum = 0;
  int calls = 0;
};

// A sink for the adapter: records its events; close fails after freeing
// nothing itself, so the adapter must free it.
struct RecordingSink {
  static constexpr const char* kName = "record-test";
  static constexpr const char* kVersion = "0.0.2";
  static inline int alive = 0;
  static inline std::vector<std::string> seen;
  explicit RecordingSink(const sdk::SinkOpen& open) {
    if (open.arg == "refuse") sdk::fail(SG_ERROR_INVALID_ARGUMENT, "refused: " + std::string(open.arg));
    seen = {std::string(open.run_dir), std::string(open.open_event)};
    ++alive;
  }
  ~RecordingSink() { --alive; }
  void event(std::string_view line) { seen.emplace_back(line); }
  void flush() { seen.emplace_back("flush"); }
  void close() { throw std::runtime_error("disk gone"); }
};

}  // namespace

TEST_CASE("the firewall turns every throw into an error object", "[sdk]") {
  CHECK(sdk::firewall("p", [] {}) == nullptr);
  sg_error* passed = sdk::make_error(SG_ERROR_IO, "p", "as returned");
  CHECK(sdk::firewall("p", [&] { return passed; }) == passed);
  CHECK(take(passed) == std::pair{SG_ERROR_IO, std::string("p: as returned")});

  CHECK(take(sdk::firewall("p", [] { sdk::fail(SG_ERROR_UNAVAILABLE, "no GPU"); })) ==
        std::pair{SG_ERROR_UNAVAILABLE, std::string("p: no GPU")});
  CHECK(take(sdk::firewall("p", [] { throw std::out_of_range("index 7"); })) ==
        std::pair{SG_ERROR_INTERNAL, std::string("p: internal error: index 7")});
  CHECK(take(sdk::firewall("p", [] { throw 42; })) ==
        std::pair{SG_ERROR_INTERNAL,
                  std::string("p: internal error (an exception of unknown type)")});
  CHECK(take(sdk::make_error(SG_ERROR_IO, "", "no prefix")).second == "no prefix");

  // Out of memory is one static error, which error_destroy leaves alone.
  sg_error* oom = sdk::firewall("p", [] { throw std::bad_alloc(); });
  CHECK(oom == sdk::out_of_memory());
  CHECK(take(oom) == std::pair{SG_ERROR_OUT_OF_MEMORY, std::string("out of memory")});
  CHECK(sdk::error_code(sdk::out_of_memory()) == SG_ERROR_OUT_OF_MEMORY);
}

TEST_CASE("the table builders fill the sizes, the error functions and no extension", "[sdk]") {
  using Sink = sdk::SinkPlugin<RecordingSink>;
  static_assert(Sink::kApi.struct_size == sizeof(sg_sink_api));
  static_assert(Sink::kPlugin.struct_size == sizeof(sg_plugin));
  CHECK(Sink::kApi.error_destroy == &sdk::error_destroy);
  CHECK(Sink::kApi.extension == nullptr);
  CHECK(Sink::kPlugin.abi_major == SG_ABI_MAJOR);
  CHECK(Sink::kPlugin.abi_minor == SG_ABI_MINOR);
  CHECK(Sink::kPlugin.kind == SG_PLUGIN_SINK);
  CHECK(std::string(Sink::kPlugin.name) == "record-test");
  CHECK(std::string(Sink::kPlugin.version) == "0.0.2");
  CHECK(Sink::kPlugin.api == &Sink::kApi);
  using Reducer = sdk::ReducerPlugin<SumReducer>;
  static_assert(Reducer::kApi.struct_size == sizeof(sg_reducer_api));
  CHECK(Reducer::kPlugin.kind == SG_PLUGIN_REDUCER);
  CHECK(Reducer::kApi.error_message == &sdk::error_message);

  constexpr sg_device_api device = sdk::device_table({});
  static_assert(device.struct_size == sizeof(sg_device_api));
  CHECK(device.error_code == &sdk::error_code);
  CHECK(device.probe == nullptr);

  // The entry point serves a host of this major version with every 1.0 field.
  sg_host_api host{};
  host.struct_size = sizeof host;
  host.abi_major = SG_ABI_MAJOR;
  CHECK(sdk::serve(&host, Sink::kPlugin) == &Sink::kPlugin);
  CHECK(sdk::serve(nullptr, Sink::kPlugin) == nullptr);
  host.abi_major = SG_ABI_MAJOR + 1;
  CHECK(sdk::serve(&host, Sink::kPlugin) == nullptr);
  host.abi_major = SG_ABI_MAJOR;
  host.struct_size = offsetof(sg_host_api, extension);
  CHECK(sdk::serve(&host, Sink::kPlugin) == nullptr);
}

TEST_CASE("the reducer adapter checks its arguments and frees its state", "[sdk]") {
  const sg_reducer_api& api = sdk::ReducerPlugin<SumReducer>::kApi;
  const char* name = nullptr;
  size_t len = 0, count = 0;
  api.name(&name, &len);
  CHECK(std::string(name, len) == "sum-test");
  const char* const* names = nullptr;
  api.outputs(&count, &names);
  REQUIRE(count == 2);
  CHECK(std::string(names[1]) == "calls");

  sg_reducer_state* state = nullptr;
  REQUIRE(api.init("{ }", 3, &state) == nullptr);
  CHECK(SumReducer::alive == 1);
  const float a[] = {1, 2}, b[] = {3.5f};
  CHECK(api.update(state, a, 2) == nullptr);
  CHECK(api.update(state, b, 1) == nullptr);
  CHECK(api.update(state, nullptr, 0) == nullptr);
  double out[2] = {};
  REQUIRE(api.finish(state, out) == nullptr);
  CHECK(out[0] == 6.5);
  CHECK(out[1] == 3);
  const float huge[] = {std::numeric_limits<float>::max(), std::numeric_limits<float>::max()};
  CHECK(take(api.update(state, huge, 2)) ==
        std::pair{SG_ERROR_INTERNAL, std::string("sum-test: internal error: too large")});
  CHECK(take(api.update(state, nullptr, 4)) ==
        std::pair{SG_ERROR_INVALID_ARGUMENT, std::string("sum-test: update with NULL values")});
  CHECK(take(api.finish(state, nullptr)).first == SG_ERROR_INVALID_ARGUMENT);
  api.destroy(state);
  CHECK(SumReducer::alive == 0);

  CHECK(take(api.update(nullptr, a, 2)) ==
        std::pair{SG_ERROR_INVALID_ARGUMENT, std::string("sum-test: called with a NULL state")});
  state = reinterpret_cast<sg_reducer_state*>(&state);
  CHECK(take(api.init("{\"bins\": 8}", 11, &state)) ==
        std::pair{SG_ERROR_INVALID_ARGUMENT,
                  std::string("sum-test: takes no options, given {\"bins\": 8}")});
  CHECK(state == nullptr);
  CHECK(SumReducer::alive == 0);
  api.destroy(nullptr);
}

TEST_CASE("the sink adapter hands over open's arguments and frees the sink at close", "[sdk]") {
  const sg_sink_api& api = sdk::SinkPlugin<RecordingSink>::kApi;
  sg_sink* sink = nullptr;
  REQUIRE(api.open("/runs/a", 7, "{\"kind\":\"open\"}", 15, "", 0, &sink) == nullptr);
  CHECK(RecordingSink::alive == 1);
  CHECK(api.event(sink, "{\"kind\":\"step\"}", 15) == nullptr);
  CHECK(api.flush(sink) == nullptr);
  CHECK(RecordingSink::seen ==
        std::vector<std::string>{"/runs/a", "{\"kind\":\"open\"}", "{\"kind\":\"step\"}", "flush"});
  CHECK(take(api.close(sink)) ==
        std::pair{SG_ERROR_INTERNAL, std::string("record-test: internal error: disk gone")});
  CHECK(RecordingSink::alive == 0);  // freed although close failed

  CHECK(take(api.event(nullptr, "{}", 2)) ==
        std::pair{SG_ERROR_INVALID_ARGUMENT, std::string("record-test: called with a NULL sink")});
  CHECK(take(api.open("", 0, "", 0, "refuse", 6, &sink)) ==
        std::pair{SG_ERROR_INVALID_ARGUMENT, std::string("record-test: refused: refuse")});
  CHECK(sink == nullptr);
  CHECK(take(api.open("", 0, "", 0, "", 0, nullptr)).first == SG_ERROR_INVALID_ARGUMENT);
}

TEST_CASE("the ABI's dtype numbers map to the IR's both ways", "[sdk]") {
  for (sexpgpu::ir::DType d : sexpgpu::ir::kAllDTypes) {
    sg_dtype abi = sexpgpu::ir::abi_dtype(d);
    INFO(sexpgpu::ir::ir_name(d));
    CHECK(sexpgpu::ir::dtype_of_abi(abi) == d);
  }
  CHECK(sexpgpu::ir::abi_dtype(sexpgpu::ir::DType::BF16) == SG_DTYPE_BF16);
  CHECK(sexpgpu::ir::dtype_of_abi(SG_DTYPE_U16) == sexpgpu::ir::DType::U16);
  CHECK_FALSE(sexpgpu::ir::dtype_of_abi(0).has_value());
  CHECK_FALSE(sexpgpu::ir::dtype_of_abi(SG_DTYPE_U16 + 1).has_value());
}
