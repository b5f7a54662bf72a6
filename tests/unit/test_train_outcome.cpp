// train::train's outcome (trainer.h): how a run ended comes back as a
// RunOutcome, the exit code recorded in the close event is the caller's
// mapping of it, and the loop prints no error line of its own.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "catch.hpp"
#include "host/plugin_host.h"
#include "runfile/compile.h"
#include "runfile/session.h"
#include "train/trainer.h"

namespace {

using namespace sexpgpu;
namespace fs = std::filesystem;

const std::string kSmallest = R"(
(require "sexpgpu/nn")
(require "sexpgpu/optim")
(defloader train :source (synthetic :regression :features 4 :examples 64 :seed 1) :batch 8)
(defmodel net (x) (nn:linear x 1 :name "fc"))
(defun objective (batch ctx) (mse (net (getf batch :x)) (getf batch :y)))
(defun optimizer () (optim:sgd :lr 0.1))
(defrun :steps 3)
)";

// The same run with a loss that overflows f32 at the first step.
std::string nonfinite_file() {
  std::string text = kSmallest;
  const std::string mse = "(mse (net (getf batch :x)) (getf batch :y))";
  text.replace(text.find(mse), mse.size(), "(* " + mse + " 1e39)");
  return text;
}

struct Trained {
  train::RunOutcome outcome;
  std::string errors;       // what the loop wrote on standard error
  std::vector<int> mapped;  // the exit codes the loop asked the caller for
  fs::path run_dir;
};

// Compiles `text` and trains it quietly into a fresh run directory, with
// exit_code_of giving 40 + the outcome's RunEnd (no code cli.md uses).
Trained train_quietly(const std::string& text, const std::string& tag,
                      const std::vector<std::string>& sinks = {}) {
  runfile::Session s;
  s.load_source("/train-outcome/" + tag + ".lisp", text);
  s.compile();
  REQUIRE(s.compiled);
  Trained t;
  t.run_dir = fs::temp_directory_path() /
              ("sexpgpu-train-outcome-" + tag + "-" + std::to_string(::getpid()));
  fs::remove_all(t.run_dir);
  train::RunOptions ro;
  ro.file = tag + ".lisp";
  ro.run_dir = t.run_dir.string();
  ro.slug = tag;
  ro.device = "cpu";
  ro.threads = 1;
  ro.quiet = true;
  ro.sinks = sinks;
  ro.file_text = text;
  ro.exit_code_of = [&](const train::RunOutcome& o) {
    t.mapped.push_back(40 + int(o.end));
    return t.mapped.back();
  };
  host::PluginHost plugins(std::vector<host::SearchDir>{{SEXPGPU_BUILD_PLUGIN_DIR, "build tree"}});
  std::ostringstream captured;
  std::streambuf* saved = std::cerr.rdbuf(captured.rdbuf());
  t.outcome = train::train(*s.compiled, ro, plugins);
  std::cerr.rdbuf(saved);
  t.errors = captured.str();
  return t;
}

std::string last_line(const fs::path& p) {
  std::ifstream f(p);
  std::string line, last;
  while (std::getline(f, line))
    if (!line.empty()) last = line;
  return last;
}

}  // namespace

TEST_CASE("a finished run's outcome carries its closing numbers", "[train]") {
  Trained t = train_quietly(kSmallest, "finished");
  CHECK(t.outcome.end == train::RunEnd::Finished);
  CHECK(t.outcome.state == "finished");
  CHECK_FALSE(t.outcome.error);
  CHECK(t.outcome.step == 3);
  CHECK(t.outcome.steps == 3);
  REQUIRE(t.outcome.final_values.size() == 1);
  CHECK(t.outcome.final_values[0].first == "train/loss");
  CHECK_FALSE(t.outcome.resume_command);
  CHECK(t.errors.empty());
  // The close event records the caller's code for the outcome.
  REQUIRE(t.mapped == std::vector<int>{40});
  nlohmann::json close = nlohmann::json::parse(last_line(t.run_dir / "events.jsonl"));
  CHECK(close["kind"] == "close");
  CHECK(close["exit_code"] == 40);
  fs::remove_all(t.run_dir);
}

TEST_CASE("a non-finite step ends the run with its error, which the loop does not print",
          "[train]") {
  Trained t = train_quietly(nonfinite_file(), "nonfinite");
  CHECK(t.outcome.end == train::RunEnd::NonFinite);
  CHECK(t.outcome.state == "nonfinite");
  REQUIRE(t.outcome.error);
  CHECK(t.outcome.error->code == "E-NONFINITE");
  CHECK(t.outcome.error->message.find("loss is not finite") != std::string::npos);
  CHECK(t.errors.empty());
  nlohmann::json close = nlohmann::json::parse(last_line(t.run_dir / "events.jsonl"));
  CHECK(close["state"] == "nonfinite");
  CHECK(close["exit_code"] == 40 + int(train::RunEnd::NonFinite));
  CHECK(close["error"]["code"] == "E-NONFINITE");
  fs::remove_all(t.run_dir);
}

TEST_CASE("a run refused before it starts writes nothing and prints nothing", "[train]") {
  Trained t = train_quietly(kSmallest, "refused", {"no-such-sink"});
  CHECK(t.outcome.end == train::RunEnd::Refused);
  CHECK(t.outcome.state == "failed");
  REQUIRE(t.outcome.error);
  CHECK(t.outcome.error->code == "E-IO");
  CHECK(t.outcome.error->message.find("no sink plugin named 'no-such-sink'") != std::string::npos);
  CHECK(t.errors.empty());
  CHECK(t.mapped.empty());  // no close event was written, so no code was needed
  CHECK_FALSE(fs::exists(t.run_dir));
}
