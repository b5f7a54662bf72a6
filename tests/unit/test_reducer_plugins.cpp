// The reducer plugins that ship (diagnostics/: quantiles, kurtosis,
// log2-histogram) and the plain-C example (plugins/example-reducer:
// mean-abs), loaded from the build's plugin directory and driven through
// their C tables, as the runtime drives them, on values whose results are
// worked out by hand; every error an sg_error with its code.
#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "catch.hpp"
#include "host/plugin_host.h"

namespace {

using sexpgpu::host::PluginHost;
using sexpgpu::host::SearchDir;

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// A reducer plugin of the build, loaded and checked to be a reducer.
struct Reducer {
  PluginHost host{{{SEXPGPU_BUILD_PLUGIN_DIR, "build tree"}}};
  const sg_reducer_api* api;
  explicit Reducer(const std::string& name) : api(host.reducer(name)) {
    INFO("a reducer plugin named " << name << " in " << SEXPGPU_BUILD_PLUGIN_DIR);
    REQUIRE(api);
    const char* text = nullptr;
    size_t len = 0;
    api->name(&text, &len);
    CHECK(std::string(text, len) == name);  // the table names what :reduce names
  }

  std::vector<std::string> outputs() const {
    size_t count = 0;
    const char* const* names = nullptr;
    api->outputs(&count, &names);
    return std::vector<std::string>(names, names + count);
  }

  // OUTPUT -> number, after one update per chunk.
  std::map<std::string, double> reduce(const std::vector<std::vector<float>>& chunks) const {
    sg_reducer_state* state = nullptr;
    sg_error* err = api->init("{}", 2, &state);
    INFO(sexpgpu::host::take_error(api, err));
    REQUIRE(err == nullptr);
    for (const std::vector<float>& c : chunks) {
      err = api->update(state, c.data(), c.size());
      INFO(sexpgpu::host::take_error(api, err));
      REQUIRE(err == nullptr);
    }
    std::vector<std::string> names = outputs();
    std::vector<double> numbers(names.size(), -12345);
    err = api->finish(state, numbers.data());
    INFO(sexpgpu::host::take_error(api, err));
    REQUIRE(err == nullptr);
    api->destroy(state);
    std::map<std::string, double> out;
    for (size_t i = 0; i < names.size(); ++i) out[names[i]] = numbers[i];
    return out;
  }

  // init's error code and message for these options.
  std::pair<sg_error_code, std::string> init_error(const std::string& options) const {
    sg_reducer_state* state = nullptr;
    sg_error* err = api->init(options.data(), options.size(), &state);
    REQUIRE(err);
    CHECK(state == nullptr);
    sg_error_code code = api->error_code(err);
    return {code, sexpgpu::host::take_error(api, err)};
  }
};

std::vector<float> range(float from, float to) {
  std::vector<float> out;
  for (float x = from; x <= to; x += 1) out.push_back(x);
  return out;
}

}  // namespace

TEST_CASE("quantiles: seven quantiles of the finite values, interpolated", "[reducers]") {
  Reducer r("quantiles");
  CHECK(r.outputs() == std::vector<std::string>{"p01", "p05", "p25", "p50", "p75", "p95", "p99"});
  // 1..101 in two updates, shuffled by halves, with non-finite values left
  // out: rank q*100 of the sorted values is the value q*100 + 1.
  std::vector<float> low = range(1, 50), high = range(51, 101);
  high.push_back(kNaN);
  low.push_back(-kInf);
  auto q = r.reduce({high, low});
  CHECK(q["p01"] == 2);
  CHECK(q["p05"] == 6);
  CHECK(q["p25"] == 26);
  CHECK(q["p50"] == 51);
  CHECK(q["p75"] == 76);
  CHECK(q["p95"] == 96);
  CHECK(q["p99"] == 100);
  // Between ranks: 0, 10 gives q*10.
  q = r.reduce({{10, 0}});
  CHECK(q["p25"] == Approx(2.5));
  CHECK(q["p99"] == Approx(9.9));
  // One value is every quantile; no finite value gives NaN (null in events).
  CHECK(r.reduce({{-3}})["p01"] == -3);
  CHECK(std::isnan(r.reduce({{kNaN, kInf}})["p50"]));
  CHECK(std::isnan(r.reduce({})["p99"]));
  CHECK(r.init_error("{\"levels\":[0.5]}") ==
        std::pair{SG_ERROR_INVALID_ARGUMENT,
                  std::string("quantiles: takes no options, given {\"levels\":[0.5]}")});
}

TEST_CASE("kurtosis: the excess kurtosis, stable under a large mean", "[reducers]") {
  Reducer r("kurtosis");
  CHECK(r.outputs() == std::vector<std::string>{"kurtosis"});
  // 1..5: m2 = 2, m4 = 6.8, so 6.8 / 4 - 3 = -1.3.
  CHECK(r.reduce({{1, 2, 3}, {4, 5}})["kurtosis"] == Approx(-1.3).margin(1e-12));
  // The same values around 1e6 (exact in f32): the same kurtosis.
  CHECK(r.reduce({{1e6 + 1, 1e6 + 2, 1e6 + 3, 1e6 + 4, 1e6 + 5}})["kurtosis"] ==
        Approx(-1.3).margin(1e-9));
  // Two points: m4 / m2^2 = 1, so -2; one outlier among many zeros is heavy-tailed:
  // n values, one of them 1: m2 = (n-1)/n^2, m4 ~ (n-1)(n^2-3n+3)/n^4, kurtosis ~ n - 5.
  CHECK(r.reduce({{-1, 1}})["kurtosis"] == Approx(-2));
  std::vector<float> spike(1000, 0.0f);
  spike[17] = 1;
  double n = 1000, m2 = (n - 1) / (n * n), m4 = (n - 1) * (n * n - 3 * n + 3) / (n * n * n * n);
  CHECK(r.reduce({spike})["kurtosis"] == Approx(m4 / (m2 * m2) - 3).epsilon(1e-9));
  CHECK(std::isnan(r.reduce({{2, 2, 2}})["kurtosis"]));  // constant: undefined
  CHECK(std::isnan(r.reduce({{1, kNaN, 3}})["kurtosis"]));
  CHECK(std::isnan(r.reduce({})["kurtosis"]));
}

TEST_CASE("log2-histogram: |x| counted in fixed power-of-two bins", "[reducers]") {
  Reducer r("log2-histogram");
  std::vector<std::string> names = r.outputs();
  REQUIRE(names.size() == 44);
  CHECK(names.front() == "zero");
  CHECK(names[1] == "below-2^-24");
  CHECK(names[2] == "2^-24");
  CHECK(names[41] == "2^15");
  CHECK(names[42] == "from-2^16");
  CHECK(names.back() == "nonfinite");
  const float tiny = std::ldexp(1.0f, -25), smallest_f16 = std::ldexp(1.0f, -24);
  auto h = r.reduce({{0.0f, -0.0f, tiny, smallest_f16, 1.0f, -1.5f, 1.99f, 2.0f, 0.25f},
                     {65504.0f, 65536.0f, -1e30f, kInf, kNaN, std::ldexp(1.0f, -149)}});
  double total = 0;
  for (auto& [name, count] : h) total += count;
  CHECK(total == 15);
  CHECK(h["zero"] == 2);
  CHECK(h["below-2^-24"] == 2);  // 2^-25 and the smallest f32 subnormal
  CHECK(h["2^-24"] == 1);
  CHECK(h["2^0"] == 3);  // 1, -1.5, 1.99
  CHECK(h["2^1"] == 1);
  CHECK(h["2^-2"] == 1);
  CHECK(h["2^15"] == 1);  // 65504, f16's largest
  CHECK(h["from-2^16"] == 2);
  CHECK(h["nonfinite"] == 2);
  CHECK(h["2^-1"] == 0);
}

TEST_CASE("mean-abs, the plain-C example reducer: the mean of |x| and the count", "[reducers]") {
  Reducer r("mean-abs");
  CHECK(r.outputs() == std::vector<std::string>{"mean", "count"});
  auto m = r.reduce({{1, -2, 3}, {-6}});
  CHECK(m["mean"] == 3);
  CHECK(m["count"] == 4);
  m = r.reduce({});
  CHECK(std::isnan(m["mean"]));
  CHECK(m["count"] == 0);
  CHECK(std::isnan(r.reduce({{1, kNaN}})["mean"]));
  CHECK(r.init_error("{\"x\":1}") ==
        std::pair{SG_ERROR_INVALID_ARGUMENT, std::string("mean-abs: takes no options")});
}
