// Checking a bundle before it runs (verify.h).
#include "bundle/verify.h"

#include <system_error>

#include "bundle/sha256.h"

namespace sexpgpu::bundle {

namespace fs = std::filesystem;

Status check_files(const fs::path& dir, const Manifest& m) {
  std::vector<std::string> problems;
  bool has_run_file = false;
  for (const FileEntry& f : m.files) {
    has_run_file = has_run_file || f.path == m.run_file;
    fs::path p = dir / f.path;
    std::error_code ec;
    if (!fs::is_regular_file(p, ec)) {
      problems.push_back(f.path + " is missing");
      continue;
    }
    uintmax_t size = fs::file_size(p, ec);
    if (ec || size != uintmax_t(f.size)) {
      problems.push_back(f.path + " changed: " + std::to_string(size) + " bytes, bundled " +
                         std::to_string(f.size));
      continue;
    }
    Result<std::string> sum = sha256_file(p);
    if (!sum) {
      problems.push_back(sum.error());
    } else if (*sum != f.sha256) {
      problems.push_back(f.path + " changed: its SHA-256 is " + sum->substr(0, 16) +
                         "..., bundled " + f.sha256.substr(0, 16) + "...");
    }
  }
  if (!has_run_file) problems.push_back("the run file " + m.run_file + " is not among its files");
  if (problems.empty()) return ok_status();
  std::string text;
  for (const std::string& p : problems) text += (text.empty() ? "" : "; ") + p;
  return fail("E-BUNDLE", "bundle " + dir.string() + " is not as it was made: " + text +
                              "\n  fix: make the bundle again (sexpgpu bundle FILE -o DIR), or "
                              "copy it again from where it was made");
}

VersionCheck check_version(const std::string& made_by, const std::string& running,
                           const std::string& recorded_ir_hash,
                           const std::string& compiled_ir_hash) {
  bool same_version = made_by == running;
  if (recorded_ir_hash == compiled_ir_hash)
    return same_version ? VersionCheck{}
                        : VersionCheck{Verdict::Warn,
                                       "made by sexpgpu " + made_by + ", running on sexpgpu " +
                                           running + "; it compiles to the IR it was bundled with"};
  std::string hashes = "IR hash " + compiled_ir_hash + ", bundled " + recorded_ir_hash;
  if (same_version)
    return {Verdict::Refuse, "it compiles to another IR than when it was made (" + hashes +
                                 "): its data have other shapes here"
                                 "\n  fix: give it the data it was made with, or make it again"};
  return {Verdict::Refuse, "made by sexpgpu " + made_by +
                               ", it compiles to another IR on sexpgpu " + running + " (" + hashes +
                               "), so this run would not be the one bundled"
                               "\n  fix: run it with sexpgpu " +
                               made_by +
                               ", or make the bundle again with this one (sexpgpu bundle)"};
}

fs::path absolute_path(const fs::path& path) {
  std::error_code ec;
  fs::path p = fs::absolute(path, ec);
  return (ec ? path : p).lexically_normal();
}

fs::path common_directory(const std::vector<fs::path>& dirs) {
  if (dirs.empty()) return {};
  fs::path common = dirs.front();
  for (const fs::path& d : dirs) {
    fs::path shared;
    auto a = common.begin(), b = d.begin();
    for (; a != common.end() && b != d.end() && *a == *b; ++a, ++b) shared /= *a;
    common = shared;
  }
  // "/a/b/" normalises with an empty last part: drop it.
  std::string text = common.string();
  while (text.size() > 1 && text.back() == '/') text.pop_back();
  return text;
}

std::optional<std::string> relative_inside(const fs::path& root, const fs::path& path) {
  fs::path rel = path.lexically_relative(root);
  if (rel.empty()) return std::nullopt;
  std::string text = rel.generic_string();
  if (!inside_path(text)) return std::nullopt;
  return text;
}

void relabel_files(std::vector<std::string>& files, const fs::path& dir) {
  fs::path root = absolute_path(dir);
  for (std::string& f : files)
    if (!f.empty())
      if (std::optional<std::string> rel = relative_inside(root, absolute_path(f))) f = *rel;
}

}  // namespace sexpgpu::bundle
