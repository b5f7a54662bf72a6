// sexpgpu annotate RUN TEXT [--data JSON]: appends an `annotation` event to
// a run's events.jsonl (running or finished), at the run's latest step.
#include <filesystem>
#include <iostream>

#include "cli/verbs.h"
#include "run/events.h"

namespace sexpgpu::cli {

namespace {

namespace fs = std::filesystem;

// The step of the run's last event that has one, so the note lands where
// the run is (a running run keeps appending after it).
std::optional<int64_t> latest_step(const std::vector<run::json>& events) {
  for (auto it = events.rbegin(); it != events.rend(); ++it)
    if (it->contains("step") && (*it)["step"].is_number_integer())
      return (*it)["step"].get<int64_t>();
  return std::nullopt;
}

}  // namespace

void add_annotate(CLI::App& app, int& exit_code) {
  struct Opts {
    std::string run, text, data;
    bool json = false;
  };
  auto opts = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand("annotate", "append a note to a run's events");
  cmd->add_option("run", opts->run, "the run directory")->required();
  cmd->add_option("text", opts->text, "the note")->required();
  cmd->add_option("--data", opts->data, "a JSON value stored with the note");
  cmd->add_flag("--json", opts->json, "print the annotation event as it was appended");
  cmd->callback([opts, &exit_code]() {
    fs::path events = fs::path(opts->run) / "events.jsonl";
    if (!fs::exists(events)) {
      std::cerr << "sexpgpu annotate: " << opts->run
                << (fs::exists(opts->run) ? " holds no run (no events.jsonl)"
                                          : ": no such run directory")
                << "\n";
      exit_code = kUsage;
      return;
    }
    run::json data = nullptr;
    if (!opts->data.empty()) {
      data = run::json::parse(opts->data, nullptr, false);
      if (data.is_discarded()) {
        std::cerr << "sexpgpu annotate: --data is not JSON: " << opts->data << "\n";
        exit_code = kUsage;
        return;
      }
    }
    ir::Result<std::vector<run::json>> read = run::read_events(events.string());
    if (!read) {
      std::cerr << "sexpgpu annotate: " << read.error() << "\n";
      exit_code = kRunFailed;
      return;
    }
    ir::Result<run::EventLog> opened = run::EventLog::create(events.string());
    if (!opened) {
      std::cerr << "sexpgpu annotate: " << opened.error() << "\n";
      exit_code = kRunFailed;
      return;
    }
    run::EventLog log = std::move(opened).value();
    if (opts->json) log.set_mirror([](const std::string& line) { std::cout << line << "\n"; });
    std::string failed = log.annotation(latest_step(*read), opts->text, data);
    if (!failed.empty()) {
      std::cerr << "sexpgpu annotate: " << failed << "\n";
      exit_code = kRunFailed;
      return;
    }
    exit_code = kOk;
  });
}

}  // namespace sexpgpu::cli
