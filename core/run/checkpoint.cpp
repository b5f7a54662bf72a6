// Writing, listing and loading checkpoint directories (see checkpoint.h).
#include "run/checkpoint.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "run/crc32.h"

namespace sexpgpu::run {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

template <class T>
using Result = ir::Result<T>;

std::string errno_text() {
  return std::strerror(errno);
}

// Makes a directory's entries (creations, renames, removals) durable.
std::string fsync_dir(const fs::path& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return dir.string() + ": cannot open to sync: " + errno_text();
  bool ok = ::fsync(fd) == 0;
  std::string why = ok ? "" : dir.string() + ": cannot sync: " + errno_text();
  ::close(fd);
  return why;
}

std::string write_synced(const fs::path& path, const std::string& text) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return path.string() + ": cannot create: " + errno_text();
  size_t off = 0;
  while (off < text.size()) {
    ssize_t n = ::write(fd, text.data() + off, text.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      std::string why = path.string() + ": cannot write: " + errno_text();
      ::close(fd);
      return why;
    }
    off += static_cast<size_t>(n);
  }
  bool ok = ::fsync(fd) == 0;
  std::string why = ok ? "" : path.string() + ": cannot sync: " + errno_text();
  ::close(fd);
  return why;
}

// Entries whose names start with '.': unfinished writes and removals.
void remove_leftovers(const fs::path& dir) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    std::string name = e.path().filename().string();
    if (name.starts_with(".tmp-step-") || name.starts_with(".trash-step-") ||
        name.starts_with(".latest.tmp"))
      fs::remove_all(e.path(), ec);
  }
}

uint64_t files_bytes(const fs::path& dir) {
  uint64_t total = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.is_regular_file(ec)) total += e.file_size(ec);
  return total;
}

// Moves tmp to final; an existing final (the same step written again after
// a resume) is exchanged atomically and then deleted.
std::string install(const fs::path& tmp, const fs::path& final_dir) {
  if (std::rename(tmp.c_str(), final_dir.c_str()) == 0) return "";
  if (errno != ENOTEMPTY && errno != EEXIST)
    return final_dir.string() + ": cannot rename the new checkpoint into place: " + errno_text();
  if (::renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, final_dir.c_str(), RENAME_EXCHANGE) != 0)
    return final_dir.string() + ": cannot replace the checkpoint of the same step: " + errno_text();
  std::error_code ec;
  fs::remove_all(tmp, ec);  // now the old one; a crash leaves it to the next write
  return "";
}

std::string replace_latest(const fs::path& dir, const std::string& target) {
  fs::path tmp = dir / (".latest.tmp." + std::to_string(::getpid()));
  ::unlink(tmp.c_str());
  if (::symlink(target.c_str(), tmp.c_str()) != 0)
    return tmp.string() + ": cannot create symlink: " + errno_text();
  if (std::rename(tmp.c_str(), (dir / kLatestLink).c_str()) != 0)
    return (dir / kLatestLink).string() + ": cannot replace: " + errno_text();
  return "";
}

// :keep N: the new checkpoint and the N-1 highest steps below it stay.
// Checkpoints above it (a timeline abandoned by resuming from an earlier
// one) are not older and are left alone.
Result<std::vector<std::string>> apply_keep(const fs::path& dir, int64_t step, int64_t keep) {
  Result<std::vector<CheckpointInfo>> all = list_checkpoints(dir.string());
  if (!all) return Result<std::vector<std::string>>::failure(all.error());
  std::vector<CheckpointInfo> below;
  for (const CheckpointInfo& c : *all)
    if (c.step < step) below.push_back(c);
  std::vector<std::string> removed;
  int64_t room = std::max<int64_t>(keep - 1, 0);
  for (size_t i = 0; i + room < below.size(); ++i) {
    fs::path trash = dir / (".trash-" + below[i].name);
    if (std::rename(below[i].path.c_str(), trash.c_str()) != 0)
      return Result<std::vector<std::string>>::failure(below[i].path +
                                                       ": cannot remove: " + errno_text());
    std::error_code ec;
    fs::remove_all(trash, ec);
    removed.push_back(below[i].name);
  }
  return removed;
}

std::string write_files(const fs::path& tmp, const CheckpointContent& c,
                        std::optional<WriteStage> crash_after) {
  auto crashed = [&](WriteStage s) { return crash_after && *crash_after == s; };
  const std::string simulated = "simulated crash (tests only)";
  Metadata pt = {{"format", "pt"}};  // what transformers looks for; no time, host or path
  // checksums.json from the bytes in memory, summed while they are written
  // (compute_checksums, which reads the files back, gives the same).
  json sums = {{"algorithm", "crc32"}, {"files", json::object()}, {"tensors", json::object()}};
  auto record = [&](const char* file, uint64_t bytes, const SafetensorsSums& s) {
    sums["files"][file] = {{"bytes", bytes}, {"crc32", crc32_hex(s.file)}};
    json per = json::object();
    for (const auto& [name, crc] : s.tensors) per[name] = crc32_hex(crc);
    sums["tensors"][file] = per;
  };
  SafetensorsSums model_sums, optimizer_sums;
  Result<uint64_t> m = write_safetensors((tmp / kModelFile).string(), c.params, pt, &model_sums);
  if (!m) return m.error();
  record(kModelFile, *m, model_sums);
  if (crashed(WriteStage::kModel)) return simulated;
  if (c.optimizer_ready)
    if (std::string e = c.optimizer_ready(); !e.empty()) return e;
  Result<uint64_t> o =
      write_safetensors((tmp / kOptimizerFile).string(), c.optimizer, pt, &optimizer_sums);
  if (!o) return o.error();
  record(kOptimizerFile, *o, optimizer_sums);
  if (crashed(WriteStage::kOptimizer)) return simulated;
  json state = c.state.is_null() ? json::object() : c.state;
  state["step"] = c.step;
  const std::string state_text = state.dump(2) + "\n";
  if (std::string e = write_synced(tmp / kStateFile, state_text); !e.empty()) return e;
  sums["files"][kStateFile] = {{"bytes", state_text.size()},
                               {"crc32", crc32_hex(std::as_bytes(std::span(state_text)))}};
  if (crashed(WriteStage::kState)) return simulated;
  if (std::string e = write_synced(tmp / kChecksumsFile, sums.dump(2) + "\n"); !e.empty()) return e;
  if (crashed(WriteStage::kChecksums)) return simulated;
  return fsync_dir(tmp);
}

}  // namespace

std::string checkpoint_dir_name(int64_t step) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "step-%08lld", static_cast<long long>(step));
  return buf;
}

std::optional<int64_t> parse_checkpoint_dir_name(std::string_view name) {
  if (!name.starts_with("step-") || name.size() < 13 || name.size() > 23) return std::nullopt;
  int64_t step = 0;
  for (char c : name.substr(5)) {
    if (c < '0' || c > '9') return std::nullopt;
    step = step * 10 + (c - '0');
  }
  return step;
}

std::string optimizer_tensor_name(const std::string& param_path, const std::string& state) {
  return param_path + "/" + state;
}

Result<CheckpointWritten> write_checkpoint(const std::string& checkpoints_dir,
                                           const CheckpointContent& content,
                                           const CheckpointOptions& options) {
  using R = Result<CheckpointWritten>;
  auto start = std::chrono::steady_clock::now();
  if (content.step < 0) return R::failure("a checkpoint's step must be >= 0");
  if (!content.state.is_null() && !content.state.is_object())
    return R::failure("a checkpoint's state must be a JSON object");
  if (content.state.contains("step") && content.state["step"] != content.step)
    return R::failure("state.json's step " + content.state["step"].dump() +
                      " is not the checkpoint's step " + std::to_string(content.step));
  fs::path dir(checkpoints_dir);
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    fs::create_directories(dir, ec);
    if (ec) return R::failure(checkpoints_dir + ": cannot create: " + ec.message());
    if (std::string e = fsync_dir(dir.parent_path().empty() ? "." : dir.parent_path()); !e.empty())
      return R::failure(e);
  }
  remove_leftovers(dir);
  std::string name = checkpoint_dir_name(content.step);
  fs::path tmp = dir / (".tmp-step-" + std::to_string(content.step));
  if (!fs::create_directory(tmp, ec))
    return R::failure(tmp.string() +
                      ": cannot create: " + (ec ? ec.message() : std::string("it exists")));
  if (std::string e = write_files(tmp, content, options.crash_after); !e.empty())
    return R::failure(e);
  auto crashed = [&](WriteStage s) { return options.crash_after && *options.crash_after == s; };
  fs::path final_dir = dir / name;
  if (std::string e = install(tmp, final_dir); !e.empty()) return R::failure(e);
  if (std::string e = fsync_dir(dir); !e.empty()) return R::failure(e);
  if (crashed(WriteStage::kRenamed)) return R::failure("simulated crash (tests only)");
  if (std::string e = replace_latest(dir, name); !e.empty()) return R::failure(e);
  if (std::string e = fsync_dir(dir); !e.empty()) return R::failure(e);
  if (crashed(WriteStage::kLatest)) return R::failure("simulated crash (tests only)");
  CheckpointWritten out;
  out.path = final_dir.string();
  out.bytes = files_bytes(final_dir);
  if (options.keep) {
    Result<std::vector<std::string>> removed = apply_keep(dir, content.step, *options.keep);
    if (!removed) return R::failure(removed.error());
    out.removed = *removed;
    if (std::string e = fsync_dir(dir); !e.empty()) return R::failure(e);
  }
  Result<std::vector<CheckpointInfo>> left = list_checkpoints(checkpoints_dir);
  if (left)
    for (const CheckpointInfo& c : *left) out.kept.push_back(c.name);
  out.ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return out;
}

Result<std::vector<CheckpointInfo>> list_checkpoints(const std::string& checkpoints_dir) {
  using R = Result<std::vector<CheckpointInfo>>;
  std::vector<CheckpointInfo> out;
  std::error_code ec;
  if (!fs::exists(checkpoints_dir, ec)) return out;
  fs::directory_iterator it(checkpoints_dir, ec);
  if (ec) return R::failure(checkpoints_dir + ": cannot list: " + ec.message());
  for (const auto& e : it) {
    std::string name = e.path().filename().string();
    std::optional<int64_t> step = parse_checkpoint_dir_name(name);
    if (!step || e.is_symlink(ec) || !e.is_directory(ec)) continue;
    out.push_back({*step, name, e.path().string(), files_bytes(e.path()), false});
  }
  std::sort(out.begin(), out.end(),
            [](const CheckpointInfo& a, const CheckpointInfo& b) { return a.step < b.step; });
  if (out.empty()) return out;
  std::string target = fs::read_symlink(fs::path(checkpoints_dir) / kLatestLink, ec).string();
  auto linked = std::find_if(out.begin(), out.end(),
                             [&](const CheckpointInfo& c) { return !ec && c.name == target; });
  (linked != out.end() ? *linked : out.back()).latest = true;
  return out;
}

std::optional<CheckpointInfo> find_latest(const std::string& checkpoints_dir) {
  Result<std::vector<CheckpointInfo>> all = list_checkpoints(checkpoints_dir);
  if (!all) return std::nullopt;
  for (const CheckpointInfo& c : *all)
    if (c.latest) return c;
  return std::nullopt;
}

Result<std::string> resolve_checkpoint(const std::string& arg) {
  fs::path p = fs::path(arg).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();  // a trailing slash
  std::error_code ec;
  if (p.filename() == kLatestLink) p = p.parent_path();
  if (fs::exists(p / kModelFile, ec) || fs::exists(p / kStateFile, ec)) return p.string();
  for (const fs::path& dir : {p / "checkpoints", p}) {
    std::optional<CheckpointInfo> latest = find_latest(dir.string());
    if (latest) return latest->path;
  }
  if (!fs::exists(p, ec)) return Result<std::string>::failure(arg + ": no such file or directory");
  return Result<std::string>::failure(arg +
                                      ": not a checkpoint, and no checkpoints/ with one in it");
}

Result<Checkpoint> load_checkpoint(const std::string& dir) {
  using R = Result<Checkpoint>;
  Checkpoint c;
  c.path = dir;
  std::optional<int64_t> step = parse_checkpoint_dir_name(fs::path(dir).filename().string());
  Result<std::shared_ptr<const SafetensorsFile>> model =
      SafetensorsFile::open((fs::path(dir) / kModelFile).string());
  if (!model) return R::failure(model.error());
  Result<std::shared_ptr<const SafetensorsFile>> opt =
      SafetensorsFile::open((fs::path(dir) / kOptimizerFile).string());
  if (!opt) return R::failure(opt.error());
  c.model = *model;
  c.optimizer = *opt;
  for (auto [file, out] :
       {std::pair{kStateFile, &c.state}, std::pair{kChecksumsFile, &c.checksums}}) {
    std::string path = (fs::path(dir) / file).string();
    std::ifstream in(path, std::ios::binary);
    if (!in) return R::failure(path + ": cannot open: " + errno_text());
    *out = json::parse(in, nullptr, false);
    if (out->is_discarded() || !out->is_object()) return R::failure(path + ": not a JSON object");
  }
  if (!c.state.contains("step") || !c.state["step"].is_number_integer())
    return R::failure((fs::path(dir) / kStateFile).string() + ": no integer step");
  c.step = c.state["step"].get<int64_t>();
  if (step && *step != c.step)
    return R::failure((fs::path(dir) / kStateFile).string() + ": step " + std::to_string(c.step) +
                      " is not the directory's step " + std::to_string(*step));
  return c;
}

}  // namespace sexpgpu::run
