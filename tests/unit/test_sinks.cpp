// The stock sink plugins, jsonl and csv (sinks/), loaded from the build's
// plugin directory and driven through their C tables with a realistic run:
// the files' exact bytes, flushing, resuming, widening on a late metric, and
// every error an sg_error with its code.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "catch.hpp"
#include "host/plugin_host.h"

namespace {

namespace fs = std::filesystem;
using sexpgpu::host::PluginHost;
using sexpgpu::host::PluginRecord;
using sexpgpu::host::SearchDir;

const std::string kOpen =
    R"({"kind":"open","time":"2025-03-01T10:00:00Z","sexpgpu":"0.1.0","slug":"mlp-small"})";

// A short run: steps (one adds metrics late), a diagnostic, evaluations
// (one named with a comma and quotes), a checkpoint and the close.
const std::vector<std::string> kRun = {
    R"({"kind":"step","time":"2025-03-01T10:00:01Z","step":1,"metrics":{"train/loss":2.302585092994046,"lr/main":0.001,"step-ms":12,"examples-per-s":2048.0}})",
    R"({"kind":"step","time":"2025-03-01T10:00:02Z","step":2,"metrics":{"train/loss":1.7000000000000002,"lr/main":1e-05,"step-ms":11,"examples-per-s":2100.5}})",
    R"({"kind":"diag","time":"2025-03-01T10:00:02Z","step":2,"name":"param-rms","values":{"w1":0.5}})",
    R"({"kind":"eval","time":"2025-03-01T10:00:03Z","step":2,"name":"val","metrics":{"val/loss":1.8,"val/acc":0.30000000000000004},"batches":4,"examples":256,"ms":30.5})",
    R"({"kind":"checkpoint","time":"2025-03-01T10:00:03Z","step":2,"path":"checkpoints/step-00000002","bytes":1024,"ms":3,"kept":1,"removed":0})",
    R"({"kind":"step","time":"2025-03-01T10:00:04Z","step":3,"metrics":{"train/loss":1.25,"lr/main":1e-05,"step-ms":11,"examples-per-s":1e+16,"grad-norm":0.75,"epoch":1}})",
    R"({"kind":"eval","time":"2025-03-01T10:00:05Z","step":3,"name":"val, \"hard\"","metrics":{"val/acc":0.5,"val/f1":null}})",
    R"({"kind":"close","time":"2025-03-01T10:00:06Z","state":"finished","exit_code":0,"summary":{"steps":3}})"};

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

fs::path temp_dir(const std::string& tag) {
  fs::path d =
      fs::temp_directory_path() / ("sexpgpu-sinks-" + tag + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::string lines(const std::vector<std::string>& events, size_t from, size_t to) {
  std::string out;
  for (size_t i = from; i < to; ++i) out += events[i] + "\n";
  return out;
}

// A plugin of the build, loaded and checked to be a sink.
struct Sink {
  PluginHost host{{{SEXPGPU_BUILD_PLUGIN_DIR, "build tree"}}};
  const sg_sink_api* api;
  explicit Sink(const std::string& name) : api(host.sink(name)) {
    INFO("libsexpgpu-" << name << ".so in " << SEXPGPU_BUILD_PLUGIN_DIR);
    REQUIRE(api);
  }

  sg_error* open(const std::string& run_dir, const std::string& arg, sg_sink** out) const {
    return api->open(run_dir.data(), run_dir.size(), kOpen.data(), kOpen.size(), arg.data(),
                     arg.size(), out);
  }
  sg_sink* open_ok(const std::string& run_dir, const std::string& arg) const {
    sg_sink* sink = nullptr;
    sg_error* err = open(run_dir, arg, &sink);
    INFO(sexpgpu::host::take_error(api, err));
    REQUIRE(err == nullptr);
    REQUIRE(sink);
    return sink;
  }
  void feed(sg_sink* sink, const std::vector<std::string>& events, size_t from, size_t to) const {
    for (size_t i = from; i < to; ++i) {
      sg_error* err = api->event(sink, events[i].data(), events[i].size());
      INFO(events[i] << ": " << sexpgpu::host::take_error(api, err));
      REQUIRE(err == nullptr);
    }
  }
  // The error's code and message; the error is freed.
  std::pair<sg_error_code, std::string> take(sg_error* err) const {
    REQUIRE(err);
    sg_error_code code = api->error_code(err);
    return {code, sexpgpu::host::take_error(api, err)};
  }
};

}  // namespace

TEST_CASE("doctor's plugin list shows jsonl and csv as loaded sinks", "[sinks]") {
  PluginHost h(std::vector<SearchDir>{{SEXPGPU_BUILD_PLUGIN_DIR, "build tree"}});
  for (const char* name : {"jsonl", "csv"}) {
    const PluginRecord* rec = h.find(name);
    INFO(name);
    REQUIRE(rec);
    CHECK(rec->loaded);
    CHECK(rec->reason.empty());
    CHECK(rec->kind == "sink");
    CHECK(rec->version == "1.0.0");
    CHECK(rec->abi == "1.3");
    CHECK(fs::path(rec->path).filename() == std::string("libsexpgpu-") + name + ".so");
    CHECK(h.sink(name) != nullptr);
    CHECK(h.device(name) == nullptr);
  }
}

TEST_CASE("jsonl copies every event line, flushing all but step and diag at once", "[sinks]") {
  Sink s("jsonl");
  fs::path run = temp_dir("jsonl");
  fs::path copy = run / "mirror" / "deep" / "copy.jsonl";  // parents created
  sg_sink* sink = s.open_ok(run.string(), "mirror/deep/copy.jsonl");
  CHECK(slurp(copy) == kOpen + "\n");

  s.feed(sink, kRun, 0, 3);  // step, step, diag: still in the buffer
  CHECK(slurp(copy) == kOpen + "\n");
  s.feed(sink, kRun, 3, 4);  // eval: flushed with everything before it
  CHECK(slurp(copy) == kOpen + "\n" + lines(kRun, 0, 4));
  s.feed(sink, kRun, 4, 6);  // checkpoint, then a buffered step
  CHECK(slurp(copy) == kOpen + "\n" + lines(kRun, 0, 5));
  CHECK(s.api->flush(sink) == nullptr);
  CHECK(slurp(copy) == kOpen + "\n" + lines(kRun, 0, 6));
  s.feed(sink, kRun, 6, kRun.size());
  CHECK(s.api->close(sink) == nullptr);
  CHECK(slurp(copy) == kOpen + "\n" + lines(kRun, 0, kRun.size()));

  SECTION("a resumed run appends to the same copy") {
    std::string resumed_step = R"({"kind":"step","time":"2025-03-02T08:00:00Z","step":4})";
    sink = s.open_ok(run.string(), copy.string());  // absolute this time
    s.feed(sink, {resumed_step}, 0, 1);
    CHECK(s.api->close(sink) == nullptr);
    CHECK(slurp(copy) ==
          kOpen + "\n" + lines(kRun, 0, kRun.size()) + kOpen + "\n" + resumed_step + "\n");
  }
  fs::remove_all(run);
}

TEST_CASE("jsonl refuses a missing or unwritable destination with an error object", "[sinks]") {
  Sink s("jsonl");
  fs::path run = temp_dir("jsonl-err");
  sg_sink* sink = reinterpret_cast<sg_sink*>(&s);  // must be cleared on failure

  auto [code, message] = s.take(s.open(run.string(), "", &sink));
  CHECK(code == SG_ERROR_INVALID_ARGUMENT);
  CHECK(message ==
        "jsonl: needs a destination file: --sink jsonl:PATH (PATH absolute, or relative to the "
        "run directory)");
  CHECK(sink == nullptr);

  std::ofstream(run / "blocker") << "a file, not a directory";
  std::tie(code, message) = s.take(s.open(run.string(), "blocker/copy.jsonl", &sink));
  CHECK(code == SG_ERROR_IO);
  CHECK(message ==
        "jsonl: cannot create directory " + (run / "blocker").string() + ": Not a directory");
  CHECK(sink == nullptr);

  std::tie(code, message) = s.take(s.open(run.string(), "sub/", &sink));
  CHECK(code == SG_ERROR_IO);
  CHECK(message == "jsonl: cannot open " + (run / "sub/").string() + ": Is a directory");

  std::tie(code, message) = s.take(s.api->event(nullptr, "{}", 2));
  CHECK(code == SG_ERROR_INVALID_ARGUMENT);
  CHECK(message == "jsonl: called with a NULL sink");
  fs::remove_all(run);
}

TEST_CASE("csv writes steps.csv and eval.csv, widening for a late metric", "[sinks]") {
  Sink s("csv");
  fs::path run = temp_dir("csv");
  sg_sink* sink = s.open_ok(run.string(), "");
  s.feed(sink, kRun, 0, kRun.size());
  CHECK(s.api->close(sink) == nullptr);

  // Numbers are the shortest text that reads back to the same double
  // (2048.0 reads back from "2048"); grad-norm and epoch first appear at
  // step 3, so the earlier rows have empty cells there.
  const std::string steps =
      "step,time,train/loss,lr/main,step-ms,examples-per-s,grad-norm,epoch\n"
      "1,2025-03-01T10:00:01Z,2.302585092994046,0.001,12,2048,,\n"
      "2,2025-03-01T10:00:02Z,1.7000000000000002,1e-05,11,2100.5,,\n"
      "3,2025-03-01T10:00:04Z,1.25,1e-05,11,1e+16,0.75,1\n";
  CHECK(slurp(run / "steps.csv") == steps);
  // RFC 4180: a field with a comma or a quote is quoted, its quotes doubled.
  const std::string evals =
      "step,time,name,val/loss,val/acc,val/f1\n"
      "2,2025-03-01T10:00:03Z,val,1.8,0.30000000000000004,\n"
      "3,2025-03-01T10:00:05Z,\"val, \"\"hard\"\"\",,0.5,\n";
  CHECK(slurp(run / "eval.csv") == evals);
  CHECK_FALSE(fs::exists(run / "steps.csv.tmp"));

  SECTION("a resumed run continues both files under their headers") {
    std::vector<std::string> resumed = {
        R"({"kind":"step","time":"2025-03-02T08:00:00Z","step":4,"metrics":{"epoch":2,"train/loss":1.125}})",
        R"({"kind":"step","time":"2025-03-02T08:00:01Z","step":5,"metrics":{"tokens-per-s":512}})",
        R"({"kind":"eval","time":"2025-03-02T08:00:02Z","step":5,"name":"val","metrics":{"val/acc":0.625}})"};
    sink = s.open_ok(run.string(), "");
    s.feed(sink, resumed, 0, resumed.size());
    CHECK(s.api->close(sink) == nullptr);
    CHECK(slurp(run / "steps.csv") ==
          "step,time,train/loss,lr/main,step-ms,examples-per-s,grad-norm,epoch,tokens-per-s\n"
          "1,2025-03-01T10:00:01Z,2.302585092994046,0.001,12,2048,,,\n"
          "2,2025-03-01T10:00:02Z,1.7000000000000002,1e-05,11,2100.5,,,\n"
          "3,2025-03-01T10:00:04Z,1.25,1e-05,11,1e+16,0.75,1,\n"
          "4,2025-03-02T08:00:00Z,1.125,,,,,2,\n"
          "5,2025-03-02T08:00:01Z,,,,,,,512\n");
    CHECK(slurp(run / "eval.csv") == evals + "5,2025-03-02T08:00:02Z,val,,0.625,\n");
  }
  fs::remove_all(run);
}

TEST_CASE("csv flushes eval rows at once and step rows on flush", "[sinks]") {
  Sink s("csv");
  fs::path run = temp_dir("csv-flush");
  sg_sink* sink = s.open_ok(run.string(), "metrics");  // relative to the run directory
  fs::path dir = run / "metrics";
  CHECK(fs::is_directory(dir));
  s.feed(sink, kRun, 0, 1);
  CHECK(slurp(dir / "steps.csv") == "");
  CHECK_FALSE(fs::exists(dir / "eval.csv"));  // created with its first row
  CHECK(s.api->flush(sink) == nullptr);
  CHECK(slurp(dir / "steps.csv") ==
        "step,time,train/loss,lr/main,step-ms,examples-per-s\n"
        "1,2025-03-01T10:00:01Z,2.302585092994046,0.001,12,2048\n");
  s.feed(sink, kRun, 1, 4);  // step, diag, eval: the eval flushes both files
  CHECK(slurp(dir / "eval.csv") ==
        "step,time,name,val/loss,val/acc\n2,2025-03-01T10:00:03Z,val,1.8,0.30000000000000004\n");
  CHECK(slurp(dir / "steps.csv").find("\n2,2025-03-01T10:00:02Z,1.7000000000000002,") !=
        std::string::npos);
  CHECK(s.api->close(sink) == nullptr);
  CHECK_FALSE(fs::exists(run / "steps.csv"));
  fs::remove_all(run);
}

TEST_CASE("csv's errors are error objects and the sink stays usable", "[sinks]") {
  Sink s("csv");
  fs::path run = temp_dir("csv-err");
  sg_sink* sink = nullptr;

  auto [code, message] = s.take(s.open("", "", &sink));
  CHECK(code == SG_ERROR_INVALID_ARGUMENT);
  CHECK(message ==
        "csv: no run directory and no --sink csv:DIR to write steps.csv and eval.csv in");
  CHECK(sink == nullptr);

  std::ofstream(run / "blocker") << "a file, not a directory";
  std::tie(code, message) = s.take(s.open(run.string(), "blocker/metrics", &sink));
  CHECK(code == SG_ERROR_IO);
  CHECK(message ==
        "csv: cannot create directory " + (run / "blocker/metrics").string() + ": Not a directory");
  CHECK(sink == nullptr);

  sink = s.open_ok(run.string(), "");
  std::string not_json = R"({"kind":"step","step":)";
  std::tie(code, message) = s.take(s.api->event(sink, not_json.data(), not_json.size()));
  CHECK(code == SG_ERROR_INVALID_ARGUMENT);
  CHECK(message == "csv: an event is not JSON: " + not_json);
  std::string bad_metrics = R"({"kind":"step","step":1,"metrics":[1,2]})";
  std::tie(code, message) = s.take(s.api->event(sink, bad_metrics.data(), bad_metrics.size()));
  CHECK(code == SG_ERROR_INVALID_ARGUMENT);
  CHECK(message == "csv: an event's `metrics` must be an object, got: [1,2]");
  s.feed(sink, kRun, 0, 1);
  CHECK(s.api->close(sink) == nullptr);
  CHECK(slurp(run / "steps.csv") ==
        "step,time,train/loss,lr/main,step-ms,examples-per-s\n"
        "1,2025-03-01T10:00:01Z,2.302585092994046,0.001,12,2048\n");

  SECTION("a steps.csv that is not the sink's is left alone") {
    std::ofstream(run / "steps.csv", std::ios::trunc) << "epoch,loss\n1,0.5\n";
    sink = s.open_ok(run.string(), "");
    std::tie(code, message) = s.take(s.api->event(sink, kRun[0].data(), kRun[0].size()));
    CHECK(code == SG_ERROR_INVALID_ARGUMENT);
    CHECK(message == "csv: " + (run / "steps.csv").string() +
                         " exists and is not a csv sink file: its header does not start with "
                         "step,time");
    CHECK(s.api->close(sink) == nullptr);
    CHECK(slurp(run / "steps.csv") == "epoch,loss\n1,0.5\n");
  }
  std::tie(code, message) = s.take(s.api->flush(nullptr));
  CHECK(code == SG_ERROR_INVALID_ARGUMENT);
  CHECK(message == "csv: called with a NULL sink");
  fs::remove_all(run);
}
