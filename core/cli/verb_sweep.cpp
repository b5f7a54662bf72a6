// sexpgpu sweep FILE SWEEP [--from K] [--jobs N] [run flags]: every point of
// a declared sweep as an ordinary run (`sexpgpu run FILE --point SWEEP:I`,
// a child process each), in order, inside one sweep directory holding
// sweep.json and the points' run directories (docs/sweep.md). A finished
// point is skipped when the command runs again, a stopped one resumed, a
// failed one retried afresh; a signal stops the running points resumably.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <sstream>

#include "cli/settings.h"
#include "cli/sweep.h"
#include "cli/sweep_children.h"
#include "cli/verbs.h"
#include "run/events.h"
#include "run/status.h"
#include "runfile/compile.h"
#include "runfile/diagnostics.h"
#include "train/trainer.h"

namespace sexpgpu::cli {

namespace fs = std::filesystem;

namespace {

ojson read_json(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return nullptr;
  ojson j = ojson::parse(read_text(path), nullptr, false);
  return j.is_object() ? j : ojson(nullptr);
}

// What to do with a point, from what its run directory holds.
void decide(SweepPoint& p, bool fresh) {
  std::error_code ec;
  bool has_run = fs::exists(p.run_dir + "/events.jsonl", ec);
  ojson status = read_json(p.run_dir + "/status.json");
  if (!has_run && status.is_null()) {
    p.action = "run";
    return;
  }
  std::string state = status.is_object() ? status.value("state", "") : "";
  if (status.is_object()) p.summary = status.value("summary", ojson(nullptr));
  if (fresh) {
    p.action = "fresh";
    return;
  }
  if (state == "finished") {
    p.action = "skip", p.state = "finished";
    p.exit_code = status.value("exit_code", 0);
    return;
  }
  // A run still going in another process (its status names a live pid of
  // this host and no exit code) is left alone.
  if (status.is_object() && !run::is_final_state(state) &&
      status.value("exit_code", ojson(nullptr)).is_null()) {
    int64_t pid = status.value("pid", int64_t(0));
    if (live_process_here(pid, status.value("host", ""))) {
      p.action = "busy", p.state = state;
      p.error = {{"code", "E-RUN-EXISTS"},
                 {"message", p.run_dir + " is being run by process " + std::to_string(pid)}};
      return;
    }
  }
  p.action = state == "failed" || state == "nonfinite" ? "retry" : "resume";
  if (!state.empty()) p.state = state;
}

// The point's end, from its close event (kept in `p` as it came) and its
// status file, which has the last word.
void record_end(SweepPoint& p, int wait_status) {
  int code = WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : 128 + WTERMSIG(wait_status);
  p.exit_code = code;
  ojson status = read_json(p.run_dir + "/status.json");
  std::string state = status.is_object() ? status.value("state", "") : "";
  if (status.is_object() && run::is_final_state(state) &&
      status.value("exit_code", ojson(nullptr)) == code) {
    p.state = state;
    if (p.summary.is_null()) p.summary = status.value("summary", ojson(nullptr));
    if (p.error.is_null()) p.error = status.value("error", ojson(nullptr));
  } else if (WIFSIGNALED(wait_status)) {
    p.state = "killed";
  } else if (code != kOk && p.state == "running") {
    p.state = "failed";  // refused before its run began (status.json untouched)
  }
  if (code == kOk) p.state = "finished";
}

}  // namespace

void add_sweep(CLI::App& app, int& exit_code) {
  struct Opts {
    std::string file, sweep, out, device;
    int64_t from = 0, jobs = 1;
    int threads = 0;
    bool fresh = false, json = false;
    std::optional<int64_t> steps, seed;
    bool allow_changed = false, deterministic = false;
    std::vector<std::string> sinks, diags;
    LimitFlags limits;
  };
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  auto opts = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand("sweep", "run every point of a declared sweep, in order");
  cmd->add_option("file", opts->file, "the run file")->required();
  cmd->add_option("sweep", opts->sweep, "the sweep's name (defsweep)")->required();
  cmd->add_option("--from", opts->from, "start at point K (0-based); earlier ones are left alone")
      ->check(integer_range(0, kMax));
  cmd->add_option("--jobs", opts->jobs, "run N points at once, each on its own device or cores")
      ->check(integer_range(1, 4096));
  cmd->add_option("--out", opts->out, "the sweep directory (default $SEXPGPU_RUNS/STEM.SWEEP)");
  cmd->add_flag("--fresh", opts->fresh, "start every point over (earlier runs moved aside)");
  cmd->add_flag("--json", opts->json,
                "the points' events on standard output, each with \"point\", then the sweep");
  // The run flags each point is given as typed.
  cmd->add_option("--device", opts->device, "cpu, cuda, cuda:N or auto, as for run");
  cmd->add_option("--threads", opts->threads, "CPU device threads per point (default: a share)")
      ->check(integer_range(0, 4096));
  cmd->add_option("--steps", opts->steps, "train this many steps instead of defrun's")
      ->check(integer_range(1, kMax));
  cmd->add_option("--seed", opts->seed, "the runs' seed instead of defrun's")
      ->check(integer_range(0, kMax));
  cmd->add_flag("--allow-changed", opts->allow_changed,
                "resume points although the file, selection or IR changed");
  cmd->add_flag("--deterministic", opts->deterministic, "results that repeat bit for bit");
  cmd->add_option("--sink", opts->sinks, "also send each point's events to sink NAME[:ARG]");
  cmd->add_option("--diag", opts->diags, "sample diagnostic NAME");
  opts->limits.add_to(cmd);
  cmd->get_option("--point")->description("not taken: the sweep runs each of its points");
  cmd->callback([opts, cmd, &exit_code]() {
    // A refusal before any point runs: on standard error and, with --json,
    // as the sweep's one line.
    // `printed`: the message is on standard error already (diagnostics).
    // `diagnostics`: the file's, as check --json gives them (code: the first).
    auto refuse = [&](int code, const std::string& message, bool printed = false,
                      const nlohmann::json& diagnostics = nullptr) {
      exit_code = code;
      if (!printed) std::cerr << "sexpgpu sweep: " << message << "\n";
      if (!opts->json) return;
      ojson error = {{"code", nullptr}, {"message", message}};
      if (diagnostics.is_array()) {
        for (const auto& d : diagnostics)
          if (d.value("severity", "") == "error" && error["code"].is_null())
            error["code"] = d["code"];
        error["diagnostics"] = ojson::parse(diagnostics.dump());
      }
      std::cout << ojson{{"kind", "sweep"},   {"sweep", opts->sweep}, {"file", opts->file},
                         {"state", "failed"}, {"exit_code", code},    {"error", error}}
                       .dump()
                << "\n"
                << std::flush;
    };
    if (!opts->limits.point.empty())
      return refuse(kUsage, "--point is not taken: the sweep runs each of its points");
    const config::Settings* settings = settings_or_report("sweep", exit_code);
    if (!settings) return;
    const std::string sweep = lower(opts->sweep);

    // Point 0, compiled: the file's errors (and an unknown sweep) stop the
    // sweep before anything is written, once, not once per point.
    LimitFlags first = opts->limits;
    first.point = sweep + ":0";
    std::unique_ptr<runfile::Session> s =
        first.load(opts->file, "sweep", exit_code, true, true, lazy_reducer_plugins());
    if (!s) return refuse(exit_code, "cannot read " + opts->file, true);
    if (size_t errors = s->sink.error_count(); errors > 0)
      return refuse(kFileErrors,
                    std::to_string(errors) + " error" + (errors == 1 ? "" : "s") + " in " +
                        opts->file + " (the diagnostics)",
                    true, diagnostics_json(*s));
    if (!s->is_run_file || !s->compiled)
      return refuse(kFileErrors, opts->file + " is not a run file (no defrun)");
    if (std::string e = runfile::unknown_diagnostics(*s->compiled, opts->diags); !e.empty())
      return refuse(kUsage, "--diag: " + e);
    const select::Sweep* sw = s->selection().find_sweep(sweep);
    const size_t n = sw ? sw->points() : 0;
    if (size_t(opts->from) >= n)
      return refuse(kUsage, "--from " + std::to_string(opts->from) + ": sweep '" + sweep +
                                "' has points 0 to " + std::to_string(n - 1));
    const std::string stem = fs::path(opts->file).stem().string();

    SweepRecord rec;
    rec.sweep = sweep;
    rec.file = opts->file;
    rec.file_hash = train::content_hash(read_text(opts->file));
    rec.dir =
        !opts->out.empty() ? opts->out : *settings->runs_dir().value + "/" + stem + "." + sweep;
    rec.command = command_line();
    rec.from = size_t(opts->from);
    rec.jobs = size_t(opts->jobs);
    rec.started = run::rfc3339_utc(std::chrono::system_clock::now());
    // Each point's slug is the one `run --point` gives it: its own session
    // resolves the selection (the file's evaluation checks each point's
    // values too).
    std::map<std::string, size_t> by_slug;
    for (size_t i = 0; i < n; ++i) {
      std::unique_ptr<runfile::Session> own;
      runfile::Session* ps = s.get();
      if (i > 0) {
        LimitFlags at = opts->limits;
        at.point = sweep + ":" + std::to_string(i);
        own = at.load(opts->file, "sweep", exit_code, false, false);
        if (!own) return refuse(exit_code, "cannot read " + opts->file, true);
        ps = own.get();
        if (ps->sink.error_count() > 0) {
          for (const Diagnostic& d : ps->sink.all())
            if (d.severity == Severity::Error)
              std::cerr << render_human(ps->sources, d, use_color_stderr());
          return refuse(kFileErrors, "point " + std::to_string(i) + ": errors in " + opts->file,
                        true, diagnostics_json(*ps));
        }
      }
      SweepPoint p;
      p.index = i;
      for (const auto& [name, value] : sw->point(i))
        p.knobs.push_back({lower(name->name), s->interp->show(value)});  // sw's interpreter
      p.slug = ps->selection().slug(*ps->interp, stem);
      if (opts->steps) p.slug += ".steps=" + std::to_string(*opts->steps);
      if (opts->seed) p.slug += ".seed=" + std::to_string(*opts->seed);
      if (auto [it, fresh] = by_slug.insert({p.slug, i}); !fresh)
        return refuse(kFileErrors, "points " + std::to_string(it->second) + " and " +
                                       std::to_string(i) + " of sweep '" + sweep +
                                       "' are the same selection (" + p.slug +
                                       "): give each point different values");
      p.run_dir = rec.dir + "/" + p.slug;
      if (i >= rec.from) decide(p, opts->fresh);
      rec.points.push_back(std::move(p));
    }
    const runfile::CompiledRun& compiled = *s->compiled;
    std::string device =
        *settings
             ->device({opts->device, ""},
                      compiled.run.device_given ? std::optional(compiled.run.device) : std::nullopt)
             .value;
    // With one job the flags go through as typed (run resolves them).
    Placement pl = place(rec.jobs, rec.jobs == 1 ? opts->device : device, opts->threads);
    if (!pl.error.empty()) return refuse(kUsage, pl.error);
    (void)s.release();  // the process ends after the sweep; no need to free it

    // The words every point is given: the user's selection and run flags.
    std::vector<std::string> common = {"run", opts->file, "--json", "--quiet"};
    for (const char* name : {"--variant", "--set", "--eval-steps", "--eval-depth", "--eval-heap",
                             "--ir-nodes", "--steps", "--seed", "--sink", "--diag"})
      for (const std::string& v : cmd->get_option(name)->results())
        common.insert(common.end(), {name, v});
    for (const char* name : {"--allow-changed", "--deterministic"})
      if (cmd->count(name)) common.push_back(name);

    std::error_code ec;
    fs::create_directories(rec.dir, ec);
    if (std::string e = write_sweep_json(rec); !e.empty()) return refuse(kRunFailed, "E-IO " + e);
    LiveLine live;
    auto shown = [&](const SweepPoint& p) {
      return "point " + std::to_string(p.index) + "/" + std::to_string(n) + " " + p.label();
    };
    auto save = [&] {
      if (std::string e = write_sweep_json(rec); !e.empty()) live.say("sexpgpu sweep: E-IO " + e);
    };

    ChildPool pool(command_line().empty() ? "sexpgpu" : command_line()[0]);
    std::vector<size_t> free_slots, slot_of(n, 0);
    for (size_t i = pl.slot_args.size(); i-- > 0;) free_slots.push_back(i);
    size_t next = rec.from;
    for (;;) {
      pool.take_signals();
      while (pool.stop_signals() == 0 && next < n && !free_slots.empty()) {
        SweepPoint& p = rec.points[next++];
        if (p.action == "skip" || p.action == "busy") {
          live.say(shown(p) + ": " +
                   (p.action == "skip" ? "finished already, skipped"
                                       : p.error["message"].get<std::string>()));
          if (p.action == "busy") p.exit_code = kUsage;
          continue;
        }
        std::vector<std::string> args = common;
        args.insert(args.end(),
                    {"--point", sweep + ":" + std::to_string(p.index), "--out", p.run_dir});
        if (p.action == "resume") args.insert(args.end(), {"--resume", "latest"});
        if (p.action == "retry" || p.action == "fresh") args.push_back("--fresh");
        size_t slot = free_slots.back();
        const auto& placed = pl.slot_args[slot];
        args.insert(args.end(), placed.begin(), placed.end());
        std::string error;
        if (p.action == "resume") live.say(shown(p) + ": resuming (" + p.state + " before)");
        if (p.action == "retry") live.say(shown(p) + ": " + p.state + " before, started afresh");
        p.summary = nullptr, p.error = nullptr, p.step = 0;
        if (!pool.start(p.index, args, &error)) {
          p.state = "failed", p.exit_code = kRunFailed;
          p.error = {{"code", "E-IO"}, {"message", error}};
          live.say(shown(p) + ": " + error);
        } else {
          p.state = "running";
          free_slots.pop_back();
          slot_of[p.index] = slot;
        }
        save();
      }
      if (pool.running() == 0) break;
      pool.wait(
          [&](size_t i, const std::string& line) {
            ojson e = ojson::parse(line, nullptr, false);
            if (!e.is_object()) return;
            SweepPoint& p = rec.points[i];
            std::string kind = e.value("kind", "");
            if (kind == "open") p.steps = e.value("steps", int64_t(0));
            if (kind == "step") {
              p.step = e.value("step", int64_t(0));
              p.metrics = e.value("metrics", ojson(nullptr));
              live.progress(p, n);
            }
            if (kind == "warning")
              live.say(shown(p) + ": " + e.value("code", "") + " " + e.value("message", ""));
            if (kind == "close") {
              p.summary = e.value("summary", ojson(nullptr));
              p.error = e.value("error", ojson(nullptr));
            }
            if (opts->json) {
              e["point"] = i;
              live.clear();
              std::cout << e.dump() << "\n" << std::flush;
            }
          },
          [&](size_t i, int wait_status) {
            SweepPoint& p = rec.points[i];
            record_end(p, wait_status);
            free_slots.push_back(slot_of[i]);
            int64_t at = p.summary.is_object() ? p.summary.value("steps", p.step) : p.step;
            std::string end = shown(p) + ": " + p.state + " at step " + std::to_string(at);
            if (*p.exit_code != kOk) end += " (exit " + std::to_string(*p.exit_code) + ")";
            if (p.error.is_object() && p.error.contains("code"))
              end += ": " + p.error.value("code", "") + " " + p.error.value("message", "");
            live.say(end + ", in " + p.run_dir);
            save();
          });
    }
    live.clear();
    for (size_t i = next; i < n; ++i) rec.points[i].action.clear();  // never started

    // The exit code: the largest of the points' (130 a point stopped at
    // once, 75 resumable, 4 non-finite, 3 failed, 1 the file's), at least 75
    // after a signal, 0 when every point finished.
    int code = kOk;
    bool all = true, stopped = pool.stop_signals() > 0;
    for (const SweepPoint& p : rec.points) {
      if (p.index < rec.from) {
        all = all && p.state == "finished";
        continue;
      }
      if (p.exit_code) code = std::max(code, *p.exit_code);
      stopped = stopped || p.state == "stopped" || p.state == "preempted" || p.state == "killed";
    }
    // A second signal makes it 130 only through a point it stopped at once:
    // a point that had already checkpointed is resumable (75).
    if (pool.stop_signals() > 0) code = std::max(code, int(kResumable));
    bool range_finished = std::all_of(rec.points.begin() + long(rec.from), rec.points.end(),
                                      [](const SweepPoint& p) { return p.state == "finished"; });
    rec.state = stopped ? "stopped" : !range_finished ? "failed" : all ? "finished" : "partial";
    rec.exit_code = code;
    save();
    if (opts->json) {
      ojson doc = sweep_json(rec);
      ojson line = {{"kind", "sweep"}};
      for (auto& [k, v] : doc.items()) line[k] = v;
      std::cout << line.dump() << "\n" << std::flush;
    } else {
      std::cout << sweep_table(rec) << std::flush;
    }
    if (rec.state == "stopped" && !quiet())
      std::cerr << "sexpgpu sweep: stopped; the same command continues it\n";
    exit_code = code;
  });
}

}  // namespace sexpgpu::cli
