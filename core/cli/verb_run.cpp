// sexpgpu run FILE [selection] [flags]: compiles the run file and trains it
// with the fixed loop (core/train), in the run directory.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <set>
#include <sstream>

#include "bundle/verify.h"
#include "cli/bundle_run.h"
#include "cli/run_ranks.h"
#include "cli/settings.h"
#include "cli/verbs.h"
#include "dist/world.h"
#include "host/plugin_host.h"
#include "lisp/modules.h"
#include "run/events.h"
#include "runfile/compile.h"
#include "runfile/diagnostics.h"
#include "train/trainer.h"

#ifndef SEXPGPU_VERSION
#define SEXPGPU_VERSION "0.0.0"
#endif

namespace sexpgpu::cli {

namespace fs = std::filesystem;

// --threads: the CPU device's threads; 0 is every core.
constexpr int64_t kMaxThreads = 4096;
// --ranks: processes on one machine.
constexpr int64_t kMaxLocalRanks = 1024;

namespace {

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

// cli.md's exit code for how a run ended: a checkpoint another run wrote
// is the file's error (1), every other failure the run's (3).
int exit_code_of(const train::RunOutcome& o) {
  switch (o.end) {
    case train::RunEnd::Finished: return kOk;
    case train::RunEnd::Refused:
      // The rank variables, found wrong when the ranks meet: a usage error.
      if (o.error && o.error->code == "E-WORLD") return kUsage;
      [[fallthrough]];
    case train::RunEnd::Failed:
      return o.error && o.error->code == "E-RESUME-MISMATCH" ? kFileErrors : kRunFailed;
    case train::RunEnd::NonFinite: return kNonfinite;
    case train::RunEnd::Stopped:
    case train::RunEnd::Preempted: return kResumable;
    case train::RunEnd::Interrupted: return kInterrupted;
  }
  return kRunFailed;
}

// A failure's message and, when it has one, its fix line.
std::string with_fix(const Diagnostic& d) {
  return d.fix.empty() ? d.message : d.message + "\n  fix: " + d.fix;
}

// A run's closing lines (not under --json): its state, the final value of
// each metric with a best, the target, where its directory is, and how to
// resume it.
void print_outcome(const train::RunOutcome& o, const train::RunOptions& ro) {
  char head[160];
  std::snprintf(head, sizeof head, "%.1f s (%.2f ms/step)", o.wall_s,
                o.step ? 1000.0 * o.wall_s / double(o.step) : 0.0);
  std::cout << "run " << ro.slug << ": " << o.state << " at step " << o.step << "/" << o.steps
            << " in " << head << "\n";
  for (const auto& [k, v] : o.final_values) std::cout << "  " << k << " " << v << "\n";
  if (o.target)
    std::cout << "  target " << o.target->metric << " " << o.target->op << " " << o.target->value
              << ": "
              << (o.target->reached ? "reached at step " + std::to_string(*o.target->step)
                                    : "not reached")
              << "\n";
  std::cout << "  run directory " << ro.run_dir << "\n";
  if (o.resume_command) std::cout << "  resume with: " << *o.resume_command << "\n";
}

// Whether events.jsonl records a run that started: an `open` event. A run
// refused while it was being set up (compiling for the device, allocating)
// wrote no open; its directory holds nothing to keep, unless that run is
// still setting up (status.json names a live process of this host).
bool run_started(const std::string& dir) {
  ir::Result<std::vector<nlohmann::json>> events = run::read_events(dir + "/events.jsonl");
  if (!events) return true;  // unreadable: keep it, and let E-RUN-EXISTS say so
  for (const nlohmann::json& e : *events)
    if (e.value("kind", "") == "open") return true;
  nlohmann::json status = nlohmann::json::parse(read_text(dir + "/status.json"), nullptr, false);
  if (status.is_object() && status.value("exit_code", nlohmann::json(nullptr)).is_null()) {
    if (live_process_here(status.value("pid", int64_t(0)), status.value("host", ""))) return true;
  }
  return false;
}

// E-RUN-EXISTS unless the directory is empty, missing, holds a run that
// never started (its files are removed), or the flags say what to do;
// --fresh moves the old run aside as DIR.prev-N. "" when the run may go
// ahead, else the refusal's message (fix included); `code` the exit code.
std::string prepare_run_dir(const std::string& dir, bool resume, bool fresh, int& code) {
  std::error_code ec;
  code = kUsage;
  if (!fs::exists(dir + "/events.jsonl", ec) || resume) return "";
  if (!run_started(dir)) {
    for (const char* name : {"events.jsonl", "status.json"}) fs::remove(dir + "/" + name, ec);
    if (!quiet())
      std::cerr << "sexpgpu run: " << dir << " held a run that never started; starting afresh\n";
    return "";
  }
  if (!fresh)
    return std::string("E-RUN-EXISTS") + " " + dir +
           " already holds a run\n  fix: continue it with --resume latest, or start over with "
           "--fresh (the old run is moved aside), or choose another --out";
  for (int n = 1;; ++n) {
    std::string aside = dir + ".prev-" + std::to_string(n);
    if (fs::exists(aside, ec)) continue;
    fs::rename(dir, aside, ec);
    if (ec) {
      code = kRunFailed;
      return "E-IO cannot move " + dir + " aside: " + ec.message();
    }
    if (!quiet())
      std::cerr << "sexpgpu run: the earlier run in " << dir << " is now " << aside << "\n";
    return "";
  }
}

// The GPUs of --device cuda:0,1,...: one rank each (run_ranks.h); empty
// for any other device.
std::vector<int> device_list(const std::string& spec) {
  std::vector<int> out;
  if (spec.rfind("cuda:", 0) != 0 || spec.find(',') == spec.npos) return out;
  std::string_view rest = std::string_view(spec).substr(5);
  while (true) {
    size_t comma = rest.find(',');
    std::optional<int> n = train::device_ordinal("cuda:" + std::string(rest.substr(0, comma)));
    if (!n) return {};
    out.push_back(*n);
    if (comma == rest.npos) break;
    rest.remove_prefix(comma + 1);
  }
  return out;
}

// A --device value: cpu, auto, or a plugin's name with an optional :N, or a
// list of GPUs cuda:0,1,... (each once).
std::string device_problem(const std::string& spec) {
  if (spec.empty() || spec == "auto" || spec == "cpu") return "";
  if (spec.find(',') != spec.npos) {
    std::vector<int> gpus = device_list(spec);
    if (gpus.empty())
      return "'" + spec + "' is not a list of GPUs: cuda:N,M,... (each N from 0 to " +
             std::to_string(train::kMaxOrdinal) + ")";
    std::set<int> seen(gpus.begin(), gpus.end());
    if (seen.size() != gpus.size()) return "'" + spec + "' names a GPU twice";
    return "";
  }
  size_t colon = spec.find(':');
  std::string name = spec.substr(0, colon);
  if (name.empty() || name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_-") != name.npos)
    return "'" + spec + "' is not a device: cpu, cuda, cuda:N (N from 0 to " +
           std::to_string(train::kMaxOrdinal) + ") or auto";
  if (colon != std::string::npos && !train::device_ordinal(spec))
    return "'" + spec + "': the ordinal after ':' takes 0 to " + std::to_string(train::kMaxOrdinal);
  return "";
}

// The arguments of rank `rank` of a run that run_ranks starts: this
// command's, without --ranks and --gpus (the launcher's own flags) and, when
// `device` is given, with --device set to it.
std::vector<std::string> rank_args(const std::vector<std::string>& argv,
                                   const std::optional<std::string>& device) {
  std::vector<std::string> out;
  for (size_t i = 1; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    std::vector<std::string> dropped = {"--ranks", "--gpus"};
    if (device) dropped.push_back("--device");
    bool drop = false;
    for (const std::string& flag : dropped) {
      if (a == flag) {
        drop = true, ++i;  // and its value
      } else if (a.rfind(flag + "=", 0) == 0) {
        drop = true;
      }
    }
    if (!drop) out.push_back(a);
  }
  if (device) out.insert(out.end(), {"--device", *device});
  return out;
}

}  // namespace

void add_run(CLI::App& app, int& exit_code) {
  struct Opts {
    std::string file, device, out, resume;
    std::optional<int64_t> steps, seed;
    int threads = 0;
    int ranks = 1, gpus = 0;
    bool fresh = false, json = false, allow_changed = false;
    bool deterministic = false;
    std::vector<std::string> sinks, diags;
    LimitFlags limits;
  };
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  auto opts = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand("run", "train a run file with the fixed training loop");
  cmd->add_option("file", opts->file, "the run file, or a bundle directory (sexpgpu bundle)")
      ->required();
  cmd->add_option("--device", opts->device,
                  "cpu, cuda, cuda:N or auto (default: $SEXPGPU_DEVICE, else auto)")
      ->check(CLI::Validator([](std::string& v) { return device_problem(v); }, "DEVICE"));
  cmd->add_option("--steps", opts->steps, "train this many steps instead of defrun's")
      ->check(integer_range(1, kMax));
  cmd->add_option("--seed", opts->seed, "the run's seed instead of defrun's")
      ->check(integer_range(0, kMax));
  cmd->add_option("--out", opts->out, "the run directory (default $SEXPGPU_RUNS/SLUG, runs/SLUG)");
  cmd->add_option("--resume", opts->resume, "continue from a checkpoint: latest or a path");
  cmd->add_flag("--fresh", opts->fresh, "move an existing run in the run directory aside");
  cmd->add_flag("--json", opts->json, "print the events on standard output, one per line");
  cmd->add_flag("--allow-changed", opts->allow_changed,
                "resume although the file, selection or IR changed");
  cmd->add_flag("--deterministic", opts->deterministic,
                "results that repeat bit for bit (the CPU device always does)");
  cmd->add_option("--sink", opts->sinks, "also send events to sink plugin NAME[:ARG]");
  cmd->add_option("--diag", opts->diags, "sample diagnostic NAME");
  cmd->add_option("--threads", opts->threads, "CPU device threads (default 0: every core)")
      ->check(integer_range(0, kMaxThreads));
  cmd->add_option("--ranks", opts->ranks,
                  "train data-parallel as N processes on this machine (any device)")
      ->check(integer_range(1, kMaxLocalRanks));
  cmd->add_option("--gpus", opts->gpus,
                  "train data-parallel on this machine's first N GPUs (one rank each, NCCL)")
      ->check(integer_range(1, train::kMaxOrdinal + 1));
  opts->limits.add_to(cmd);
  cmd->callback([opts, &exit_code]() {
    // A refusal before the run: its message on standard error and, with
    // --json, a close event holding it (and the file's diagnostics).
    // `printed`: the message is already on standard error (the diagnostics).
    auto refuse = [&](int code, const std::string& error_code, const std::string& message,
                      const nlohmann::json& diagnostics, bool printed = false) {
      exit_code = code;
      if (!printed) std::cerr << "sexpgpu run: " << error_code << " " << message << "\n";
      if (!opts->json) return;
      nlohmann::json error = {{"code", error_code}, {"message", message}};
      if (!diagnostics.is_null()) error["diagnostics"] = diagnostics;
      std::cout << train::unstarted_close_line(code, error) << "\n" << std::flush;
    };
    std::string config_error;
    const config::Settings* settings = load_settings("run", config_error);
    if (!settings) {
      refuse(kUsage, "E-CONFIG", config_error, nullptr);
      return;
    }
    // run DIR on a bundle (docs/bundle.md): its files checked, then its
    // run file trained with its selection.
    std::optional<bundle::Manifest> bundled;
    const std::string bundle_dir = opts->file;
    if (is_bundle(opts->file)) {
      if (!opts->limits.variants.empty() || !opts->limits.sets.empty() ||
          !opts->limits.point.empty())
        return refuse(kUsage, "E-BUNDLE",
                      opts->file +
                          " is a bundle, whose selection was fixed when it was made (see its "
                          "bundle.toml)\n  fix: leave out --variant, --set and --point, or make "
                          "another bundle with them (sexpgpu bundle FILE --variant ... -o DIR)",
                      nullptr);
      Result<bundle::Manifest> m = open_bundle(opts->file);
      if (!m) return refuse(kFileErrors, "E-BUNDLE", m.error(), nullptr);
      bundled = *m;
      use_bundle_module_path(bundle_dir, *m);
      opts->limits.variants = m->variants;
      for (const auto& [knob, value] : m->sets) opts->limits.sets.push_back(knob + "=" + value);
      opts->limits.point = m->point;
      opts->file = (fs::path(bundle_dir) / m->run_file).string();
    } else if (std::error_code ec; fs::is_directory(opts->file, ec)) {
      return refuse(kUsage, "E-IO",
                    opts->file + " is a directory, neither a run file nor a bundle (it has no " +
                        bundle::kManifestName + ")",
                    nullptr);
    }
    // Loaded first: the compiler checks each :reduce against its reducers.
    host::PluginHost plugins(plugin_search_path());
    const std::vector<std::string> reducers = plugins.names(SG_PLUGIN_REDUCER);
    std::unique_ptr<runfile::Session> s = opts->limits.load(opts->file, "run", exit_code, true,
                                                            true, [&reducers] { return reducers; });
    if (!s) {
      std::error_code ec;
      std::string message =
          "cannot read " + opts->file + (fs::exists(opts->file, ec) ? "" : ": no such file");
      refuse(exit_code, "E-IO", message,
             nlohmann::json::array({bare_diagnostic("E-IO", message, opts->file)}), true);
      return;
    }
    if (size_t errors = s->sink.error_count(); errors > 0) {
      nlohmann::json diags = diagnostics_json(*s);
      std::string first_code = "E-USER";
      for (const nlohmann::json& d : diags)
        if (d["severity"] == "error") {
          first_code = d["code"];
          break;
        }
      refuse(kFileErrors, first_code,
             std::to_string(errors) + " error" + (errors == 1 ? "" : "s") + " in " + opts->file +
                 " (the diagnostics)",
             diags, true);
      (void)s.release();
      return;
    }
    if (!s->is_run_file || !s->compiled) {
      std::string message = opts->file + " is not a run file (no defrun)";
      refuse(kFileErrors, "E-CONTRACT-MISSING", message,
             nlohmann::json::array({bare_diagnostic("E-CONTRACT-MISSING", message, opts->file)}));
      (void)s.release();
      return;
    }
    if (std::string e = runfile::unknown_diagnostics(*s->compiled, opts->diags); !e.empty()) {
      refuse(kUsage, "E-RUN-KEY", "--diag: " + e, nullptr);
      return;
    }
    if (bundled) {
      // The data it references, then the IR it compiles to here.
      if (Status data = check_referenced_data(*s->compiled, *bundled); !data)
        return refuse(kFileErrors, "E-BUNDLE", data.error(), nullptr);
      bundle::VersionCheck v =
          bundle::check_version(bundled->sexpgpu_version, SEXPGPU_VERSION, bundled->ir_hash,
                                bundle_ir_hash(*s->compiled, bundle_dir));
      if (v.verdict == bundle::Verdict::Refuse)
        return refuse(kFileErrors, "E-BUNDLE", "bundle " + bundle_dir + " was " + v.message,
                      nullptr);
      if (v.verdict == bundle::Verdict::Warn && !quiet())
        std::cerr << "sexpgpu run: "
                  << "W-BUNDLE-VERSION"
                  << " bundle " << bundle_dir << " was " << v.message << "\n";
    }
    lisp::Interp& in = *s->interp;
    const select::Selection& sel = s->selection();
    std::string slug = sel.slug(in, fs::path(opts->file).stem().string());
    if (opts->steps) slug += ".steps=" + std::to_string(*opts->steps);
    if (opts->seed) slug += ".seed=" + std::to_string(*opts->seed);

    train::RunOptions ro;
    ro.file = opts->file;
    ro.slug = slug;
    // A bundle's runs go inside it (DIR/runs/SLUG), where run.sh's
    // --resume latest finds them again, unless --out or SEXPGPU_RUNS say.
    const config::Setting runs = settings->runs_dir();
    const std::string runs_dir = bundled && runs.source != config::Source::Environment
                                     ? (fs::path(bundle_dir) / "runs").string()
                                     : *runs.value;
    ro.run_dir = !opts->out.empty() ? opts->out : runs_dir + "/" + slug;
    const runfile::CompiledRun& compiled = *s->compiled;
    ro.device =
        *settings
             ->device({opts->device, ""},
                      compiled.run.device_given ? std::optional(compiled.run.device) : std::nullopt)
             .value;
    // This process among the run's: the rank variables (E-WORLD when
    // malformed), or the ranks this command starts (run_ranks.h).
    Result<dist::World> world =
        dist::world_from_env([](const char* name) -> std::optional<std::string> {
          const char* v = std::getenv(name);
          return v ? std::optional<std::string>(v) : std::nullopt;
        });
    if (!world) {
      refuse(kUsage, "E-WORLD", with_fix(world.diagnostic()), nullptr);
      return;
    }
    std::vector<int> gpu_list = device_list(ro.device);
    int launch = 1;  // the ranks this command starts
    std::string launcher;
    if (opts->gpus > 0) {
      launcher = "--gpus " + std::to_string(opts->gpus);
      if (opts->ranks > 1 || !gpu_list.empty() || (ro.device != "auto" && ro.device != "cuda"))
        return refuse(kUsage, "E-WORLD",
                      launcher + " starts a rank on each of the first " +
                          std::to_string(opts->gpus) + " GPUs on the cuda device" +
                          "; it takes no --ranks, and no --device but cuda\n  fix: give "
                          "one of --gpus N, --device cuda:0,1,... or --ranks N",
                      nullptr);
      launch = opts->gpus;
      ro.device = "cuda";
    } else if (!gpu_list.empty()) {
      launcher = "--device " + ro.device;
      if (opts->ranks > 1)
        return refuse(kUsage, "E-WORLD",
                      launcher + " starts a rank on each GPU it lists; it takes no --ranks",
                      nullptr);
      launch = int(gpu_list.size());
    } else {
      launcher = "--ranks " + std::to_string(opts->ranks);
      launch = opts->ranks;
    }
    if (launch > 1 && (opts->gpus > 0 || !gpu_list.empty()) && !plugins.device("nccl")) {
      const host::PluginRecord* r = plugins.find("nccl");
      return refuse(kRunFailed, "E-DEVICE",
                    launcher + ": training on several GPUs needs the nccl device plugin, which " +
                        (r ? "did not load: " + r->reason : "is not on the plugin path") +
                        "\n  fix: sexpgpu doctor lists the plugins and why each did not load",
                    nullptr);
    }
    if (launch > 1 && world->several())
      return refuse(kUsage, "E-WORLD",
                    launcher + ": this process is already rank " + std::to_string(world->rank) +
                        " of " + std::to_string(world->size) + " (" + world->origin +
                        "), which a launcher started\n  fix: give the launcher the ranks, or "
                        "this command, not both",
                    nullptr);
    if (gpu_list.size() == 1) ro.device = "cuda:" + std::to_string(gpu_list[0]);
    ro.world = *world;
    ro.threads = opts->threads;
    ro.deterministic = opts->deterministic;
    ro.steps = opts->steps;
    ro.seed = opts->seed;
    ro.resume = opts->resume;
    ro.allow_changed = opts->allow_changed;
    // Rank 0 speaks for the run; the others print only their errors.
    ro.json = opts->json && world->rank == 0;
    ro.quiet = quiet() || world->rank > 0;
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
    // A rank of run --ranks/--gpus records the command the user typed.
    if (const char* launched = std::getenv("SEXPGPU_LAUNCH_COMMAND");
        launched && world->several()) {
      nlohmann::json line = nlohmann::json::parse(launched, nullptr, false);
      if (line.is_array() && !line.empty() &&
          std::all_of(line.begin(), line.end(),
                      [](const nlohmann::json& a) { return a.is_string(); }))
        ro.argv = line.get<std::vector<std::string>>();
    }
    int refused = kOk;
    if (world->rank == 0)
      if (std::string e = prepare_run_dir(ro.run_dir, !opts->resume.empty(), opts->fresh, refused);
          !e.empty()) {
        size_t space = e.find(' ');
        refuse(refused, e.substr(0, space), e.substr(space + 1), nullptr);
        return;
      }
    if (launch > 1) {
      // The file compiled and the run directory is free: the ranks start.
      const std::vector<std::string>& argv = command_line();
      exit_code = run_ranks(
          launch,
          [&](int rank) {
            std::optional<std::string> device;
            if (opts->gpus > 0) device = "cuda";
            if (!gpu_list.empty()) device = "cuda:" + std::to_string(gpu_list[size_t(rank)]);
            std::vector<std::string> args = rank_args(argv, device);
            // The run directory is settled: a rank moves nothing aside again.
            args.erase(std::remove(args.begin(), args.end(), "--fresh"), args.end());
            return args;
          },
          argv);
      (void)s.release();
      return;
    }
    ro.exit_code_of = exit_code_of;
    ro.report = [](const std::string& message) { std::cerr << "sexpgpu run: " << message << "\n"; };
    const train::RunOutcome outcome = train::train(*s->compiled, ro, plugins);
    if (outcome.end == train::RunEnd::Refused) {
      refuse(exit_code_of(outcome), outcome.error->code, with_fix(*outcome.error), nullptr);
    } else {
      exit_code = exit_code_of(outcome);
      if (outcome.error)
        std::cerr << "sexpgpu run: " << outcome.error->code << " " << with_fix(*outcome.error)
                  << "\n";
      if (!opts->json && world->rank == 0) print_outcome(outcome, ro);
    }
    (void)s.release();  // the process ends next
  });
}

}  // namespace sexpgpu::cli
