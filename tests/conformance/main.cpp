// The conformance suite: every op of ops.def, at every dtype its shape rule
// accepts, run on every device plugin that loads and says it is available,
// through the C ABI only, and compared with the f64 reference (reference.h);
// then the NumPy/PyTorch table (numpy_table.h) on the same devices. Prints
// one line per device and one per failure; exits 1 on any failure.
//
//   conformance [-v] [OP...]   -v: a line per case; OP: only these ops (IR names)
#include <cstdio>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "device.h"
#include "host/plugin_host.h"
#include "numpy_table.h"
#include "reference.h"

using namespace conformance;

namespace {

uint64_t seed_of(const std::string& text) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a: the same operands on every platform
  for (unsigned char ch : text) h = (h ^ ch) * 1099511628211ull;
  return h;
}

struct Suite {
  std::vector<Prepared> cases;
  int failures = 0;  // of the suite itself: coverage, references
};

void fail(Suite& s, const std::string& message) {
  std::printf("FAIL %s\n", message.c_str());
  ++s.failures;
}

// Every case of `op` at every dtype; a case that builds at no dtype is a
// broken case, not a skipped one.
void prepare_op(Suite& s, Op op) {
  if (op == Op::Input || op == Op::Param) return;  // leaves: every case's operands
  std::vector<Case> cases = cases_for(op);
  std::string op_name(ir::info(op).ir_name);
  if (cases.empty()) return fail(s, "coverage: op " + op_name + " has no conformance case");
  for (size_t k = 0; k < cases.size(); ++k) {
    std::string refusal;
    bool built = false;
    for (DType d : ir::kAllDTypes) {
      Preparation p = prepare(cases[k], d, seed_of(op_name + "/" + std::to_string(k)));
      if (p.status == Preparation::Refused) {
        if (d == DType::F32) refusal = p.message;
        continue;
      }
      built = true;
      if (p.status == Preparation::Broken)
        fail(s, "reference " + op_name + " " + std::string(ir::ir_name(d)) + " (" + cases[k].label +
                    "): " + p.message);
      else
        s.cases.push_back(std::move(p.prepared));
    }
    if (!built)
      fail(s, "case " + op_name + " (" + cases[k].label + ") builds at no dtype: " + refusal);
  }
}

// Runs every case on one device; returns the number of failures.
int run_device(const std::string& name, const sg_device_api* api,
               const std::vector<Prepared>& cases, const std::vector<Prepared>& numpy,
               bool verbose) {
  Device device(name, api, "{}");
  if (!device.error().empty()) {
    std::printf("FAIL device %s: open: %s\n", name.c_str(), device.error().c_str());
    return 1;
  }
  int failures[2] = {0, 0};
  const std::vector<Prepared>* sets[2] = {&cases, &numpy};
  for (int set = 0; set < 2; ++set) {
    for (const Prepared& p : *sets[set]) {
      auto got = device.run(p.ir_json, p.module.functions[0], p.inputs);
      std::string verdict = got ? judge(p, *got) : got.error();
      if (!verdict.empty()) {
        ++failures[set];
        std::printf("FAIL %s %s%s: %s\n", name.c_str(), set ? "numpy " : "", p.name.c_str(),
                    verdict.c_str());
      } else if (verbose) {
        std::printf("ok   %s %s%s\n", name.c_str(), set ? "numpy " : "", p.name.c_str());
      }
    }
  }
  std::printf("device %s: %zu cases, %d failures; NumPy table: %zu cases, %d failures\n",
              name.c_str(), cases.size(), failures[0], numpy.size(), failures[1]);
  int fill_failures = 0;
  if (!device.has_fill()) {
    std::printf("device %s: no sg_device_fill (ABI 1.2); the core uploads fills\n", name.c_str());
  } else if (std::string why = device.check_fill(); !why.empty()) {
    std::printf("FAIL %s %s\n", name.c_str(), why.c_str());
    fill_failures = 1;
  } else {
    std::printf("device %s: sg_device_fill at %zu dtypes\n", name.c_str(), ir::kDTypeCount);
  }
  std::string said;
  if (std::string why = device.check_in_place(said); !why.empty()) {
    std::printf("FAIL %s %s\n", name.c_str(), why.c_str());
    fill_failures += 1;
  } else {
    std::printf("device %s: %s\n", name.c_str(), said.c_str());
  }
  return failures[0] + failures[1] + fill_failures;
}

// "" when the probe says {"available": true}; else why not.
std::string unavailable(const sg_device_api* api) {
  const char* json = nullptr;
  size_t len = 0;
  std::string e = host::take_error(api, api->probe(&json, &len));
  if (!e.empty()) return "probe: " + e;
  nlohmann::json probe = nlohmann::json::parse(json, json + len, nullptr, false);
  if (probe.is_object() && probe.value("available", false)) return "";
  return probe.is_object() ? probe.value("reason", std::string("no reason given"))
                           : "the probe is not a JSON object";
}

}  // namespace

int main(int argc, char** argv) {
  bool verbose = false;
  std::set<std::string> only;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-v")
      verbose = true;
    else
      only.insert(arg);
  }
  Suite suite;
  for (const ir::OpInfo& op : ir::kOps)
    if (only.empty() || only.count(std::string(op.ir_name))) prepare_op(suite, op.op);
  std::vector<Prepared> numpy = only.empty() ? numpy_cases() : std::vector<Prepared>{};

  host::PluginHost plugins(host::default_search_path());
  int failures = suite.failures, devices = 0;
  for (const host::PluginRecord& rec : plugins.plugins()) {
    if (!rec.loaded) {  // its kind is unknown: it may be a device
      std::printf("plugin %s: not loaded (%s)\n", rec.name.c_str(), rec.reason.c_str());
      continue;
    }
    if (rec.kind != "device") continue;
    const sg_device_api* api = plugins.device(rec.name);
    if (std::string why = unavailable(api); !why.empty()) {
      std::printf("device %s: not available (%s)\n", rec.name.c_str(), why.c_str());
      continue;
    }
    ++devices;
    failures += run_device(rec.name, api, suite.cases, numpy, verbose);
  }
  if (devices == 0) {
    std::printf("FAIL no device plugin loaded and available on the search path:");
    for (const host::SearchDir& d : plugins.search_path()) std::printf(" %s", d.dir.c_str());
    std::printf("\n");
    ++failures;
  }
  return failures == 0 ? 0 : 1;
}
