// The core's log (cli.md, "Streams and formats"; docs/cli.md, "Logging"):
// one spdlog logger named "sexpgpu" writing to standard error, never to
// standard output, each line "[  0.123s debug] MESSAGE" with the seconds
// since the process started. The level comes from --log, SEXPGPU_LOG or the
// default (warn: a default run prints nothing new); resolve_level says
// which wins. Levels by use: info for phases and their times, debug for
// detail, trace for each item; nothing per training step above trace.
//
// Messages are fmt format strings, formatted only when their level is on:
//   log::info("compile: staged {} functions in {:.1f} ms", n, ms);
// Never log a secret (an AWS key, a token): say that one is set, not what.
#pragma once

#include <fmt/format.h>

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace sexpgpu::log {

enum class Level { Trace, Debug, Info, Warn, Error, Off };

// "trace debug info warn error off": the names --log and SEXPGPU_LOG take.
inline constexpr const char* kLevelNames = "trace debug info warn error off";
constexpr Level kDefaultLevel = Level::Warn;

std::optional<Level> parse_level(std::string_view name);
const char* level_name(Level level);

// The level in force and what set it ("--log", "SEXPGPU_LOG", "default"),
// with a warning to print when a setting was not a level (and was skipped).
struct LevelChoice {
  Level level = kDefaultLevel;
  std::string source = "default";
  std::string warning;
};

// What wins over what (cli.md): the flag, then the environment, then the
// config file's `[log] level` (read later, by the verbs that read the
// config file: `config`, nullopt until then), then the default. `flag` is
// already validated by the CLI; `env` is SEXPGPU_LOG's value (null when
// unset); the config file's value is validated when the file is read.
LevelChoice resolve_level(const std::optional<std::string>& flag, const char* env,
                          const std::optional<std::string>& config = std::nullopt);

// Sets the logger's level (creating the logger at the first call).
void init(Level level);
Level level();
bool enabled(Level level);

// One line at `level` (no-op when the level is off).
void write(Level level, std::string_view message);

template <class... Args>
void at(Level level, fmt::format_string<Args...> format, Args&&... args) {
  if (enabled(level)) write(level, fmt::format(format, std::forward<Args>(args)...));
}
template <class... Args>
void trace(fmt::format_string<Args...> format, Args&&... args) {
  at(Level::Trace, format, std::forward<Args>(args)...);
}
template <class... Args>
void debug(fmt::format_string<Args...> format, Args&&... args) {
  at(Level::Debug, format, std::forward<Args>(args)...);
}
template <class... Args>
void info(fmt::format_string<Args...> format, Args&&... args) {
  at(Level::Info, format, std::forward<Args>(args)...);
}
template <class... Args>
void warn(fmt::format_string<Args...> format, Args&&... args) {
  at(Level::Warn, format, std::forward<Args>(args)...);
}
template <class... Args>
void error(fmt::format_string<Args...> format, Args&&... args) {
  at(Level::Error, format, std::forward<Args>(args)...);
}

// Milliseconds since construction, for "took N ms" lines.
class Stopwatch {
 public:
  double ms() const {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_)
        .count();
  }

 private:
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

}  // namespace sexpgpu::log
