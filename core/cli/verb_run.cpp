// sexpgpu run FILE [selection] [flags]: compiles the run file and trains it
// with the fixed loop (core/train), in the run directory.
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>

#include "cli/verbs.h"
#include "host/plugin_host.h"
#include "lisp/modules.h"
#include "runfile/compile.h"
#include "runfile/diagnostics.h"
#include "train/trainer.h"

namespace sexpgpu::cli {

namespace fs = std::filesystem;

namespace {

std::string lower(std::string s) {
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string read_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The selection as selection.json and the open event record it.
nlohmann::json selection_json(lisp::Interp& in, const select::Selection& sel,
                              const std::string& slug) {
  nlohmann::json knobs = nlohmann::json::object();
  for (const select::Knob& k : sel.knobs) knobs[lower(k.name->name)] = in.show(k.value);
  nlohmann::json sets = nlohmann::json::object();
  for (const auto& [k, v] : sel.request.sets) sets[k] = v;
  return {{"slug", slug},
          {"variants", sel.request.variants},
          {"sets", sets},
          {"point", sel.request.point},
          {"knobs", knobs}};
}

// E-RUN-EXISTS unless the directory is empty, missing, or the flags say
// what to do; --fresh moves the old run aside as DIR.prev-N.
bool prepare_run_dir(const std::string& dir, bool resume, bool fresh) {
  std::error_code ec;
  if (!fs::exists(dir + "/events.jsonl", ec) || resume) return true;
  if (!fresh) {
    std::cerr << "sexpgpu run: "
              << "E-RUN-EXISTS"
              << " " << dir << " already holds a run\n"
              << "  fix: continue it with --resume latest, or start over with --fresh (the old "
                 "run is moved aside), or choose another --out\n";
    return false;
  }
  for (int n = 1;; ++n) {
    std::string aside = dir + ".prev-" + std::to_string(n);
    if (fs::exists(aside, ec)) continue;
    fs::rename(dir, aside, ec);
    if (ec) {
      std::cerr << "sexpgpu run: E-IO cannot move " << dir << " aside: " << ec.message() << "\n";
      return false;
    }
    std::cerr << "sexpgpu run: the earlier run in " << dir << " is now " << aside << "\n";
    return true;
  }
}

}  // namespace

void add_run(CLI::App& app, int& exit_code) {
  struct Opts {
    std::string file, device, out, resume;
    std::optional<int64_t> steps, seed;
    int threads = 0;
    bool fresh = false, json = false, quiet = false, allow_changed = false;
    bool deterministic = false;
    std::vector<std::string> sinks, diags;
    LimitFlags limits;
  };
  auto opts = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand("run", "train a run file with the fixed training loop");
  cmd->add_option("file", opts->file, "the run file")->required();
  cmd->add_option("--device", opts->device,
                  "cpu, cuda, cuda:N or auto (default: $SEXPGPU_DEVICE, else auto)");
  cmd->add_option("--steps", opts->steps, "train this many steps instead of defrun's");
  cmd->add_option("--seed", opts->seed, "the run's seed instead of defrun's");
  cmd->add_option("--out", opts->out, "the run directory (default $SEXPGPU_RUNS/SLUG, runs/SLUG)");
  cmd->add_option("--resume", opts->resume, "continue from a checkpoint: latest or a path");
  cmd->add_flag("--fresh", opts->fresh, "move an existing run in the run directory aside");
  cmd->add_flag("--json", opts->json, "print the events on standard output, one per line");
  cmd->add_flag("--quiet", opts->quiet, "nothing on standard error but errors");
  cmd->add_flag("--allow-changed", opts->allow_changed,
                "resume although the file, selection or IR changed");
  cmd->add_flag("--deterministic", opts->deterministic,
                "results that repeat bit for bit (the CPU device always does)");
  cmd->add_option("--sink", opts->sinks, "also send events to sink plugin NAME[:ARG]");
  cmd->add_option("--diag", opts->diags, "sample diagnostic NAME");
  cmd->add_option("--threads", opts->threads, "CPU device threads (default: every core)");
  opts->limits.add_to(cmd);
  cmd->callback([opts, &exit_code]() {
    std::unique_ptr<lisp::Session> s = opts->limits.load(opts->file, "run", exit_code, true);
    if (!s) return;
    if (s->sink.error_count() > 0) {
      exit_code = kFileErrors;
      (void)s.release();
      return;
    }
    if (!s->is_run_file || !s->compiled) {
      std::cerr << "sexpgpu run: " << opts->file << " is not a run file (no defrun)\n";
      exit_code = kFileErrors;
      (void)s.release();
      return;
    }
    if (std::string e = runfile::unknown_diagnostics(*s->compiled, opts->diags); !e.empty()) {
      std::cerr << "sexpgpu run: E-RUN-KEY --diag: " << e << "\n";
      exit_code = kUsage;
      return;
    }
    lisp::Interp& in = *s->interp;
    const select::Selection& sel = s->selection();
    std::string slug = sel.slug(in, fs::path(opts->file).stem().string());
    if (opts->steps) slug += ".steps=" + std::to_string(*opts->steps);
    if (opts->seed) slug += ".seed=" + std::to_string(*opts->seed);

    train::RunOptions ro;
    ro.file = opts->file;
    ro.slug = slug;
    const char* runs = std::getenv("SEXPGPU_RUNS");
    ro.run_dir =
        !opts->out.empty() ? opts->out : std::string(runs && *runs ? runs : "runs") + "/" + slug;
    const char* env_device = std::getenv("SEXPGPU_DEVICE");
    ro.device = !opts->device.empty()       ? opts->device
                : env_device && *env_device ? env_device
                                            : s->compiled->run.device;
    ro.threads = opts->threads;
    ro.deterministic = opts->deterministic;
    ro.steps = opts->steps;
    ro.seed = opts->seed;
    ro.resume = opts->resume;
    ro.allow_changed = opts->allow_changed;
    ro.json = opts->json;
    ro.quiet = opts->quiet;
    ro.sinks = opts->sinks;
    ro.diags = opts->diags;
    ro.selection = selection_json(in, sel, slug);
    ro.file_text = read_text(opts->file);
    // The user's own modules go with the run; standard ones are the binary's.
    std::set<std::string> standard;
    for (uint32_t f : in.library_files) standard.insert(in.sources.file(f).path);
    for (const auto& m : in.modules)
      if (!m->path.empty() && !standard.count(m->path))
        ro.modules.push_back({m->path, read_text(m->path)});
    ro.argv = command_line();
    if (!prepare_run_dir(ro.run_dir, !opts->resume.empty(), opts->fresh)) {
      exit_code = kUsage;
      return;
    }
    host::PluginHost plugins(host::default_search_path());
    exit_code = train::train(*s->compiled, runfile::loaders_of(in), ro, plugins);
    (void)s.release();  // the process ends next
  });
}

}  // namespace sexpgpu::cli
