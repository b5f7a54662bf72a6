// The core's log over spdlog (log.h): the "sexpgpu" logger, a standard
// error sink, and the "[  0.123s debug] " prefix.
#include "util/log.h"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <memory>
#include <mutex>

namespace sexpgpu::log {

namespace {

// Taken when the process starts (static initialisation), so the seconds a
// line shows count the whole start: plugin loading, reading the file.
const std::chrono::steady_clock::time_point g_start = std::chrono::steady_clock::now();
std::atomic<Level> g_level{kDefaultLevel};

spdlog::level::level_enum to_spdlog(Level l) {
  switch (l) {
    case Level::Trace: return spdlog::level::trace;
    case Level::Debug: return spdlog::level::debug;
    case Level::Info: return spdlog::level::info;
    case Level::Warn: return spdlog::level::warn;
    case Level::Error: return spdlog::level::err;
    case Level::Off: return spdlog::level::off;
  }
  return spdlog::level::off;
}

// "%*": the seconds since start and our level name (spdlog's own says
// "warning" and "critical"; ours are the names --log takes).
class ElapsedAndLevel final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&,
              spdlog::memory_buf_t& dest) override {
    // The logger is synchronous: formatting happens as the line is logged.
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - g_start).count();
    const char* name = "error";
    switch (msg.level) {
      case spdlog::level::trace: name = "trace"; break;
      case spdlog::level::debug: name = "debug"; break;
      case spdlog::level::info: name = "info"; break;
      case spdlog::level::warn: name = "warn"; break;
      default: break;
    }
    fmt::format_to(std::back_inserter(dest), "{:7.3f}s {}", s, name);
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<ElapsedAndLevel>();
  }
};

spdlog::logger& logger() {
  static std::shared_ptr<spdlog::logger> the = [] {
    auto sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
    auto formatter = std::make_unique<spdlog::pattern_formatter>();
    formatter->add_flag<ElapsedAndLevel>('*').set_pattern("[%*] %v");
    sink->set_formatter(std::move(formatter));
    auto l = std::make_shared<spdlog::logger>("sexpgpu", sink);
    l->set_level(to_spdlog(g_level.load()));
    l->flush_on(spdlog::level::trace);  // a crash loses no line
    return l;
  }();
  return *the;
}

}  // namespace

std::optional<Level> parse_level(std::string_view name) {
  static constexpr std::pair<std::string_view, Level> kNames[] = {
      {"trace", Level::Trace}, {"debug", Level::Debug}, {"info", Level::Info},
      {"warn", Level::Warn},   {"error", Level::Error}, {"off", Level::Off}};
  for (const auto& [n, l] : kNames)
    if (n == name) return l;
  return std::nullopt;
}

const char* level_name(Level level) {
  switch (level) {
    case Level::Trace: return "trace";
    case Level::Debug: return "debug";
    case Level::Info: return "info";
    case Level::Warn: return "warn";
    case Level::Error: return "error";
    case Level::Off: return "off";
  }
  return "off";
}

LevelChoice resolve_level(const std::optional<std::string>& flag, const char* env,
                          const std::optional<std::string>& config) {
  LevelChoice choice;
  bool decided = false;
  // The sources in order of precedence: the first that names a level wins;
  // one that names none is skipped with a warning (a bad environment must
  // not stop a run).
  auto consider = [&](const char* source, const std::optional<std::string>& value) {
    if (decided || !value) return;
    if (std::optional<Level> l = parse_level(*value)) {
      choice.level = *l;
      choice.source = source;
      decided = true;
    } else if (choice.warning.empty()) {
      choice.warning =
          std::string(source) + "=" + *value + " is not a log level (" + kLevelNames + "); skipped";
    }
  };
  consider("--log", flag);
  consider("SEXPGPU_LOG", env && *env ? std::optional<std::string>(env) : std::nullopt);
  consider("[log] level", config);
  return choice;
}

void init(Level level) {
  g_level = level;
  logger().set_level(to_spdlog(level));
}

Level level() {
  return g_level.load();
}

bool enabled(Level l) {
  return l != Level::Off && l >= g_level.load();
}

void write(Level level, std::string_view message) {
  if (!enabled(level)) return;
  logger().log(to_spdlog(level), "{}", message);
}

}  // namespace sexpgpu::log
