// core/run events and summary: the exact lines written (with a fixed clock),
// appending on resume, a line cut short by a crash, the summary's best rule
// and targets.
#include "run/events.h"
#include "run/summary.h"
#include "test_run_util.h"

using namespace sexpgpu;
using namespace sexpgpu::run;
using namespace run_test;
using std::chrono::milliseconds;
using std::chrono::system_clock;

namespace {

// 1700000000.123 s after the epoch is 2023-11-14T22:13:20.123Z (Python's
// datetime.fromtimestamp(1700000000.123, timezone.utc)); each call adds 1 ms.
Clock ticking_clock() {
  auto t = std::make_shared<int64_t>(1700000000123);
  return [t] { return system_clock::time_point(milliseconds((*t)++)); };
}

EventLog open_log(const fs::path& path) {
  auto log = EventLog::create(path.string(), ticking_clock());
  INFO(log.error());
  REQUIRE(log.ok());
  return std::move(log).value();
}

}  // namespace

TEST_CASE("rfc3339_utc: UTC with milliseconds", "[run][events]") {
  CHECK(rfc3339_utc(system_clock::time_point(milliseconds(1700000000123))) ==
        "2023-11-14T22:13:20.123Z");
  CHECK(rfc3339_utc(system_clock::time_point(milliseconds(0))) == "1970-01-01T00:00:00.000Z");
  CHECK(rfc3339_utc(system_clock::time_point(milliseconds(951782400005))) ==
        "2000-02-29T00:00:00.005Z");
}

TEST_CASE("EventLog writes kind, time, step, then the fields in name order", "[run][events]") {
  TempDir dir;
  fs::path p = dir / "events.jsonl";
  {
    EventLog log = open_log(p);
    CHECK(log.open({{"version", "0.1.0"}, {"slug", "mnist"}}) == "");
    CHECK(log.step(10, {{"train/loss", 0.5}}) == "");
    CHECK(log.eval(10, "test", {{"test/acc", 0.75}}, 4, 512, 12.5) == "");
    CHECK(log.close(10, "finished", 0, {{"steps", 10}}) == "");
  }
  CHECK(read_file(p) ==
        "{\"kind\":\"open\",\"time\":\"2023-11-14T22:13:20.123Z\",\"slug\":\"mnist\","
        "\"version\":\"0.1.0\"}\n"
        "{\"kind\":\"step\",\"time\":\"2023-11-14T22:13:20.124Z\",\"step\":10,"
        "\"metrics\":{\"train/loss\":0.5}}\n"
        "{\"kind\":\"eval\",\"time\":\"2023-11-14T22:13:20.125Z\",\"step\":10,\"batches\":4,"
        "\"examples\":512,\"metrics\":{\"test/acc\":0.75},\"ms\":12.5,\"name\":\"test\"}\n"
        "{\"kind\":\"close\",\"time\":\"2023-11-14T22:13:20.126Z\",\"step\":10,\"exit_code\":0,"
        "\"state\":\"finished\",\"summary\":{\"steps\":10}}\n");
}

TEST_CASE("EventLog helpers for every kind", "[run][events]") {
  TempDir dir;
  fs::path p = dir / "events.jsonl";
  EventLog log = open_log(p);
  REQUIRE(log.open({{"slug", "s"}}, {{"path", "checkpoints/step-00000500"}, {"step", 500}}) == "");
  REQUIRE(log.stage(500, "long", 1, {{"train", {{"x", {32, 128}}}}}) == "");
  REQUIRE(log.step(510, {{"train/loss", 1.25}}, {{"epoch", 2}}) == "");
  REQUIRE(log.diag(510, "grad-norm", {{"fc/w", 0.5}}) == "");
  REQUIRE(log.checkpoint(520, "checkpoints/step-00000520", 4096, 3.5,
                         {"step-00000500", "step-00000520"}, {"step-00000480"}) == "");
  REQUIRE(log.warning(521, "W-NONFINITE-SKIP", "step 521's loss is nan: skipped") == "");
  REQUIRE(log.annotation(std::nullopt, "lr looked too high", {{"lr", 0.1}}) == "");
  REQUIRE(log.target(530, "val/acc", ">=", 0.85) == "");
  REQUIRE(log.signal(531, "SIGTERM", "checkpoint-and-stop") == "");
  REQUIRE(log.close(531, "failed", 3, {{"steps", 531}},
                    {{"code", "E-DATA"}, {"message", "read failed"}}) == "");
  CHECK(log.append("step", 1, {{"step", 2}}) ==
        p.string() + ": a 'step' event may not set 'step' in its fields");
  CHECK(log.append("step", 1, json::array()) ==
        p.string() + ": the fields of a 'step' event must be an object");
  auto events = read_events(p.string());
  REQUIRE(events.ok());
  REQUIRE(events->size() == 10);
  const auto& e = *events;
  CHECK(e[0]["resumed_from"]["step"] == 500);
  CHECK_FALSE(e[0].contains("step"));
  CHECK(e[1]["stage"] == "long");
  CHECK(e[1]["index"] == 1);
  CHECK(e[2]["epoch"] == 2);
  CHECK(e[3]["values"]["fc/w"] == 0.5);
  CHECK(e[4]["bytes"] == 4096);
  CHECK(e[4]["removed"] == json::array({"step-00000480"}));
  CHECK(e[4]["kept"].size() == 2);
  CHECK(e[5]["code"] == "W-NONFINITE-SKIP");
  CHECK_FALSE(e[6].contains("step"));
  CHECK(e[6]["data"]["lr"] == 0.1);
  CHECK(e[7]["reached"] == true);
  CHECK(e[7]["step"] == 530);
  CHECK(e[8]["action"] == "checkpoint-and-stop");
  CHECK(e[9]["error"]["code"] == "E-DATA");
  for (const json& ev : e) CHECK(ev["time"].get<std::string>().ends_with("Z"));
}

TEST_CASE("EventLog appends on reopen and isolates a line cut short", "[run][events]") {
  TempDir dir;
  fs::path p = dir / "events.jsonl";
  {
    EventLog log = open_log(p);
    REQUIRE(log.step(1, {{"train/loss", 2.0}}) == "");
  }
  // A crash mid-write: half an event, no newline.
  std::string before = read_file(p);
  write_file(p, before + "{\"kind\":\"step\",\"ti");
  {
    auto broken = read_events(p.string());
    REQUIRE(broken.ok());
    CHECK(broken->size() == 1);
  }
  {
    EventLog log = open_log(p);
    REQUIRE(log.open({{"slug", "s"}}, {{"step", 1}}) == "");
    REQUIRE(log.step(2, {{"train/loss", 1.0}}) == "");
  }
  std::string after = read_file(p);
  CHECK(after.starts_with(before + "{\"kind\":\"step\",\"ti\n{\"kind\":\"open\""));
  auto events = read_events(p.string());
  INFO(events.error());
  REQUIRE(events.ok());
  REQUIRE(events->size() == 3);
  CHECK((*events)[1]["kind"] == "open");
  CHECK((*events)[2]["step"] == 2);
  // Damage anywhere else is an error naming the line.
  write_file(p, after + "garbage\n" + "{\"kind\":\"step\"}\n");
  auto bad = read_events(p.string());
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error() == p.string() + ":5: not a JSON object");
}

TEST_CASE("EventLog: two writers' lines never interleave", "[run][events]") {
  TempDir dir;
  fs::path p = dir / "events.jsonl";
  EventLog a = open_log(p), b = open_log(p);
  for (int i = 0; i < 50; ++i) {
    REQUIRE(a.step(i, {{"train/loss", i}}) == "");
    REQUIRE(b.annotation(std::nullopt, std::string(100, 'x')) == "");
  }
  auto events = read_events(p.string());
  REQUIRE(events.ok());
  CHECK(events->size() == 100);
}

TEST_CASE("RunSummary: final, best by the name rule, counts", "[run][summary]") {
  RunSummary s;
  s.observe_all({{"train/loss", 2.0}, {"test/acc", 0.5}, {"note", "text"}}, 10);
  s.observe_all({{"train/loss", 1.0}, {"test/acc", 0.75}}, 20);
  s.observe_all({{"train/loss", 1.5}, {"test/acc", 0.625}}, 30);
  s.observe("train/loss", 1.0, 40);  // a tie keeps the earlier step
  s.observe("grad-norm", NAN, 40);
  s.set_counts(40, 12.5, 0, 1280);
  json j = s.to_json();
  CHECK(j["final"] == json({{"train/loss", 1.0}, {"test/acc", 0.625}, {"grad-norm", nullptr}}));
  CHECK(j["best"] == json({{"train/loss", {{"value", 1.0}, {"step", 20}}},
                           {"test/acc", {{"value", 0.75}, {"step", 20}}}}));
  CHECK(j["steps"] == 40);
  CHECK(j["wall_s"] == 12.5);
  CHECK(j["tokens"] == 0);
  CHECK(j["examples"] == 1280);
  CHECK(j["target"].is_null());
  CHECK(RunSummary::lower_is_better("val/loss"));
  CHECK_FALSE(RunSummary::lower_is_better("loss/scale"));
  CHECK_FALSE(RunSummary::lower_is_better("test/acc"));
}

TEST_CASE("RunSummary survives a resume through JSON", "[run][summary]") {
  RunSummary s;
  s.observe("train/loss", 0.5, 100);
  auto t = Target::make("val/acc", ">=", 0.85);
  REQUIRE(t.ok());
  Target target = *t;
  CHECK_FALSE(target.check("val/acc", 0.80, 100));
  CHECK_FALSE(target.check("train/acc", 0.99, 100));
  CHECK(target.check("val/acc", 0.85, 200));
  CHECK_FALSE(target.check("val/acc", 0.90, 300));  // only the first time
  s.set_target(target);
  s.set_counts(200, 3.0, 4096, 64);
  auto back = RunSummary::from_json(s.to_json());
  REQUIRE(back.ok());
  CHECK(back->to_json() == s.to_json());
  CHECK(s.to_json()["target"] == json({{"metric", "val/acc"},
                                       {"op", ">="},
                                       {"value", 0.85},
                                       {"reached", true},
                                       {"step", 200}}));
  back = RunSummary::from_json({{"best", {{"x", {{"value", "high"}}}}}});
  CHECK_FALSE(back.ok());
}

TEST_CASE("Target ops", "[run][summary]") {
  CHECK(Target::make("m", "!=", 1).error() == "target op '!=' is not one of >= > <= < =");
  struct Case {
    const char* op;
    double reported;
    bool met;
  };
  for (Case c : {Case{">", 1.0, false}, Case{">", 1.5, true}, Case{"<", 1.0, false},
                 Case{"<", 0.5, true}, Case{"<=", 1.0, true}, Case{"=", 1.0, true},
                 Case{"=", 1.0000001, false}, Case{">=", NAN, false}}) {
    Target t = *Target::make("m", c.op, 1.0);
    INFO(c.op << " " << c.reported);
    CHECK(t.check("m", c.reported, 7) == c.met);
  }
}
