// core/report: a run's events read into series and a timeline (a resume
// going back, non-finite values, diagnostics), sweep directories, the
// order of charts, and the page's escaping: no text of a run can close the
// page's script elements or become markup.
#include <filesystem>
#include <fstream>

#include "catch.hpp"
#include "report/page.h"
#include "report/run_data.h"

using namespace sexpgpu;
using namespace sexpgpu::report;
using nlohmann::json;

namespace {

json ev(const std::string& text) {
  return json::parse(text);
}

std::vector<json> sample_events() {
  return {
      ev(R"({"kind":"open","time":"2026-11-30T03:02:09.000Z","slug":"blobs","host":"vm","command":["sexpgpu","run"]})"),
      ev(R"({"kind":"step","time":"2026-11-30T03:02:09.500Z","step":1,"metrics":{"train/loss":1.5,"lr/default":0.0,"epoch":0}})"),
      ev(R"({"kind":"step","time":"2026-11-30T03:02:10.000Z","step":10,"metrics":{"train/loss":null,"lr/default":0.01,"epoch":0}})"),
      ev(R"({"kind":"eval","time":"2026-11-30T03:02:10.250Z","step":10,"name":"held-out","metrics":{"held-out/acc":0.9}})"),
      ev(R"({"kind":"diag","time":"2026-11-30T03:02:10.300Z","step":10,"name":"grad-norm","values":{"global":0.8,"h":{"rms":0.1,"histogram":{"counts":[1,2]}}}})"),
      ev(R"({"kind":"checkpoint","time":"2026-11-30T03:02:10.400Z","step":10,"path":"runs/blobs/checkpoints/step-00000010"})"),
      ev(R"({"kind":"step","time":"2026-11-30T03:02:11.000Z","step":20,"metrics":{"train/loss":0.5,"lr/default":0.01,"epoch":1}})"),
      ev(R"({"kind":"open","time":"2026-11-30T04:00:00.000Z","slug":"blobs","resumed_from":{"step":10,"checkpoint":"step-00000010"}})"),
      ev(R"({"kind":"annotation","time":"2026-11-30T04:00:00.100Z","step":10,"text":"</script><script>alert(1)</script>","data":null})"),
      ev(R"({"kind":"step","time":"2026-11-30T04:00:01.000Z","step":20,"metrics":{"train/loss":0.4,"lr/default":0.01,"epoch":1}})"),
      ev(R"({"kind":"close","time":"2026-11-30T04:00:02.000Z","step":20,"state":"finished","exit_code":0,"summary":{}})"),
  };
}

struct TempDir {
  std::filesystem::path path;
  TempDir() {
    char tmpl[] = "/tmp/sexpgpu-report-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
};

void write(const std::filesystem::path& p, const std::string& text) {
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

}  // namespace

TEST_CASE("parse_time reads the events' RFC 3339 times", "[report]") {
  REQUIRE(parse_time("2023-11-14T22:13:20.123Z"));
  CHECK(*parse_time("2023-11-14T22:13:20.123Z") == Approx(1700000000.123).epsilon(1e-12));
  CHECK(*parse_time("1970-01-01T00:00:00Z") == 0);
  CHECK_FALSE(parse_time("yesterday"));
  CHECK_FALSE(parse_time("2023-11-14T22:13:20.123+01:00"));
}

TEST_CASE("a run's events become series, a timeline and its state", "[report]") {
  RunData run = run_from_events(sample_events(), "runs/blobs");
  CHECK(run.label == "blobs");
  CHECK(run.state == "finished");
  CHECK(run.opens.size() == 2);
  CHECK(run.events == 11);

  // The resume went back to step 10: the first session's step 20 is gone,
  // the second's kept; a null value stays as a gap.
  const Series& loss = run.series.at("train/loss");
  CHECK(loss.source == "step");
  REQUIRE(loss.points.size() == 3);
  CHECK(loss.points[0].step == 1);
  CHECK(*loss.points[0].value == 1.5);
  CHECK(loss.points[0].wall_s == Approx(0.5));
  CHECK_FALSE(loss.points[1].value);
  CHECK(loss.points[2].step == 20);
  CHECK(*loss.points[2].value == 0.4);
  CHECK(loss.points[2].wall_s == Approx(3472.0));

  CHECK(run.series.at("held-out/acc").source == "eval");
  CHECK(run.series.at("diag/grad-norm/global").points.size() == 1);
  CHECK(run.series.count("diag/grad-norm/h/rms") == 1);
  for (const auto& [name, s] : run.series) CHECK(name.find("histogram") == std::string::npos);

  std::vector<std::string> kinds;
  for (const Moment& m : run.timeline) kinds.push_back(m.kind);
  CHECK(kinds == std::vector<std::string>{"start", "checkpoint", "resume", "annotation", "close"});
  CHECK(run.timeline[2].text == "resumed from step 10 (step-00000010)");
  CHECK(run.timeline[3].text == "</script><script>alert(1)</script>");
  CHECK(run.timeline[4].text == "finished, exit 0");
}

TEST_CASE("a run without a close is running; its label falls back to the directory", "[report]") {
  std::vector<json> events = {ev(R"({"kind":"open","time":"2026-11-30T03:02:09.000Z"})")};
  RunData run = run_from_events(events, "runs/some-run/");
  CHECK(run.state == "running");
  CHECK(run.label == "some-run");
}

TEST_CASE("series come in the page's order", "[report]") {
  Report r;
  r.runs.push_back(run_from_events(sample_events(), "a"));
  std::vector<std::string> order = series_order(r);
  CHECK(order == std::vector<std::string>{"train/loss", "held-out/acc", "lr/default", "epoch",
                                          "diag/grad-norm/global", "diag/grad-norm/h/rms"});
}

TEST_CASE("labels are unique among a report's runs", "[report]") {
  Report r;
  for (int i = 0; i < 3; ++i) r.runs.push_back(run_from_events(sample_events(), "a"));
  make_labels_unique(r);
  CHECK(r.runs[0].label == "blobs");
  CHECK(r.runs[1].label == "blobs (2)");
  CHECK(r.runs[2].label == "blobs (3)");
}

TEST_CASE("add_directory reads a run, a sweep's points, and refuses the rest", "[report]") {
  TempDir tmp;
  std::string events =
      R"({"kind":"open","time":"2026-11-30T03:02:09.000Z","slug":"p"})"
      "\n"
      R"({"kind":"step","time":"2026-11-30T03:02:09.100Z","step":1,"metrics":{"train/loss":1.0}})"
      "\n";
  write(tmp.path / "sw" / "scan.lr=1" / "events.jsonl", events + R"({"kind":"step","ti)");
  write(tmp.path / "sw" / "sweep.json",
        R"({"sweep":"s","points":[{"index":0,"slug":"scan.lr=1"},{"index":1,"slug":"not-run"},)"
        R"({"index":2,"slug":"../escape"}]})");
  Report r;
  bool usage = true;
  REQUIRE(add_directory(r, (tmp.path / "sw").string(), &usage));
  CHECK_FALSE(usage);
  REQUIRE(r.runs.size() == 1);  // the point not run yet is in the table only
  CHECK(r.runs[0].series.at("train/loss").points.size() == 1);  // the cut line skipped
  REQUIRE(r.sweeps.size() == 1);
  CHECK(r.sweeps[0].runs == std::vector<size_t>{0});

  Status missing = add_directory(r, (tmp.path / "nope").string(), &usage);
  CHECK_FALSE(missing);
  CHECK(usage);
  CHECK(missing.error().find("no such run directory") != std::string::npos);
  std::filesystem::create_directories(tmp.path / "empty");
  CHECK_FALSE(add_directory(r, (tmp.path / "empty").string(), &usage));
  CHECK(usage);
  write(tmp.path / "bad" / "sweep.json", "{not json");
  CHECK_FALSE(add_directory(r, (tmp.path / "bad").string(), &usage));
  CHECK_FALSE(usage);
}

TEST_CASE("nothing of a run can close the page's elements", "[report]") {
  CHECK(script_safe("a = '</script>'; b = '</SCRIPT '; // <!-- x") ==
        "a = '<\\/script>'; b = '<\\/SCRIPT '; // <\\!-- x");
  CHECK(json_for_script(json{{"t", "</script><b>&"}}) ==
        R"({"t":"\u003c/script\u003e\u003cb\u003e\u0026"})");
  CHECK(html_escape(R"(<a href="x">'&')") == "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;");
  // Text that is not UTF-8 is replaced, not a crash.
  CHECK(json_for_script(json{{"t", std::string("\xff\xfe")}}).find("\xEF\xBF\xBD") !=
        std::string::npos);

  Report r;
  r.runs.push_back(run_from_events(sample_events(), "a"));
  ChartLibrary lib{"/x/dygraph.min.js", "var Dygraph = function () {};", ".dygraph-legend {}"};
  std::string page = render_page(page_data(r, series_order(r), "<title>", "0.1.0", "now"), lib);
  CHECK(page.find("alert(1)</script>") == std::string::npos);
  CHECK(page.find("<title>&lt;title&gt;</title>") != std::string::npos);
  size_t scripts = 0;
  for (size_t at = page.find("<script"); at != std::string::npos; at = page.find("<script", at + 1))
    ++scripts;
  CHECK(scripts == 3);
  CHECK(page.find("default-src 'none'") != std::string::npos);
}

TEST_CASE("a missing charting library names the package", "[report]") {
  Result<ChartLibrary> lib = load_dygraphs("/nonexistent/dygraph.min.js");
  REQUIRE_FALSE(lib);
  CHECK(lib.error().find("libjs-dygraphs") != std::string::npos);
  CHECK(lib.error().find("/nonexistent/dygraph.min.js") != std::string::npos);
}
