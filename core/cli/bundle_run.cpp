// What bundle and run DIR share about bundles (bundle_run.h).
#include "cli/bundle_run.h"

#include <cstdlib>
#include <set>
#include <system_error>

#include "bundle/verify.h"
#include "cli/s3_access.h"
#include "cli/verbs.h"
#include "ir/json.h"
#include "lisp/modules.h"
#include "runfile/compile.h"
#include "s3/url.h"
#include "train/trainer.h"

namespace sexpgpu::cli {

namespace fs = std::filesystem;

std::string bundle_ir_hash(runfile::CompiledRun& compiled, const fs::path& dir) {
  bundle::relabel_files(compiled.module.files, dir);
  return train::content_hash(ir::to_json(compiled.module).dump());
}

std::vector<fs::path> user_modules(const runfile::Session& s) {
  const lisp::Interp& in = *s.interp;
  std::set<std::string> standard;
  for (uint32_t f : in.library_files) standard.insert(in.sources.file(f).path);
  std::vector<fs::path> out;
  for (const auto& m : in.modules)
    if (!m->path.empty() && !standard.count(m->path)) out.push_back(bundle::absolute_path(m->path));
  return out;
}

void use_bundle_module_path(const fs::path& dir, const bundle::Manifest& m) {
  std::string path;
  for (const std::string& d : m.module_path)
    path += (path.empty() ? "" : ":") + bundle::absolute_path(dir / d).string();
  if (path.empty())
    ::unsetenv("SEXPGPU_MODULE_PATH");
  else
    ::setenv("SEXPGPU_MODULE_PATH", path.c_str(), 1);
}

bool is_bundle(const std::string& path) {
  std::error_code ec;
  return fs::is_directory(path, ec) && fs::exists(fs::path(path) / bundle::kManifestName, ec);
}

Result<bundle::Manifest> open_bundle(const fs::path& dir) {
  fs::path manifest_path = dir / bundle::kManifestName;
  Result<bundle::Manifest> m =
      bundle::parse_manifest(read_text(manifest_path.string()), manifest_path.string());
  if (!m) return m;
  if (Status files = bundle::check_files(dir, *m); !files) return files.failed();
  return m;
}

Status check_referenced_data(const runfile::CompiledRun& compiled, const bundle::Manifest& m) {
  for (const bundle::DataEntry& e : m.data) {
    if (!e.path.empty()) continue;  // in the bundle: check_files saw it
    if (!e.etag.empty()) {
      // An s3:// reference: the object must be the one bundled. Without an
      // answer the run goes on with its cached copy (the fetch warns).
      Result<s3::Url> url = s3::parse_url(e.source);
      Result<s3::Client*> client = cli::s3_client();
      if (!url || !client) continue;
      Result<s3::ObjectInfo> head = (*client)->head(*url);
      if (head && head->etag != e.etag)
        return fail("E-BUNDLE", "loader " + e.loader + "'s \"" + e.source +
                                    "\" has changed since the bundle was made (ETag " + head->etag +
                                    ", the bundle's " + e.etag +
                                    ")\n  fix: put the object back, or bundle the run again");
      continue;
    }
    for (const spec::LoaderDecl& decl : compiled.loaders.decls) {
      if (decl.name != e.loader) continue;
      for (const spec::DataFile& f : decl.data_files) {
        if (f.written != e.source) continue;
        std::error_code ec;
        uintmax_t size = fs::file_size(f.found, ec);
        if (!ec && size == uintmax_t(e.size)) continue;
        return fail("E-BUNDLE",
                    "loader " + e.loader + "'s \"" + e.source + "\" is " + f.found.string() +
                        " here, of " + std::to_string(size) + " bytes; the bundle was made with " +
                        std::to_string(e.size) + " bytes (SHA-256 " + e.sha256.substr(0, 16) +
                        "...)\n  fix: put the data it was made with where the lookup finds it "
                        "(the run file's directory, $SEXPGPU_DATA, /usr/share/datasets)");
      }
    }
  }
  return ok_status();
}

}  // namespace sexpgpu::cli
