// The stock sinks' shared support: paths, the event's kind, and a stdio
// file whose failures carry errno.
#include "common/sink_support.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <system_error>

namespace sexpgpu::sinks {
namespace {

// Stops the SAX parse at the top-level "kind"'s value. Parse errors and
// every other value just end the search.
class KindFinder : public nlohmann::json_sax<nlohmann::json> {
 public:
  std::string kind;

  bool null() override { return value(); }
  bool boolean(bool) override { return value(); }
  bool number_integer(number_integer_t) override { return value(); }
  bool number_unsigned(number_unsigned_t) override { return value(); }
  bool number_float(number_float_t, const string_t&) override { return value(); }
  bool string(string_t& s) override {
    if (depth_ == 1 && key_is_kind_) {
      kind = s;
      return false;
    }
    return value();
  }
  bool binary(binary_t&) override { return value(); }
  bool start_object(std::size_t) override { return enter(); }
  bool key(string_t& k) override {
    key_is_kind_ = depth_ == 1 && k == "kind";
    return true;
  }
  bool end_object() override { return leave(); }
  bool start_array(std::size_t) override { return enter(); }
  bool end_array() override { return leave(); }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    return false;
  }

 private:
  bool value() {
    key_is_kind_ = false;
    return true;
  }
  bool enter() {
    ++depth_;
    key_is_kind_ = false;
    return true;
  }
  bool leave() {
    --depth_;
    return true;
  }
  int depth_ = 0;
  bool key_is_kind_ = false;
};

}  // namespace

void fail_io(const std::string& what, const std::string& path, int err) {
  throw Failure(SG_ERROR_IO, what + " " + path + ": " + std::strerror(err));
}

std::string resolve_path(std::string_view run_dir, std::string_view arg) {
  std::filesystem::path p(arg);
  if (p.is_absolute() || run_dir.empty()) return p.string();
  return (std::filesystem::path(run_dir) / p).string();
}

void make_directories(const std::string& dir) {
  if (dir.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) fail_io("cannot create directory", dir, ec.value());
}

std::string event_kind(std::string_view event_json) {
  KindFinder finder;
  nlohmann::json::sax_parse(event_json.begin(), event_json.end(), &finder);
  return finder.kind;
}

bool buffered_kind(std::string_view kind) {
  return kind == "step" || kind == "diag";
}

OutputFile::OutputFile(std::string path, const char* mode) : path_(std::move(path)) {
  file_ = std::fopen(path_.c_str(), mode);
  if (!file_) fail_io("cannot open", path_, errno);
}

OutputFile::~OutputFile() {
  if (file_) std::fclose(file_);
}

void OutputFile::write(std::string_view bytes) {
  if (std::fwrite(bytes.data(), 1, bytes.size(), file_) != bytes.size())
    fail_io("cannot write", path_, errno);
}

void OutputFile::flush() {
  if (std::fflush(file_) != 0) fail_io("cannot flush", path_, errno);
}

void OutputFile::close() {
  if (!file_) return;
  std::FILE* f = file_;
  file_ = nullptr;
  int err = 0;
  if (std::fflush(f) != 0 || ::fsync(fileno(f)) != 0) err = errno;
  if (std::fclose(f) != 0 && err == 0) err = errno;
  if (err) fail_io("cannot close", path_, err);
}

nlohmann::ordered_json parse_event(std::string_view line) {
  nlohmann::ordered_json event =
      nlohmann::ordered_json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (event.is_discarded())
    throw Failure(SG_ERROR_INVALID_ARGUMENT,
                  "an event is not JSON: " + std::string(line.substr(0, 80)));
  if (!event.is_object())
    throw Failure(SG_ERROR_INVALID_ARGUMENT,
                  "an event must be one JSON object, got: " + std::string(line.substr(0, 80)));
  return event;
}

}  // namespace sexpgpu::sinks
