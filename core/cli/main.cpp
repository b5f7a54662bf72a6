// sexpgpu: the one binary. Parses the command line (CLI11) on a thread with a
// large stack and dispatches to the verbs.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <optional>
#include <sstream>

#include "cli/s3_access.h"
#include "cli/settings.h"
#include "cli/verbs.h"
#include "host/plugin_host.h"
#include "ir/graph.h"
#include "sexpgpu/plugin.h"
#include "util/big_stack.h"

#ifndef SEXPGPU_VERSION
#define SEXPGPU_VERSION "0.0.0"
#endif

namespace sexpgpu::cli {

constexpr int64_t kMaxInt64 = std::numeric_limits<int64_t>::max();

std::string range_text(int64_t min, int64_t max) {
  auto shown = [](int64_t v) {
    return v == kMaxInt64 ? std::string("9223372036854775807 (2^63-1)") : std::to_string(v);
  };
  if (max == kMaxInt64) return min == 0 ? "0 to " + shown(max) : "at least " + shown(min);
  return shown(min) + " to " + shown(max);
}

CLI::Validator integer_range(int64_t min, int64_t max) {
  return CLI::Validator(
      [min, max](std::string& text) -> std::string {
        std::string_view digits = text;
        bool negative = !digits.empty() && digits[0] == '-';
        if (negative) digits.remove_prefix(1);
        bool whole = !digits.empty() && digits.find_first_not_of("0123456789") == digits.npos;
        if (!whole) return "'" + text + "' is not a whole number; it takes " + range_text(min, max);
        int64_t value = 0;
        auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (ec != std::errc() || value < min || value > max)
          return text + " is out of range: it takes " + range_text(min, max);
        return "";
      },
      "INT in [" + std::to_string(min) + ", " + std::to_string(max) + "]");
}

namespace {
bool g_quiet = false;
}

bool quiet() {
  return g_quiet;
}

// Every verb and sub-verb takes --quiet after it, the app before it.
void add_quiet(CLI::App& app) {
  if (!app.get_option_no_throw("--quiet"))
    app.add_flag("--quiet", g_quiet, "nothing on standard error but errors (any verb)");
  for (CLI::App* sub : app.get_subcommands({})) add_quiet(*sub);
}

bool load_or_report(runfile::Session& s, const std::string& file, const char* verb) {
  std::error_code ec;
  if (!std::filesystem::exists(file, ec)) {
    std::cerr << "sexpgpu " << verb << ": cannot read " << file << ": no such file\n";
    return false;
  }
  std::string io_error;
  if (!s.load_file(file, &io_error)) {
    std::cerr << "sexpgpu " << verb << ": " << io_error << "\n";
    return false;
  }
  return true;
}

nlohmann::json diagnostics_json(const runfile::Session& s) {
  return nlohmann::json::parse(render_json(s.sources, s.sink.all()));
}

nlohmann::json bare_diagnostic(const std::string& code, const std::string& message,
                               const std::string& file) {
  return {{"file", file.empty() ? nlohmann::json(nullptr) : nlohmann::json(file)},
          {"line", nullptr},
          {"col", nullptr},
          {"end_line", nullptr},
          {"end_col", nullptr},
          {"code", code},
          {"severity", code.starts_with("W-") ? "warning" : "error"},
          {"message", message},
          {"fix", nullptr},
          {"notes", nlohmann::json::array()}};
}

void LimitFlags::add_to(CLI::App* cmd) {
  cmd->add_option("--eval-steps", limits.steps, "evaluation step limit (default 2e7)")
      ->check(integer_range(1, kMaxInt64));
  cmd->add_option("--eval-depth", limits.depth, "call depth limit (default 10000)")
      ->check(integer_range(1, std::numeric_limits<uint32_t>::max()));
  cmd->add_option("--eval-heap", limits.heap_bytes,
                  "compile-time heap limit in bytes (default 1 GiB)")
      ->check(integer_range(1, kMaxInt64));
  cmd->add_option("--ir-nodes", limits.ir_nodes,
                  "IR nodes per function before fusion (default 100000)")
      ->check(integer_range(1, kMaxInt64));
  cmd->add_option("--variant", variants, "apply declared variants, left to right")->delimiter(',');
  cmd->add_option("--set", sets, "set a knob: KNOB=VALUE (repeatable; after the variants)");
  cmd->add_option("--point", point, "a sweep point: SWEEP:INDEX (0-based; applied last)");
}

std::function<std::vector<std::string>()> lazy_reducer_plugins() {
  auto loaded = std::make_shared<std::optional<std::vector<std::string>>>();
  return [loaded] {
    if (!*loaded) *loaded = host::PluginHost(plugin_search_path()).names(SG_PLUGIN_REDUCER);
    return **loaded;
  };
}

std::unique_ptr<runfile::Session> LimitFlags::load(
    const std::string& file, const char* verb, int& exit_code, bool compile, bool print_diagnostics,
    std::function<std::vector<std::string>()> reducer_plugins) const {
  auto s = std::make_unique<runfile::Session>(limits);
  s->reducer_plugins = std::move(reducer_plugins);
  if (!request(s->selection().request)) {
    exit_code = kUsage;
    return nullptr;
  }
  if (!load_or_report(*s, file, verb)) {
    exit_code = kUsage;
    return nullptr;
  }
  if (compile) s->compile();
  if (!print_diagnostics) return s;
  for (const Diagnostic& d : s->sink.all())
    if (!quiet() || d.severity == Severity::Error)
      std::cerr << render_human(s->sources, d, use_color_stderr());
  return s;
}

bool LimitFlags::request(select::Request& out) const {
  out.variants = variants;
  out.point = point;
  for (const std::string& s : sets) {
    size_t eq = s.find('=');
    if (eq == std::string::npos || eq == 0) {
      std::cerr << "sexpgpu: --set " << s << ": write KNOB=VALUE\n";
      return false;
    }
    out.sets.push_back({s.substr(0, eq), s.substr(eq + 1)});
  }
  return true;
}

nlohmann::json unreadable_file_json(const std::string& file) {
  std::error_code ec;
  std::string why = !std::filesystem::exists(file, ec)        ? ": no such file"
                    : std::filesystem::is_directory(file, ec) ? ": a directory, not a file"
                                                              : "";
  return nlohmann::json::array({bare_diagnostic("E-IO", "cannot read " + file + why, file)});
}

bool live_process_here(int64_t pid, const std::string& host) {
  char here[256] = {};
  gethostname(here, sizeof here - 1);
  return pid > 0 && host == here && ::kill(pid_t(pid), 0) == 0;
}

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

namespace {
std::vector<std::string> g_command_line;
}

const std::vector<std::string>& command_line() {
  return g_command_line;
}

void set_command_line(int argc, char** argv) {
  g_command_line.assign(argv, argv + argc);
}

// no-color.org: NO_COLOR set to a non-empty value turns colours off.
static bool no_color() {
  const char* v = std::getenv("NO_COLOR");
  return v != nullptr && *v != '\0';
}
bool use_color_stderr() {
  return !no_color() && isatty(2);
}
bool use_color_stdout() {
  return !no_color() && isatty(1);
}

namespace {

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
      diagonal = above;
    }
  }
  return row[b.size()];
}

}  // namespace

// The first word that is not a flag names the verb (the app's own flags
// take no values, but --log's). An unknown one is refused here, before CLI11, which would
// only list the unexpected arguments: kUsage for a word that is no verb,
// E-UNSUPPORTED for a verb of the design not built yet; -1 to go on.
int refuse_unknown_verb(const CLI::App& app, int argc, char** argv) {
  std::string verb;
  for (int i = 1; i < argc && verb.empty(); ++i)
    if (argv[i][0] != '-')
      verb = argv[i];
    else if (std::string_view(argv[i]) == "--log")
      ++i;  // the one app flag with a value: --log LEVEL
  if (verb.empty()) return -1;
  std::vector<std::string> verbs;
  for (const CLI::App* sub : app.get_subcommands({})) verbs.push_back(sub->get_name());
  if (std::find(verbs.begin(), verbs.end(), verb) != verbs.end()) return -1;
  std::string best;
  size_t best_distance = std::max<size_t>(2, verb.size() / 3) + 1;
  for (const std::string& v : verbs)
    if (size_t d = edit_distance(verb, v); d < best_distance) best = v, best_distance = d;
  std::cerr << "sexpgpu: unknown verb '" << verb << "'";
  if (!best.empty()) std::cerr << "; did you mean '" << best << "'?";
  std::cerr << "\n  the verbs:";
  for (const std::string& v : verbs) std::cerr << " " << v;
  std::cerr << "\n  sexpgpu --help says what each does\n";
  return kUsage;
}

}  // namespace sexpgpu::cli

namespace {

// Debian 12's OpenBLAS 0.3.21 does not know Intel processors newer than it
// and runs its generic "Prescott" kernels on them: an mlp step at one thread
// took 6.10 ms on the GPU machine's Sapphire Rapids Xeon, 1.63 ms with the
// AVX-512 kernels (bench/RESULTS.md). So on an Intel processor whose AVX-512
// the OS enables, the cpu device's products take those kernels, unless the
// user chose with OPENBLAS_CORETYPE (docs/devices.md). Set before any plugin
// loads: OpenBLAS reads the variable when it is loaded.
//
// And OpenBLAS starts no threads of its own: the cpu device splits products
// across its pool and calls OpenBLAS on one thread from each
// (devices/cpu/gemm.h); OpenBLAS's idle threads would only compete with it.
void choose_blas_kernels() {
  ::setenv("OPENBLAS_NUM_THREADS", "1", 1);
  if (std::getenv("OPENBLAS_CORETYPE")) return;
  __builtin_cpu_init();
  if (__builtin_cpu_is("intel") && __builtin_cpu_supports("avx512f") &&
      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl"))
    ::setenv("OPENBLAS_CORETYPE", "SkylakeX", 0);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace sexpgpu;
  choose_blas_kernels();
  return run_with_big_stack([&]() -> int {
    CLI::App app{"SexpGPU: one Lisp file per ML experiment, checked, compiled and trained."};
    app.require_subcommand(0, 1);
    bool version = false;
    app.add_flag("--version", version,
                 "print the version, the plugin ABI version and the IR version");
    bool include_dir = false;
    app.add_flag("--include-dir", include_dir,
                 "print the directory holding sexpgpu/plugin.h, for plugin authors");
    int exit_code = 0;
    cli::set_command_line(argc, argv);
    cli::install_s3_data();  // s3:// data sources through the process's S3 client
    cli::add_check(app, exit_code);
    cli::add_watch(app, exit_code);
    cli::add_eval(app, exit_code);
    cli::add_ir(app, exit_code);
    cli::add_explain(app, exit_code);
    cli::add_diff(app, exit_code);
    cli::add_checkpoint(app, exit_code);
    cli::add_status(app, exit_code);
    cli::add_variants(app, exit_code);
    cli::add_new(app, exit_code);
    cli::add_annotate(app, exit_code);
    cli::add_report(app, exit_code);
    cli::add_run(app, exit_code);
    cli::add_sweep(app, exit_code);
    cli::add_bundle(app, exit_code);
    cli::add_docs(app, exit_code);
    cli::add_fmt(app, exit_code);
    cli::add_doctor(app, exit_code);
    cli::add_quiet(app);
    cli::add_log(app);
    if (int refused = cli::refuse_unknown_verb(app, argc, argv); refused >= 0) return refused;
    try {
      app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
      return app.exit(e);
    } catch (const CLI::CallForAllHelp& e) {
      return app.exit(e);
    } catch (const CLI::ParseError& e) {
      app.exit(e);
      return cli::kUsage;
    } catch (const std::exception& e) {
      std::cerr << "sexpgpu: internal error: " << e.what() << "\n";
      return 70;
    }
    if (version) {
      // The IR's JSON version (ir::kIrVersion) arrives with the IR.
      std::cout << "sexpgpu " SEXPGPU_VERSION " (plugin ABI " << SG_ABI_MAJOR << "." << SG_ABI_MINOR
                << ", IR " << ir::kIrVersion << ")\n";
      return 0;
    }
    if (include_dir) {
      std::string dir = host::include_dir();
      if (dir.empty()) {
        std::cerr << "sexpgpu: sexpgpu/plugin.h is not installed beside this binary\n";
        return 3;
      }
      std::cout << dir << "\n";
      return 0;
    }
    if (app.get_subcommands().empty()) {
      std::cerr << app.help();
      return cli::kUsage;
    }
    return exit_code;
  });
}
