// The tensorboard sink (sinks/tensorboard/): the TFRecord framing against
// known CRC-32C values and a record TensorBoard's own writer wrote, the
// writer thread (records visible without a flush, a stuck disk never
// blocking the caller, a full disk reported), and, where the plugin was
// built, the plugin through its C table: the file's name and records, and
// each error's code and message. tests/e2e/tensorboard_sink.py reads a real
// run's file back with TensorBoard's reader.
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "catch.hpp"
#include "host/plugin_host.h"
#include "sexpgpu/sdk/errors.h"
#include "tensorboard/event_file_writer.h"
#include "tensorboard/tfrecord.h"

namespace {

namespace fs = std::filesystem;
namespace tb = sexpgpu::sinks::tensorboard;
using Clock = std::chrono::steady_clock;

fs::path temp_dir(const std::string& tag) {
  fs::path d =
      fs::temp_directory_path() / ("sexpgpu-tensorboard-" + tag + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Polls `done` for up to 5 s: the writer thread gets there on its own.
template <class F>
bool eventually(F done) {
  auto until = Clock::now() + std::chrono::seconds(5);
  while (!done()) {
    if (Clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

uint32_t le32(const std::string& s, size_t at) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(s[at + size_t(i)]);
  return v;
}

uint64_t le64(const std::string& s, size_t at) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(s[at + size_t(i)]);
  return v;
}

// The payloads of a file of TFRecords; every CRC checked, no bytes left over.
std::vector<std::string> records(const std::string& file) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at < file.size()) {
    REQUIRE(file.size() - at >= 16);
    uint64_t len = le64(file, at);
    REQUIRE(le32(file, at + 8) == tb::masked_crc32c(file.substr(at, 8)));
    REQUIRE(file.size() - at - 16 >= len);
    std::string data = file.substr(at + 12, len);
    REQUIRE(le32(file, at + 12 + len) == tb::masked_crc32c(data));
    out.push_back(data);
    at += 16 + len;
  }
  return out;
}

// Event{wall_time, file_version "brain.Event:2"} as protobuf writes it:
// field 1 (fixed64, tag 0x09), field 3 (length-delimited, tag 0x1a).
std::string file_version_payload(double wall_time) {
  std::string out = "\x09";
  char bytes[8];
  std::memcpy(bytes, &wall_time, 8);  // little-endian on every target we build
  out.append(bytes, 8);
  return out + "\x1a\x0d" + "brain.Event:2";
}

}  // namespace

TEST_CASE("CRC-32C matches RFC 3720's test vectors and the catalogue's check value",
          "[tensorboard]") {
  std::string inc, dec;
  for (int i = 0; i < 32; ++i) {
    inc.push_back(char(i));
    dec.push_back(char(31 - i));
  }
  // RFC 3720 (iSCSI), appendix B.4.
  CHECK(tb::crc32c(std::string(32, '\0')) == 0x8A9136AAu);
  CHECK(tb::crc32c(std::string(32, '\xff')) == 0x62A8AB43u);
  CHECK(tb::crc32c(inc) == 0x46DD794Eu);
  CHECK(tb::crc32c(dec) == 0x113FDB5Cu);
  CHECK(tb::crc32c("123456789") == 0xE3069283u);
  // The mask, as TensorBoard's masked_crc32c computes it.
  CHECK(tb::masked_crc32c("") == 0xA282EAD8u);
  CHECK(tb::masked_crc32c("123456789") == 0xC78AB0E5u);
  CHECK(tb::masked_crc32c(inc) == 0x951F7892u);
}

TEST_CASE("a record is framed byte for byte as TensorBoard's own writer frames it",
          "[tensorboard]") {
  // Event(wall_time=1764672000.25, file_version="brain.Event:2") written by
  // tensorboard 2.21's tensorboard.summary.writer.record_writer.RecordWriter.
  const std::string payload = file_version_payload(1764672000.25);
  const std::string theirs(
      "\x18\x00\x00\x00\x00\x00\x00\x00\xa3\x7f\x4b\x22\x09\x00\x00\x10\x80\xb0\x4b\xda\x41\x1a"
      "\x0d\x62\x72\x61\x69\x6e\x2e\x45\x76\x65\x6e\x74\x3a\x32\xed\x99\x0e\x63",
      40);
  CHECK(payload == theirs.substr(12, 24));
  CHECK(tb::tfrecord(payload) == theirs);
  CHECK(records(tb::tfrecord(payload) + tb::tfrecord("")) == std::vector<std::string>{payload, ""});
}

TEST_CASE("the writer thread puts records on disk without a flush", "[tensorboard]") {
  fs::path dir = temp_dir("writer");
  fs::path path = dir / "events";
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
  REQUIRE(fd >= 0);
  tb::EventFileWriter writer(path.string(), fd, 1 << 20);
  std::string expected;
  for (int i = 0; i < 50; ++i) {
    std::string record = tb::tfrecord("record " + std::to_string(i));
    CHECK(writer.append(record));
    expected += record;
  }
  CHECK(eventually([&] { return fs::file_size(path) == expected.size(); }));
  CHECK(slurp(path) == expected);
  writer.close();
  writer.close();  // later calls do nothing
  CHECK(writer.dropped_records() == 0);
  fs::remove_all(dir);
}

TEST_CASE("a disk that does not keep up drops records instead of blocking the run",
          "[tensorboard]") {
  int pipe_fds[2];
  REQUIRE(::pipe(pipe_fds) == 0);
  const size_t limit = 16 << 10;
  auto writer = std::make_unique<tb::EventFileWriter>("a pipe nobody reads", pipe_fds[1], limit);
  const std::string record = tb::tfrecord(std::string(1000, 'x'));
  // The pipe holds what its buffer does (64 KiB on Linux with 4 KiB pages),
  // the queue 16 KiB; 500 records more than both are dropped.
  const int pipe_bytes = ::fcntl(pipe_fds[1], F_GETPIPE_SZ);
  REQUIRE(pipe_bytes > 0);
  const size_t total = (size_t(pipe_bytes) + limit) / record.size() + 500;
  auto start = Clock::now();
  size_t kept = 0;
  for (size_t i = 0; i < total; ++i) kept += writer->append(record) ? 1 : 0;
  CHECK(Clock::now() - start < std::chrono::seconds(2));
  CHECK(writer->dropped_records() == total - kept);
  CHECK(writer->dropped_bytes() == (total - kept) * record.size());
  CHECK(writer->dropped_records() >= 499);  // a record may be half in the pipe

  // The disk catches up: what was kept arrives whole, in order.
  std::string read_back;
  std::thread reader([&] {
    char buf[4096];
    ssize_t n;
    while ((n = ::read(pipe_fds[0], buf, sizeof buf)) > 0) read_back.append(buf, size_t(n));
  });
  writer->close();  // fsync's EINVAL on a pipe is no failure
  writer.reset();
  reader.join();
  ::close(pipe_fds[0]);
  CHECK(read_back.size() == kept * record.size());
  CHECK(records(read_back).size() == kept);
}

TEST_CASE("a full disk is an SG_ERROR_IO on the next call", "[tensorboard]") {
  int fd = ::open("/dev/full", O_WRONLY);
  if (fd < 0) {
    WARN("no /dev/full: the full-disk case is not checked");
    return;
  }
  tb::EventFileWriter writer("/dev/full", fd, 1 << 20);
  REQUIRE(writer.append(tb::tfrecord("first")));
  sg_error_code code = SG_ERROR_UNKNOWN;
  std::string message;
  auto failed = [&] {
    try {
      writer.check();
      return false;
    } catch (const sexpgpu::sdk::Failure& f) {
      code = f.code();
      message = f.what();
      return true;
    }
  };
  REQUIRE(eventually(failed));
  CHECK(code == SG_ERROR_IO);
  CHECK(message == "cannot write /dev/full: No space left on device");
  CHECK_THROWS_AS(writer.append(tb::tfrecord("second")), sexpgpu::sdk::Failure);
  CHECK_THROWS_AS(writer.close(), sexpgpu::sdk::Failure);
}

#if SEXPGPU_TEST_HAVE_TENSORBOARD
namespace {

const std::string kOpen =
    R"({"kind":"open","time":"2025-03-01T10:00:00Z","sexpgpu":"0.1.0","slug":"mlp-small"})";

struct Plugin {
  sexpgpu::host::PluginHost host{{{SEXPGPU_BUILD_PLUGIN_DIR, "build tree"}}};
  const sg_sink_api* api = host.sink("tensorboard");
  Plugin() { REQUIRE(api); }

  sg_error* open(const std::string& run_dir, const std::string& arg, sg_sink** out,
                 const std::string& open_event = kOpen) const {
    return api->open(run_dir.data(), run_dir.size(), open_event.data(), open_event.size(),
                     arg.data(), arg.size(), out);
  }
  sg_error* event(sg_sink* sink, const std::string& line) const {
    return api->event(sink, line.data(), line.size());
  }
  std::pair<sg_error_code, std::string> take(sg_error* err) const {
    REQUIRE(err);
    sg_error_code code = api->error_code(err);
    return {code, sexpgpu::host::take_error(api, err)};
  }
};

std::vector<fs::path> event_files(const fs::path& dir) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().rfind("events.out.tfevents.", 0) == 0) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

TEST_CASE("the plugin writes one named event file per session", "[tensorboard]") {
  Plugin p;
  const sexpgpu::host::PluginRecord* rec = p.host.find("tensorboard");
  REQUIRE(rec);
  CHECK(rec->kind == "sink");
  CHECK(rec->version == "1.0.0");

  fs::path run = temp_dir("plugin");
  sg_sink* sink = nullptr;
  REQUIRE(p.open(run.string(), "tb", &sink) == nullptr);
  for (
      const char* line :
      {R"({"kind":"step","time":"2025-03-01T10:00:01.5Z","step":1,"metrics":{"train/loss":2.5,"lr/main":0.001}})",
       R"({"kind":"diag","time":"2025-03-01T10:00:02Z","step":1,"name":"param-rms","values":{"w":1}})",
       R"({"kind":"eval","time":"2025-03-01T10:00:03Z","step":1,"name":"val","metrics":{"val/acc":0.5,"val/f1":null}})",
       R"({"kind":"step","time":"2025-03-01T10:00:04Z","step":2,"metrics":{"grad-norm":null}})",
       R"({"kind":"close","time":"2025-03-01T10:00:05Z","state":"finished"})"})
    REQUIRE(p.event(sink, line) == nullptr);
  REQUIRE(p.api->flush(sink) == nullptr);
  REQUIRE(p.api->close(sink) == nullptr);

  std::vector<fs::path> files = event_files(run / "tb");
  REQUIRE(files.size() == 1);
  // events.out.tfevents.SECONDS.HOST.PID.N, SECONDS from the open event.
  std::regex name(R"(events\.out\.tfevents\.1740823200\.[A-Za-z0-9._-]+\.)" +
                  std::to_string(::getpid()) + R"(\.0)");
  CHECK(std::regex_match(files[0].filename().string(), name));
  std::vector<std::string> payloads = records(slurp(files[0]));
  // file_version, the open text, step 1, eval; the diag, the close and a
  // step of nulls only write nothing.
  REQUIRE(payloads.size() == 4);
  CHECK(payloads[0] == file_version_payload(1740823200.0));
  CHECK(payloads[1].find("\"slug\": \"mlp-small\"") != std::string::npos);
  CHECK(payloads[1].find("text") != std::string::npos);
  CHECK(payloads[2].find("train/loss") != std::string::npos);
  CHECK(payloads[3].find("val/acc") != std::string::npos);
  CHECK(payloads[3].find("val/f1") == std::string::npos);

  SECTION("a resume starts with SessionLog START at its first step run again") {
    std::string resumed =
        R"({"kind":"open","time":"2025-03-01T10:00:00Z","resumed_from":{"step":10,"checkpoint":"c"}})";
    REQUIRE(p.open(run.string(), "tb", &sink, resumed) == nullptr);
    REQUIRE(p.api->close(sink) == nullptr);
    files = event_files(run / "tb");
    REQUIRE(files.size() == 2);
    payloads = records(slurp(files[1]));
    REQUIRE(payloads.size() == 3);
    // Event{wall_time, step 11 (field 2, tag 0x10), session_log (field 7,
    // tag 0x3a) {status START (field 1 = 1)}}.
    std::string start =
        file_version_payload(1740823200.0).substr(0, 9) + "\x10\x0b\x3a\x02\x08\x01";
    CHECK(payloads[1] == start);
    CHECK(payloads[2].substr(9, 2) == "\x10\x0a");  // the open text at step 10
  }
  SECTION("a second session in the same second gets the next name") {
    REQUIRE(p.open(run.string(), (run / "tb").string(), &sink) == nullptr);
    REQUIRE(p.api->close(sink) == nullptr);
    files = event_files(run / "tb");
    REQUIRE(files.size() == 2);
    CHECK(files[1].string() == files[0].string().substr(0, files[0].string().size() - 1) + "1");
  }
  fs::remove_all(run);
}

TEST_CASE("the plugin's errors are error objects", "[tensorboard]") {
  Plugin p;
  fs::path run = temp_dir("plugin-errors");
  sg_sink* sink = nullptr;

  auto [code, message] = p.take(p.open("", "", &sink));
  CHECK(code == SG_ERROR_INVALID_ARGUMENT);
  CHECK(message ==
        "tensorboard: no run directory and no --sink tensorboard:DIR to write the event file in");
  CHECK(sink == nullptr);

  std::ofstream(run / "blocker") << "a file";
  std::tie(code, message) = p.take(p.open(run.string(), "blocker/tb", &sink));
  CHECK(code == SG_ERROR_IO);
  CHECK(message == "tensorboard: cannot create directory " + (run / "blocker/tb").string() +
                       ": Not a directory");

  std::tie(code, message) = p.take(p.open(run.string(), "", &sink, "[1]"));
  CHECK(code == SG_ERROR_INVALID_ARGUMENT);
  CHECK(message == "tensorboard: an event must be one JSON object, got: [1]");

  REQUIRE(p.open(run.string(), "", &sink) == nullptr);
  std::tie(code, message) =
      p.take(p.event(sink, R"({"kind":"step","time":"2025-03-01T10:00:01Z","step":-1})"));
  CHECK(code == SG_ERROR_INVALID_ARGUMENT);
  CHECK(message ==
        "tensorboard: a step event needs a `step`, an integer from 0 to 2^63-1, got: -1");
  std::tie(code, message) =
      p.take(p.event(sink, R"({"kind":"eval","time":"yesterday","step":3,"metrics":{}})"));
  CHECK(code == SG_ERROR_INVALID_ARGUMENT);
  CHECK(message ==
        "tensorboard: an eval event needs an RFC 3339 `time`, got: "
        R"({"kind":"eval","time":"yesterday","step":3,"metrics":{}})");
  std::tie(code, message) = p.take(
      p.event(sink, R"({"kind":"step","time":"2025-03-01T10:00:01Z","step":3,"metrics":[1]})"));
  CHECK(code == SG_ERROR_INVALID_ARGUMENT);
  CHECK(message == "tensorboard: an event's `metrics` must be an object, got: [1]");
  // The sink stays usable after a refused event.
  CHECK(p.event(sink, R"({"kind":"step","time":"2025-03-01T10:00:01+02:00","step":3})") == nullptr);
  CHECK(p.api->close(sink) == nullptr);
  fs::remove_all(run);
}
#endif
