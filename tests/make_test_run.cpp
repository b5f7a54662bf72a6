// make_test_run DIR: writes a run directory as the training loop will, with
// the core/run library, for tests/e2e/checkpoint.sh: events.jsonl, a
// preempted status.json and two checkpoints (steps 100 and 200) of a
// two-parameter model whose values are known:
//   fc/w f32[2,3] = {s, s + 0.5, -s, 2s, 0.25, 1}, fc/b f32[2] = {s / 4, -1}
// at step s, and Adam-like moments fc/w/m, fc/b/m.
#include <chrono>
#include <iostream>
#include <vector>

#include "run/checkpoint.h"
#include "run/events.h"
#include "run/status.h"
#include "run/summary.h"

using namespace sexpgpu::run;
namespace ir = sexpgpu::ir;

namespace {

template <class T>
std::span<const std::byte> bytes_of(const std::vector<T>& v) {
  return std::as_bytes(std::span<const T>(v));
}

bool fail(const std::string& why) {
  std::cerr << "make_test_run: " << why << "\n";
  return false;
}

bool write_one_checkpoint(EventLog& log, const std::string& dir, int64_t step,
                          const json& metrics) {
  float s = static_cast<float>(step);
  std::vector<float> w = {s, s + 0.5f, -s, 2 * s, 0.25f, 1}, b = {s / 4, -1};
  std::vector<float> w_m(6, 0.5f), b_m = {0.125f, -0.125f};
  CheckpointContent c;
  c.step = step;
  c.params = {{"fc/w", ir::DType::F32, {2, 3}, bytes_of(w)},
              {"fc/b", ir::DType::F32, {2}, bytes_of(b)}};
  c.optimizer = {{"fc/w/m", ir::DType::F32, {2, 3}, bytes_of(w_m)},
                 {"fc/b/m", ir::DType::F32, {2}, bytes_of(b_m)}};
  c.state = {{"time", "2023-11-14T22:13:20.123Z"},
             {"metrics", metrics},
             {"loaders", {{"train", {{"position", step * 32}, {"seed", 1}}}}},
             {"rng", {{"seed", 0}, {"counter", step}}}};
  CheckpointOptions options;
  options.keep = 3;
  auto r = write_checkpoint(dir + "/checkpoints", c, options);
  if (!r) return fail(r.error());
  std::string logged = log.checkpoint(step, r->path, r->bytes, r->ms, r->kept, r->removed);
  return logged.empty() || fail(logged);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: make_test_run DIR\n";
    return 2;
  }
  std::string dir = argv[1];
  auto log = EventLog::create(dir + "/events.jsonl");
  if (!log) {
    fail(log.error());
    return 3;
  }
  EventLog events = std::move(log).value();
  StatusFile status(dir + "/status.json");
  status.edit().steps = 1000;
  RunSummary summary;
  bool ok = events.open({{"slug", "test-run"}}) == "" && status.set_state("running") == "";
  for (int64_t step : {100, 200}) {
    json metrics = {{"train/loss", 1.0 / static_cast<double>(step)}};
    summary.observe_all(metrics, step);
    ok = ok && events.step(step, metrics) == "" &&
         status.on_step(step, metrics, {{"examples-per-s", 3200.0}}, 90.0) == "" &&
         write_one_checkpoint(events, dir, step, metrics) &&
         status.on_checkpoint(step, dir + "/checkpoints/" + checkpoint_dir_name(step)) == "";
  }
  summary.set_counts(200, 2.5, 0, 6400);
  std::string next = resume_command({"sexpgpu", "run", "test.lisp", "--steps", "1000"});
  ok = ok && events.signal(200, "SIGTERM", "checkpoint-and-stop") == "" &&
       events.close(200, "preempted", 75, summary.to_json()) == "" &&
       status.finish("preempted", 75, summary.to_json(), nullptr, next) == "";
  return ok ? 0 : 3;
}
