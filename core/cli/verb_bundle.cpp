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

#include <algorithm>
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
#include "cli/s3_access.h"
#include "cli/settings.h"
#include "cli/verbs.h"
#include "data/lookup.h"
#include "ir/json.h"
#include "runfile/compile.h"
#include "s3/url.h"
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

struct Refusal {
  int code;
  std::string error_code, message;
};
using Refused = std::optional<Refusal>;

// What goes in a bundle, at its places as the run file sees them
// (absolute): the run file, its modules, the $SEXPGPU_MODULE_PATH
// directories they came from, and the data, each copied one under the
// place where the run file's lookup finds it first.
struct Contents {
  fs::path run_file;
  std::vector<fs::path> modules, module_dirs;
  std::vector<bundle::DataEntry> data;       // `path`: its place, until the root is known
  std::map<fs::path, fs::path> data_copies;  // place -> the file the lookup found
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

Refused copy_into(const fs::path& from, const fs::path& to) {
  std::error_code ec;
  fs::create_directories(to.parent_path(), ec);
  if (!ec) fs::copy_file(from, to, fs::copy_options::overwrite_existing, ec);
  if (ec)
    return Refusal{kRunFailed, "E-IO",
                   "cannot copy " + from.string() + " to " + to.string() + ": " + ec.message()};
  return std::nullopt;
}

// One data file a loader reads, recorded with its size and SHA-256, and
// placed for copying unless --no-data; what cannot travel is refused.
Refused add_data(const spec::LoaderDecl& decl, const spec::DataFile& f, bool no_data, Contents& c) {
  const std::string what = "loader " + decl.name + "'s \"" + f.written + "\"";
  if (f.written.starts_with("s3://")) {
    // A reference: its size and ETag, never a copy (the run fetches it
    // into its cache, docs/data.md).
    Result<s3::Url> url = s3::parse_url(f.written);
    if (!url) return Refusal{kUsage, "E-S3", what + ": " + url.error()};
    Result<s3::Client*> client = cli::s3_client();
    if (!client) return Refusal{kRunFailed, "E-S3", what + ": " + client.error()};
    Result<s3::ObjectInfo> head = (*client)->head(*url);
    if (!head) return Refusal{kRunFailed, "E-S3", what + ": " + head.error()};
    bundle::DataEntry e{decl.name, f.written, int64_t(head->size), "", ""};
    e.etag = head->etag;
    c.data.push_back(std::move(e));
    return std::nullopt;
  }
  const bool absolute = fs::path(f.written).is_absolute();
  const fs::path place = (c.run_file.parent_path() / f.written).lexically_normal();
  if (!no_data && absolute)
    return Refusal{kUsage, "E-BUNDLE",
                   "loader " + decl.name + " names the absolute path \"" + f.written +
                       "\", which a bundle cannot carry to another machine\n  fix: write it "
                       "relative (looked up in the run file's directory, then $SEXPGPU_DATA, "
                       "then /usr/share/datasets), or bundle with --no-data to leave the data "
                       "where it is"};
  if (no_data && !absolute && bundle::absolute_path(f.found) == place)
    return Refusal{kUsage, "E-BUNDLE",
                   what + " is found beside the run file (" + f.found.string() +
                       "), which a --no-data bundle leaves behind, so its run would not find "
                       "it\n  fix: bundle the data (leave out --no-data), or move it to a "
                       "directory of $SEXPGPU_DATA here and where it will run"};
  std::error_code ec;
  bundle::DataEntry e{decl.name, f.written, int64_t(fs::file_size(f.found, ec)), "", ""};
  if (ec)
    return Refusal{kRunFailed, "E-IO", "cannot read " + f.found.string() + ": " + ec.message()};
  Result<std::string> sum = bundle::sha256_file(f.found);
  if (!sum) return Refusal{kRunFailed, "E-IO", sum.error()};
  e.sha256 = *sum;
  if (!no_data) {
    c.data_copies.emplace(place, f.found);
    e.path = place.string();
  }
  c.data.push_back(std::move(e));
  return std::nullopt;
}

Refused gather(const runfile::Session& s, const std::string& file, bool no_data, Contents& c) {
  c.run_file = bundle::absolute_path(file);
  c.modules = user_modules(s);
  if (const char* env = std::getenv("SEXPGPU_MODULE_PATH"))
    for (const fs::path& d : data::split_search_path(env)) {
      fs::path dir = bundle::absolute_path(d);
      if (std::any_of(c.modules.begin(), c.modules.end(),
                      [&](const fs::path& m) { return bundle::relative_inside(dir, m); }))
        c.module_dirs.push_back(dir);
    }
  for (const spec::LoaderDecl& decl : s.compiled->loaders.decls)
    for (const spec::DataFile& f : decl.data_files)
      if (Refused r = add_data(decl, f, no_data, c)) return r;
  return std::nullopt;
}

// The deepest directory holding everything, so that every relative place
// (../lib, fashion-mnist/...) holds inside src/.
fs::path root_of(const Contents& c) {
  std::vector<fs::path> dirs = {c.run_file.parent_path()};
  for (const fs::path& m : c.modules) dirs.push_back(m.parent_path());
  for (const auto& [place, found] : c.data_copies) dirs.push_back(place.parent_path());
  dirs.insert(dirs.end(), c.module_dirs.begin(), c.module_dirs.end());
  return bundle::common_directory(dirs);
}

// The bundle in `work` compiled again, as run DIR will: every module (and
// copied data file) must be found inside it. Sets the manifest's IR hash
// and writes ir.json.
Refused compile_copy(const fs::path& work, const LimitFlags& limits, const std::string& file,
                     bool no_data, bundle::Manifest& m) {
  use_bundle_module_path(work, m);
  int code = kOk;
  std::unique_ptr<runfile::Session> b = limits.load((work / m.run_file).string(), "bundle", code,
                                                    true, false, lazy_reducer_plugins());
  struct Leak {  // the session is left to the process's end, as every verb does
    std::unique_ptr<runfile::Session>& s;
    ~Leak() { (void)s.release(); }
  } leak{b};
  if (!b || b->sink.error_count() > 0 || !b->compiled) {
    std::string first = b && !b->sink.all().empty() ? b->sink.all().front().message : "";
    return Refusal{kUsage, "E-BUNDLE",
                   "the bundled copy of " + file + " does not compile: " + first +
                       "\n  fix: what the file reads must travel with it: require modules "
                       "relative to the file, and name data relative to it"};
  }
  const fs::path inside = bundle::absolute_path(work);
  for (const fs::path& mod : user_modules(*b))
    if (!bundle::relative_inside(inside, mod))
      return Refusal{kUsage, "E-BUNDLE",
                     "module " + mod.string() +
                         " is required by an absolute path, which a bundle cannot carry to "
                         "another machine\n  fix: require it relative to the file "
                         "(\"./lib/x.lisp\") or through $SEXPGPU_MODULE_PATH"};
  if (!no_data)
    for (const spec::LoaderDecl& decl : b->compiled->loaders.decls)
      for (const spec::DataFile& f : decl.data_files)
        if (!f.written.starts_with("s3://") &&  // a reference, fetched where it runs
            !bundle::relative_inside(inside, bundle::absolute_path(f.found)))
          return Refusal{kUsage, "E-BUNDLE",
                         "the bundled copy of loader " + decl.name + "'s \"" + f.written +
                             "\" is not what its lookup finds (" + f.found.string() +
                             ")\n  fix: bundle with --no-data to leave the data where it is"};
  m.ir_hash = bundle_ir_hash(*b->compiled, work);
  std::string e;
  if (!write_file_atomic((work / "ir.json").string(),
                         ir::to_json(b->compiled->module).dump() + "\n", &e))
    return Refusal{kRunFailed, "E-IO", e};
  return std::nullopt;
}

}  // namespace

void add_bundle(CLI::App& app, int& exit_code) {
  struct Opts {
    std::string file, out;
    bool no_data = false, json = false;
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
  cmd->add_flag("--json", opts->json,
                "print what was bundled (or why not) as one JSON object on standard output");
  opts->limits.add_to(cmd);
  cmd->callback([opts, &exit_code]() {
    // A refusal: its message on standard error and, with --json, as
    // {"error": {"code", "message"[, "diagnostics"]}} on standard output.
    auto refuse = [&](const Refusal& r, const nlohmann::json& diagnostics = nullptr) {
      exit_code = r.code;
      if (!r.message.empty())
        std::cerr << "sexpgpu bundle: " << r.error_code << " " << r.message << "\n";
      if (!opts->json) return;
      nlohmann::json error = {{"code", r.error_code}, {"message", r.message}};
      if (!diagnostics.is_null()) error["diagnostics"] = diagnostics;
      std::cout << nlohmann::json{{"error", error}}.dump() << "\n";
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
    if (!s) {
      if (opts->json)
        std::cout << nlohmann::json{{"error",
                                     {{"code", "E-IO"}, {"message", "cannot read " + opts->file}}}}
                         .dump()
                  << "\n";
      return;
    }
    if (s->sink.error_count() > 0) {
      // The diagnostics are on standard error already.
      nlohmann::json diags = diagnostics_json(*s);
      std::string first = "E-USER";
      for (const nlohmann::json& d : diags)
        if (d.value("severity", "") == "error") {
          first = d.value("code", first);
          break;
        }
      refuse({kFileErrors, first, ""}, diags);
      (void)s.release();
      return;
    }
    if (!s->is_run_file || !s->compiled) {
      (void)s.release();
      return refuse({kFileErrors, "E-CONTRACT-MISSING",
                     opts->file + " is not a run file (no defrun): there is nothing to run"});
    }
    Contents c;
    if (Refused r = gather(*s, opts->file, opts->no_data, c)) return refuse(*r);
    const fs::path root = root_of(c);

    bundle::Manifest m;
    m.sexpgpu_version = SEXPGPU_VERSION;
    m.run_file = bundle_path(root, c.run_file);
    m.slug = s->selection().slug(*s->interp, c.run_file.stem().string());
    m.variants = opts->limits.variants;
    select::Request request;
    opts->limits.request(request);  // well-formed: load() checked it
    m.sets = request.sets;
    m.point = opts->limits.point;
    for (const fs::path& d : c.module_dirs) m.module_path.push_back(bundle_path(root, d));
    m.data_bundled = !opts->no_data;
    m.data = c.data;
    for (bundle::DataEntry& e : m.data)
      if (!e.path.empty()) e.path = bundle_path(root, e.path);
    train::RunMemory plan = train::plan_run_memory(*s->compiled);
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
    // Each file from where it is to its bundle path.
    std::vector<std::pair<fs::path, std::string>> copies = {
        {c.run_file, bundle_path(root, c.run_file)}};
    for (const fs::path& f : c.modules) copies.push_back({f, bundle_path(root, f)});
    for (const auto& [place, found] : c.data_copies)
      copies.push_back({found, bundle_path(root, place)});
    std::vector<std::string> listed;
    for (const auto& [from, to] : copies) {
      if (Refused r = copy_into(from, work / to)) return refuse(*r);
      listed.push_back(to);
    }
    if (Refused r = compile_copy(work, opts->limits, opts->file, opts->no_data, m))
      return refuse(*r);
    listed.push_back("ir.json");
    int64_t bytes = 0;
    for (const std::string& path : listed) {
      Result<bundle::FileEntry> entry = file_entry(work, path);
      if (!entry) return refuse({kRunFailed, "E-IO", entry.error()});
      bytes += entry->size;
      m.files.push_back(*entry);
    }
    std::string e;
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

    if (opts->json) {
      std::cout << nlohmann::json{{"bundle", opts->out},
                                  {"slug", m.slug},
                                  {"sexpgpu_version", m.sexpgpu_version},
                                  {"ir_hash", m.ir_hash},
                                  {"files", m.files.size()},
                                  {"bytes", bytes},
                                  {"data_bundled", m.data_bundled},
                                  {"data", m.data.size()},
                                  {"device_bytes", m.device.total},
                                  {"run", (fs::path(opts->out) / "run.sh").string()}}
                       .dump()
                << "\n";
      exit_code = kOk;
      (void)s.release();
      return;
    }
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
