// core/run status: every key present, atomic replacement, the end of a run
// with its resume command, and reading back.
#include <unistd.h>

#include <algorithm>

#include "run/status.h"
#include "test_run_util.h"

using namespace sexpgpu;
using namespace sexpgpu::run;
using namespace run_test;

namespace {

Clock fixed_clock() {
  return [] {
    return std::chrono::system_clock::time_point(std::chrono::milliseconds(1700000000123));
  };
}

}  // namespace

TEST_CASE("StatusFile writes every key, null until known", "[run][status]") {
  TempDir dir;
  fs::path p = dir / "status.json";
  StatusFile status(p.string(), fixed_clock());
  REQUIRE(status.set_state("compiling") == "");
  json j = json::parse(read_file(p));
  std::vector<std::string> keys;
  for (const auto& [k, _] : j.items()) keys.push_back(k);
  std::sort(keys.begin(), keys.end());
  CHECK(keys == std::vector<std::string>{"error", "eta_s", "eval", "exit_code", "host",
                                         "last_checkpoint", "metrics", "next", "pid", "stage",
                                         "started", "state", "step", "steps", "summary",
                                         "throughput", "updated"});
  CHECK(j["state"] == "compiling");
  CHECK(j["step"].is_null());
  CHECK(j["pid"] == ::getpid());
  CHECK(j["started"] == "2023-11-14T22:13:20.123Z");
  CHECK(j["updated"] == "2023-11-14T22:13:20.123Z");
  // No temporary file stays behind.
  CHECK(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator()) == 1);
  CHECK(status.set_state("sleeping") == "'sleeping' is not a run state");
}

TEST_CASE("StatusFile through a run to a resumable stop", "[run][status]") {
  TempDir dir;
  fs::path p = dir / "status.json";
  StatusFile status(p.string(), fixed_clock());
  status.edit().steps = 1000;
  status.edit().stage = "short";
  REQUIRE(status.set_state("running") == "");
  REQUIRE(status.on_step(100, {{"train/loss", 0.5}}, {{"examples-per-s", 2000.0}}, 45.0) == "");
  REQUIRE(status.on_eval("test", {{"test/acc", 0.9}}) == "");
  REQUIRE(status.on_checkpoint(100, "runs/x/checkpoints/step-00000100") == "");
  std::string next = resume_command({"sexpgpu", "run", "mnist.lisp", "--steps", "1000"});
  REQUIRE(status.finish("preempted", 75, {{"steps", 100}}, nullptr, next) == "");
  CHECK(status.finish("running", 0, nullptr, nullptr, std::nullopt) ==
        "'running' is not a state a run ends in");
  auto back = read_status(p.string());
  INFO(back.error());
  REQUIRE(back.ok());
  CHECK(back->state == "preempted");
  CHECK(back->step == 100);
  CHECK(back->steps == 1000);
  CHECK(back->stage == "short");
  CHECK(back->metrics["train/loss"] == 0.5);
  CHECK(back->eval["test"]["test/acc"] == 0.9);
  CHECK(back->throughput["examples-per-s"] == 2000.0);
  CHECK_FALSE(back->eta_s.has_value());  // a stopped run has no ETA
  CHECK(back->last_checkpoint["step"] == 100);
  CHECK(back->exit_code == 75);
  CHECK(back->summary["steps"] == 100);
  CHECK(back->next == "sexpgpu run mnist.lisp --steps 1000 --resume latest");
  CHECK(back->to_json() == status.status().to_json());
}

TEST_CASE("read_status rejects what is not a status", "[run][status]") {
  TempDir dir;
  fs::path p = dir / "status.json";
  write_file(p, "{\"state\": \"dancing\"}");
  CHECK(read_status(p.string()).error() ==
        p.string() + ": the status has no known state (\"dancing\")");
  write_file(p, "{\"state\": \"running\", \"step\": \"ten\"}");
  CHECK(read_status(p.string()).error() == p.string() + ": a status field has the wrong type");
  write_file(p, "{\"state\": ");
  CHECK(read_status(p.string()).error() == p.string() + ": not JSON");
  write_file(p, "{\"state\": \"running\", \"new_field\": 1}");
  CHECK(read_status(p.string()).ok());
}

TEST_CASE("resume_command", "[run][status]") {
  CHECK(resume_command({"sexpgpu", "run", "a.lisp"}) == "sexpgpu run a.lisp --resume latest");
  CHECK(resume_command({"sexpgpu", "run", "a.lisp", "--resume", "runs/a/checkpoints/step-00000100",
                        "--set", "lr=0.1"}) == "sexpgpu run a.lisp --set lr=0.1 --resume latest");
  CHECK(resume_command({"sexpgpu", "run", "--fresh", "my file.lisp", "--resume=latest"}) ==
        "sexpgpu run 'my file.lisp' --resume latest");
  CHECK(resume_command({"sexpgpu", "run", "it's.lisp"}) ==
        "sexpgpu run 'it'\\''s.lisp' --resume latest");
}
