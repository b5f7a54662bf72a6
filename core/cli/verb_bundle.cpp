// sexpgpu bundle FILE [selection] -o DIR [--no-data]: a directory that runs
// anywhere sexpgpu is installed (docs/bundle.md). The run file and its
// modules go under DIR/src/ with their relative places kept (so require's
// "./" and "../" paths still hold), the data files beside them as the file
// names them (so the usual lookup finds them first), then bundle.toml,
// ir.json and run.sh. The bundle is made in a temporary directory beside DIR
// and compiled again from there, as it will run, before it is renamed to
// DIR: a bundle that exists is whole and known to compile.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <set>

#include "bundle/manifest.h"
#include "bundle/sha256.h"
#include "bundle/verify.h"
#include "cli/bundle_run.h"
#include "cli/settings.h"
#include "cli/verbs.h"
#include "data/lookup.h"
#include "ir/json.h"
#include "runfile/compile.h"
#include "train/memory_plan.h"
#include "util/atomic_file.h"

#ifndef SEXPGPU_VERSION
#define SEXPGPU_VERSION "0.0.0"
#endif

namespace sexpgpu::cli {

namespace fs = std::filesystem;

namespace {

// run.sh: exec, so that a scheduler's SIGTERM reaches sexpgpu itself and its
// exit code (75 when preempted) is the job's.
constexpr const char* kRunScript = R"SH(#!/bin/sh
# Runs the bundle in this directory (made by `sexpgpu bundle`; docs/bundle.md).
# `sexpgpu run` on the directory checks every file against bundle.toml, then
# trains, resuming from the latest checkpoint when an earlier start was
# stopped: after exit 75 (preempted, SIGTERM), start this script again.
# Extra arguments go to `sexpgpu run` (--device cuda, --steps N, --out DIR).
here=$(CDPATH= cd -- "$(dirname -- "$0")" && pwd) || exit 2
if ! command -v sexpgpu >/dev/null 2>&1; then
  echo "run.sh: sexpgpu is not on PATH; install it, or add its bin directory to PATH" >&2
  exit 127
fi
exec sexpgpu run "$here" --resume latest "$@"
)SH";

// A file to place in the bundle: where it is, and where it goes.
struct Placed {
  fs::path from;
  fs::path at;  // its place as the run file sees it (absolute), before the bundle's root
};

struct Refusal {
  int code;
  std::string error_code, message;
};

// The bundle's path of `at`: "src/" + its place under `root`.
std::string bundle_path(const fs::path& root, const fs::path& at) {
  if (at == root) return "src";
  return "src/" + bundle::relative_inside(root, at).value_or(at.filename().string());
}

Result<bundle::FileEntry> file_entry(const fs::path& dir, const std::string& path) {
  Result<std::string> sum = bundle::sha256_file(dir / path);
  if (!sum) return sum.failed();
  std::error_code ec;
  return bundle::FileEntry{path, int64_t(fs::file_size(dir / path, ec)), *sum};
}

std::optional<Refusal> copy_into(const fs::path& from, const fs::path& to) {
  std::error_code ec;
  fs::create_directories(to.parent_path(), ec);
  if (!ec) fs::copy_file(from, to, fs::copy_options::overwrite_existing, ec);
  if (ec)
    return Refusal{kRunFailed, "E-IO",
                   "cannot copy " + from.string() + " to " + to.string() + ": " + ec.message()};
  return std::nullopt;
}

}  // namespace

void add_bundle(CLI::App& app, int& exit_code) {
  struct Opts {
    std::string file, out;
    bool no_data = false;
    LimitFlags limits;
  };
  auto opts = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand(
      "bundle", "write a directory that runs anywhere sexpgpu is installed (run.sh resumes)");
  cmd->add_option("file", opts->file, "the run file")->required();
  cmd->add_option("-o,--out", opts->out, "the bundle directory to write (new, or empty)")
      ->required();
  cmd->add_flag("--no-data", opts->no_data,
                "leave the data files out: the bundle finds them by the usual lookup");
  opts->limits.add_to(cmd);
  cmd->callback([opts, &exit_code]() {
    auto refuse = [&](const Refusal& r) {
      exit_code = r.code;
      std::cerr << "sexpgpu bundle: " << r.error_code << " " << r.message << "\n";
    };
    std::string config_error;
    if (!load_settings("bundle", config_error)) return refuse({kUsage, "E-CONFIG", config_error});
    fs::path dir = bundle::absolute_path(opts->out);
    std::error_code ec;
    if (fs::exists(fs::symlink_status(dir, ec)) &&
        (!fs::is_directory(dir, ec) || !fs::is_empty(dir, ec)))
      return refuse({kUsage, "E-BUNDLE",
                     opts->out + " already exists and is not an empty directory; bundle never "
                                 "overwrites\n  fix: choose another -o, or remove it"});
    if (!fs::is_directory(dir.parent_path(), ec))
      return refuse(
          {kUsage, "E-BUNDLE",
           opts->out + ": its parent directory " + dir.parent_path().string() + " does not exist"});
    std::unique_ptr<runfile::Session> s =
        opts->limits.load(opts->file, "bundle", exit_code, true, true, lazy_reducer_plugins());
    if (!s) return;
    if (s->sink.error_count() > 0) {
      exit_code = kFileErrors;
      (void)s.release();
      return;
    }
    if (!s->is_run_file || !s->compiled) {
      (void)s.release();
      return refuse({kFileErrors, "E-CONTRACT-MISSING",
                     opts->file + " is not a run file (no defrun): there is nothing to run"});
    }
    const runfile::CompiledRun& compiled = *s->compiled;
    lisp::Interp& in = *s->interp;

    // What goes in: the run file, its modules, the data.
    const fs::path run_file = bundle::absolute_path(opts->file);
    const fs::path run_dir = run_file.parent_path();
    std::vector<Placed> sources = {{run_file, run_file}};
    for (const fs::path& m : user_modules(*s)) sources.push_back({m, m});
    std::vector<fs::path> module_dirs;
    if (const char* env = std::getenv("SEXPGPU_MODULE_PATH"))
      for (const fs::path& d : data::split_search_path(env)) {
        fs::path abs = bundle::absolute_path(d);
        for (const Placed& p : sources)
          if (p.from != run_file && bundle::relative_inside(abs, p.from)) {
            module_dirs.push_back(abs);
            break;
          }
      }
    std::vector<bundle::DataEntry> data;
    std::map<fs::path, fs::path> data_copies;  // place in the bundle -> the file found
    for (const spec::LoaderDecl& decl : compiled.loaders.decls)
      for (const spec::DataFile& f : decl.data_files) {
        if (f.written.starts_with("s3://"))
          return refuse({kUsage, "E-UNSUPPORTED",
                         "loader " + decl.name + " reads \"" + f.written +
                             "\": bundling s3:// sources comes with the S3 client"});
        bundle::DataEntry e{decl.name, f.written, 0, "", ""};
        std::error_code size_ec;
        e.size = int64_t(fs::file_size(f.found, size_ec));
        Result<std::string> sum = bundle::sha256_file(f.found);
        if (!sum || size_ec)
          return refuse(
              {kRunFailed, "E-IO",
               sum ? "cannot read " + f.found.string() + ": " + size_ec.message() : sum.error()});
        e.sha256 = *sum;
        if (opts->no_data && !fs::path(f.written).is_absolute() &&
            bundle::absolute_path(f.found) == (run_dir / f.written).lexically_normal())
          return refuse({kUsage, "E-BUNDLE",
                         "loader " + decl.name + "'s \"" + f.written +
                             "\" is found beside the run file (" + f.found.string() +
                             "), which a --no-data bundle leaves behind, so its run would not "
                             "find it\n  fix: bundle the data (leave out --no-data), or move "
                             "it to a directory of $SEXPGPU_DATA here and where it will run"});
        if (!opts->no_data) {
          if (fs::path(f.written).is_absolute())
            return refuse({kUsage, "E-BUNDLE",
                           "loader " + decl.name + " names the absolute path \"" + f.written +
                               "\", which a bundle cannot carry to another machine\n  fix: "
                               "write it relative (looked up in the run file's directory, then "
                               "$SEXPGPU_DATA, then /usr/share/datasets), or bundle with "
                               "--no-data to leave the data where it is"});
          fs::path at = (run_dir / f.written).lexically_normal();
          data_copies.emplace(at, f.found);
          e.path = at.string();  // made a bundle path once the root is known
        }
        data.push_back(std::move(e));
      }

    // The root: the deepest directory holding everything, so that every
    // relative place (../lib, fashion-mnist/...) holds inside src/.
    std::vector<fs::path> dirs;
    for (const Placed& p : sources) dirs.push_back(p.at.parent_path());
    for (const auto& [at, found] : data_copies) dirs.push_back(at.parent_path());
    for (const fs::path& d : module_dirs) dirs.push_back(d);
    const fs::path root = bundle::common_directory(dirs);

    bundle::Manifest m;
    m.sexpgpu_version = SEXPGPU_VERSION;
    m.run_file = bundle_path(root, run_file);
    m.slug = s->selection().slug(in, run_file.stem().string());
    m.variants = opts->limits.variants;
    select::Request request;
    opts->limits.request(request);  // well-formed: load() checked it
    m.sets = request.sets;
    m.point = opts->limits.point;
    for (const fs::path& d : module_dirs) m.module_path.push_back(bundle_path(root, d));
    m.data_bundled = !opts->no_data;
    for (bundle::DataEntry& e : data)
      if (!e.path.empty()) e.path = bundle_path(root, e.path);
    m.data = data;
    train::RunMemory plan = train::plan_run_memory(compiled);
    m.device = {plan.parameters,  plan.gradients, plan.optimizer_state, plan.batch,
                plan.activations, plan.workspace, plan.total()};

    // Made beside DIR, renamed to it when whole.
    fs::path work =
        dir.parent_path() / (dir.filename().string() + ".partial-" + std::to_string(::getpid()));
    fs::remove_all(work, ec);
    struct Cleanup {
      fs::path p;
      ~Cleanup() {
        std::error_code e;
        if (!p.empty()) fs::remove_all(p, e);
      }
    } cleanup{work};
    fs::create_directories(work, ec);
    if (ec)
      return refuse({kRunFailed, "E-IO", "cannot create " + work.string() + ": " + ec.message()});
    for (const Placed& p : sources)
      if (auto r = copy_into(p.from, work / bundle_path(root, p.at))) return refuse(*r);
    for (const auto& [at, found] : data_copies)
      if (auto r = copy_into(found, work / bundle_path(root, at))) return refuse(*r);

    // Compiled again from the bundle, as run DIR will: every module and
    // data file must be found inside it, and the IR is the one recorded.
    use_bundle_module_path(work, m);
    LimitFlags again = opts->limits;
    int again_code = kOk;
    std::unique_ptr<runfile::Session> b = again.load(
        (work / m.run_file).string(), "bundle", again_code, true, false, lazy_reducer_plugins());
    if (!b || b->sink.error_count() > 0 || !b->compiled) {
      std::string first = b && !b->sink.all().empty() ? b->sink.all().front().message : "";
      (void)b.release();
      return refuse({kUsage, "E-BUNDLE",
                     "the bundled copy of " + opts->file + " does not compile: " + first +
                         "\n  fix: what the file reads must travel with it: require modules "
                         "relative to the file, and name data relative to it"});
    }
    for (const fs::path& mod : user_modules(*b))
      if (!bundle::relative_inside(bundle::absolute_path(work), mod)) {
        (void)b.release();
        return refuse({kUsage, "E-BUNDLE",
                       "module " + mod.string() +
                           " is required by an absolute path, which a bundle cannot carry to "
                           "another machine\n  fix: require it relative to the file "
                           "(\"./lib/x.lisp\") or through $SEXPGPU_MODULE_PATH"});
      }
    if (!opts->no_data)
      for (const spec::LoaderDecl& decl : b->compiled->loaders.decls)
        for (const spec::DataFile& f : decl.data_files)
          if (!bundle::relative_inside(bundle::absolute_path(work),
                                       bundle::absolute_path(f.found))) {
            (void)b.release();
            return refuse({kUsage, "E-BUNDLE",
                           "the bundled copy of loader " + decl.name + "'s \"" + f.written +
                               "\" is not what its lookup finds (" + f.found.string() +
                               ")\n  fix: bundle with --no-data to leave the data where it is"});
          }
    m.ir_hash = bundle_ir_hash(*b->compiled, work);
    std::string e;
    if (!write_file_atomic((work / "ir.json").string(),
                           ir::to_json(b->compiled->module).dump() + "\n", &e))
      return refuse({kRunFailed, "E-IO", e});
    (void)b.release();

    std::vector<std::string> listed;
    for (const Placed& p : sources) listed.push_back(bundle_path(root, p.at));
    for (const auto& [at, found] : data_copies) listed.push_back(bundle_path(root, at));
    listed.push_back("ir.json");
    int64_t bytes = 0;
    for (const std::string& path : listed) {
      Result<bundle::FileEntry> entry = file_entry(work, path);
      if (!entry) return refuse({kRunFailed, "E-IO", entry.error()});
      bytes += entry->size;
      m.files.push_back(*entry);
    }
    if (!write_file_atomic((work / bundle::kManifestName).string(), bundle::to_toml(m), &e) ||
        !write_file_atomic((work / "run.sh").string(), kRunScript, &e))
      return refuse({kRunFailed, "E-IO", e});
    ::chmod((work / "run.sh").c_str(), 0755);
    if (fs::exists(dir, ec)) fs::remove(dir, ec);  // empty: checked above
    fs::rename(work, dir, ec);
    if (ec)
      return refuse(
          {kRunFailed, "E-IO",
           "cannot rename " + work.string() + " to " + dir.string() + ": " + ec.message()});
    cleanup.p.clear();

    std::cout << "bundle " << opts->out << ": " << m.slug << " (sexpgpu " << m.sexpgpu_version
              << ", IR " << m.ir_hash << ")\n"
              << "  " << m.files.size() << " files, " << train::bytes_text(uint64_t(bytes))
              << "; data " << (opts->no_data ? "left out (found by the usual lookup)" : "copied in")
              << "\n  device needs " << train::bytes_text(uint64_t(m.device.total))
              << " (the memory plan)\n  run it with " << (fs::path(opts->out) / "run.sh").string()
              << " (extra arguments go to sexpgpu run)\n";
    exit_code = kOk;
    (void)s.release();  // the process ends next
  });
}

}  // namespace sexpgpu::cli
