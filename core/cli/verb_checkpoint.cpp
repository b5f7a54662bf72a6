// sexpgpu checkpoint list RUN | show CKPT | verify CKPT|RUN | export CKPT -o FILE:
// what a run's checkpoints hold (docs/checkpoints.md). Exit codes: 0 ok, 1 a
// checkpoint is corrupt, 2 bad usage or nothing there, 3 an I/O failure.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/verbs.h"
#include "run/checkpoint.h"
#include "run/events.h"
#include "run/tensor_stats.h"

namespace sexpgpu::cli {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
constexpr int kCorrupt = kFileErrors, kIoFailure = kRunFailed;

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string human_bytes(uint64_t n) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(n);
  int u = 0;
  while (v >= 1024 && u < 4) v /= 1024, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f %s", v, units[u]);
  return u == 0 ? std::to_string(n) + " B" : std::string(buf);
}

std::string pad(std::string s, size_t width) {
  if (s.size() < width) s.append(width - s.size(), ' ');
  return s;
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

// The checkpoints directory of what was typed: RUN/checkpoints, or itself.
std::string checkpoints_dir_of(const std::string& arg) {
  fs::path p(arg);
  std::error_code ec;
  return fs::is_directory(p / "checkpoints", ec) ? (p / "checkpoints").string() : p.string();
}

bool is_checkpoint_dir(const std::string& path) {
  std::error_code ec;
  return fs::exists(fs::path(path) / run::kChecksumsFile, ec) ||
         fs::exists(fs::path(path) / run::kModelFile, ec);
}

json read_json_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return in ? json::parse(in, nullptr, false) : json();
}

// When a checkpoint was written: state.json's "time" if the loop put one
// there, else when checksums.json (the last file written) was.
std::string written_time(const fs::path& dir, const json& state) {
  if (state.is_object() && state.contains("time") && state["time"].is_string())
    return state["time"].get<std::string>();
  struct stat st {};
  if (::stat((dir / run::kChecksumsFile).c_str(), &st) != 0) return "";
  return run::rfc3339_utc(std::chrono::system_clock::time_point(
      std::chrono::seconds(st.st_mtim.tv_sec) +
      std::chrono::milliseconds(st.st_mtim.tv_nsec / 1000000)));
}

std::string metrics_text(const json& metrics) {
  std::string out;
  if (!metrics.is_object()) return out;
  for (const auto& [k, v] : metrics.items())
    out +=
        (out.empty() ? "" : "  ") + k + " " + (v.is_number() ? number(v.get<double>()) : v.dump());
  return out;
}

int list_verb(const std::string& run_dir, bool as_json) {
  std::error_code ec;
  if (!fs::is_directory(run_dir, ec)) {
    std::cerr << "sexpgpu checkpoint list: " << run_dir << ": no such directory\n";
    return kUsage;
  }
  std::string dir = checkpoints_dir_of(run_dir);
  auto all = run::list_checkpoints(dir);
  if (!all) {
    std::cerr << "sexpgpu checkpoint list: " << all.error() << "\n";
    return kIoFailure;
  }
  json out = {{"checkpoints", json::array()}, {"latest", nullptr}};
  for (const run::CheckpointInfo& c : *all) {
    json state = read_json_file(fs::path(c.path) / run::kStateFile);
    json metrics = state.is_object() && state.contains("metrics") ? state["metrics"] : json();
    out["checkpoints"].push_back({{"step", c.step},
                                  {"name", c.name},
                                  {"path", c.path},
                                  {"bytes", c.bytes},
                                  {"time", written_time(c.path, state)},
                                  {"latest", c.latest},
                                  {"metrics", metrics}});
    if (c.latest) out["latest"] = c.name;
  }
  if (as_json) {
    std::cout << out.dump(2) << "\n";
    return kOk;
  }
  if (all->empty()) {
    std::cerr << "no checkpoints in " << dir << "\n";
    return kOk;
  }
  std::cout << "  " << pad("step", 10) << pad("bytes", 12) << pad("written", 26) << "metrics\n";
  for (const json& c : out["checkpoints"])
    std::cout << (c["latest"].get<bool>() ? "* " : "  ")
              << pad(std::to_string(c["step"].get<int64_t>()), 10)
              << pad(human_bytes(c["bytes"].get<uint64_t>()), 12)
              << pad(c["time"].get<std::string>(), 26) << metrics_text(c["metrics"]) << "\n";
  std::cout << "(* latest: " << out["latest"].get<std::string>() << ")\n";
  return kOk;
}

json tensor_table(const run::SafetensorsFile& f) {
  json rows = json::array();
  for (const run::TensorEntry& t : f.tensors()) {
    run::TensorStats s = run::tensor_stats(t.dtype, t.data);
    rows.push_back({{"name", t.name},
                    {"dtype", std::string(ir::ir_name(t.dtype))},
                    {"shape", t.shape},
                    {"elements", s.count},
                    {"bytes", t.data.size()},
                    {"min", s.min},
                    {"max", s.max},
                    {"mean", s.mean},
                    {"rms", s.rms},
                    {"nonfinite", s.nonfinite}});
  }
  return rows;
}

void print_tensors(const std::string& file, const json& rows) {
  uint64_t bytes = 0;
  int64_t elements = 0;
  size_t name_w = 6;
  for (const json& r : rows) {
    bytes += r["bytes"].get<uint64_t>();
    elements += r["elements"].get<int64_t>();
    name_w = std::max(name_w, r["name"].get<std::string>().size() + 2);
  }
  std::cout << file << ": " << rows.size() << " tensors, " << elements << " elements, "
            << human_bytes(bytes) << "\n";
  if (rows.empty()) return;
  std::cout << "  " << pad("name", name_w) << pad("dtype", 7) << pad("shape", 14) << pad("min", 13)
            << pad("max", 13) << pad("mean", 13) << "rms\n";
  for (const json& r : rows) {
    std::cout << "  " << pad(r["name"].get<std::string>(), name_w)
              << pad(r["dtype"].get<std::string>(), 7)
              << pad(shape_text(r["shape"].get<std::vector<int64_t>>()), 14)
              << pad(number(r["min"].get<double>()), 13) << pad(number(r["max"].get<double>()), 13)
              << pad(number(r["mean"].get<double>()), 13) << number(r["rms"].get<double>());
    if (r["nonfinite"].get<int64_t>() > 0) std::cout << "  (" << r["nonfinite"] << " non-finite)";
    std::cout << "\n";
  }
}

// One line per top-level key of state.json: scalars as they are, bigger
// values by their size.
void print_state(const json& state) {
  std::cout << "state.json:\n";
  for (const auto& [k, v] : state.items()) {
    std::string many = v.size() == 1 ? "" : "s";
    std::string text = v.is_object()  ? "{" + std::to_string(v.size()) + " key" + many + "}"
                       : v.is_array() ? "[" + std::to_string(v.size()) + " item" + many + "]"
                                      : v.dump();
    if (text.size() > 60) text = text.substr(0, 57) + "...";
    std::cout << "  " << pad(k, 16) << text << "\n";
  }
}

int show_verb(const std::string& arg, bool as_json) {
  auto dir = run::resolve_checkpoint(arg);
  if (!dir) {
    std::cerr << "sexpgpu checkpoint show: " << dir.error() << "\n";
    return kUsage;
  }
  auto c = run::load_checkpoint(*dir);
  if (!c) {
    std::cerr << "sexpgpu checkpoint show: " << c.error() << "\n";
    return kCorrupt;
  }
  json out = {{"path", c->path},
              {"step", c->step},
              {"model", tensor_table(*c->model)},
              {"optimizer", tensor_table(*c->optimizer)},
              {"state", c->state}};
  if (as_json) {
    std::cout << out.dump(2) << "\n";
    return kOk;
  }
  std::cout << "checkpoint " << c->path << " (step " << c->step << ")\n\n";
  print_tensors(run::kModelFile, out["model"]);
  std::cout << "\n";
  print_tensors(run::kOptimizerFile, out["optimizer"]);
  std::cout << "\n";
  print_state(c->state);
  return kOk;
}

json verify_one(const std::string& path) {
  std::vector<std::string> problems = run::verify_checkpoint(path);
  return {{"path", path}, {"ok", problems.empty()}, {"problems", problems}};
}

int verify_verb(const std::string& arg, bool as_json) {
  std::error_code ec;
  if (!fs::exists(arg, ec)) {
    std::cerr << "sexpgpu checkpoint verify: " << arg << ": no such file or directory\n";
    return kUsage;
  }
  json out = {{"checkpoints", json::array()}, {"problems", json::array()}};
  if (is_checkpoint_dir(arg)) {
    out["checkpoints"].push_back(verify_one(arg));
  } else {
    std::string dir = checkpoints_dir_of(arg);
    auto all = run::list_checkpoints(dir);
    if (!all) {
      std::cerr << "sexpgpu checkpoint verify: " << all.error() << "\n";
      return kIoFailure;
    }
    for (const run::CheckpointInfo& c : *all) out["checkpoints"].push_back(verify_one(c.path));
    fs::path link = fs::path(dir) / run::kLatestLink;
    if (fs::is_symlink(link, ec) && !fs::is_directory(link, ec))
      out["problems"].push_back(link.string() + " -> " + fs::read_symlink(link, ec).string() +
                                ", which is not there");
  }
  bool ok = out["problems"].empty();
  for (const json& c : out["checkpoints"]) ok = ok && c["ok"].get<bool>();
  out["ok"] = ok;
  if (as_json) {
    std::cout << out.dump(2) << "\n";
  } else {
    for (const json& c : out["checkpoints"]) {
      std::cout << (c["ok"].get<bool>() ? "ok       " : "CORRUPT  ") << c["path"].get<std::string>()
                << "\n";
      for (const json& p : c["problems"]) std::cout << "  " << p.get<std::string>() << "\n";
    }
    for (const json& p : out["problems"]) std::cout << "CORRUPT  " << p.get<std::string>() << "\n";
    if (out["checkpoints"].empty()) std::cerr << "no checkpoints in " << arg << "\n";
  }
  return ok ? kOk : kCorrupt;
}

int export_verb(const std::string& arg, const std::string& output, const std::string& format,
                bool as_json) {
  if (format != "safetensors") {
    std::cerr << "sexpgpu checkpoint export: --format " << format
              << " is not supported (the one format is safetensors)\n";
    return kUsage;
  }
  auto dir = run::resolve_checkpoint(arg);
  if (!dir) {
    std::cerr << "sexpgpu checkpoint export: " << dir.error() << "\n";
    return kUsage;
  }
  std::vector<std::string> problems = run::verify_checkpoint(*dir);
  auto c = problems.empty() ? run::load_checkpoint(*dir)
                            : ir::Result<run::Checkpoint>::failure(problems.front());
  if (!c) {
    std::cerr << "sexpgpu checkpoint export: refusing a corrupt checkpoint: " << c.error() << "\n";
    return kCorrupt;
  }
  std::vector<run::TensorView> views;
  for (const run::TensorEntry& t : c->model->tensors())
    views.push_back({t.name, t.dtype, t.shape, t.data});
  std::string tmp = output + ".tmp." + std::to_string(::getpid());
  auto written = run::write_safetensors(tmp, views, c->model->metadata());
  if (!written || std::rename(tmp.c_str(), output.c_str()) != 0) {
    std::cerr << "sexpgpu checkpoint export: "
              << (written ? output + ": cannot rename into place" : written.error()) << "\n";
    std::remove(tmp.c_str());
    return kIoFailure;
  }
  json out = {{"path", output},
              {"from", c->path},
              {"step", c->step},
              {"tensors", views.size()},
              {"bytes", *written}};
  if (as_json)
    std::cout << out.dump(2) << "\n";
  else
    std::cout << "wrote " << output << ": " << views.size() << " tensors, " << human_bytes(*written)
              << ", the parameters of step " << c->step << "\n";
  return kOk;
}

}  // namespace

void add_checkpoint(CLI::App& app, int& exit_code) {
  struct Opts {
    std::string target, output, format = "safetensors";
    bool json = false;
  };
  auto opts = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand("checkpoint", "what a run's checkpoints hold");
  cmd->require_subcommand(1);
  auto add = [&](const char* name, const char* help, const char* what) {
    CLI::App* sub = cmd->add_subcommand(name, help);
    sub->add_option("target", opts->target, what)->required();
    sub->add_flag("--json", opts->json, "one JSON document on standard output");
    return sub;
  };
  add("list", "the checkpoints of a run: step, bytes, when, metrics, latest", "the run directory")
      ->callback([opts, &exit_code] { exit_code = list_verb(opts->target, opts->json); });
  add("show", "a checkpoint's tensors (dtype, shape, stats) and state.json",
      "a checkpoint directory, or a run (its latest)")
      ->callback([opts, &exit_code] { exit_code = show_verb(opts->target, opts->json); });
  add("verify", "re-read every file and tensor against its checksum (exit 1 if corrupt)",
      "a checkpoint directory, or a run (all its checkpoints)")
      ->callback([opts, &exit_code] { exit_code = verify_verb(opts->target, opts->json); });
  CLI::App* exp = add("export", "the parameters as one standard safetensors file",
                      "a checkpoint directory, or a run (its latest)");
  exp->add_option("-o,--output", opts->output, "the file to write")->required();
  exp->add_option("--format", opts->format, "safetensors (the one format)");
  exp->callback([opts, &exit_code] {
    exit_code = export_verb(opts->target, opts->output, opts->format, opts->json);
  });
}

}  // namespace sexpgpu::cli
