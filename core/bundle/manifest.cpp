// bundle.toml written and read with TOML++ (manifest.h).
#include "bundle/manifest.h"

#include <toml++/toml.h>

#include <sstream>

namespace sexpgpu::bundle {

namespace {

toml::array strings(const std::vector<std::string>& items) {
  toml::array a;
  for (const std::string& s : items) a.push_back(s);
  return a;
}

// Reads the keys of one table, keeping the first problem.
struct Reader {
  const std::string& path;
  std::string problem;

  std::string where(const toml::node& n) const {
    const toml::source_region& at = n.source();
    return at.begin.line
               ? path + ":" + std::to_string(at.begin.line) + ":" + std::to_string(at.begin.column)
               : path;
  }
  void bad(const std::string& message) {
    if (problem.empty()) problem = message;
  }
  const toml::node* need(const toml::table& t, const std::string& key, const std::string& in) {
    const toml::node* n = t.get(key);
    if (!n) bad(path + ": " + in + "has no `" + key + "`");
    return n;
  }
  std::string text(const toml::table& t, const std::string& key, const std::string& in = "") {
    const toml::node* n = need(t, key, in);
    if (!n) return "";
    if (std::optional<std::string> v = n->value<std::string>()) return *v;
    bad(where(*n) + ": " + in + "`" + key + "` is not a string");
    return "";
  }
  int64_t count(const toml::table& t, const std::string& key, const std::string& in = "") {
    const toml::node* n = need(t, key, in);
    if (!n) return 0;
    std::optional<int64_t> v = n->is_integer() ? n->value<int64_t>() : std::nullopt;
    if (v && *v >= 0) return *v;
    bad(where(*n) + ": " + in + "`" + key + "` is not a whole number of 0 or more");
    return 0;
  }
  bool flag(const toml::table& t, const std::string& key) {
    const toml::node* n = need(t, key, "");
    if (!n) return false;
    if (std::optional<bool> v = n->value<bool>()) return *v;
    bad(where(*n) + ": `" + key + "` is not true or false");
    return false;
  }
  std::vector<std::string> list(const toml::table& t, const std::string& key,
                                const std::string& in = "") {
    std::vector<std::string> out;
    const toml::node* n = need(t, key, in);
    if (!n) return out;
    const toml::array* a = n->as_array();
    if (!a) {
      bad(where(*n) + ": " + in + "`" + key + "` is not a list of strings");
      return out;
    }
    for (const toml::node& item : *a) {
      if (std::optional<std::string> v = item.value<std::string>())
        out.push_back(*v);
      else
        bad(where(item) + ": " + in + "`" + key + "` holds something that is not a string");
    }
    return out;
  }
  // An array of tables ([[files]]); each table's reader is `each`.
  template <class F>
  void tables(const toml::table& t, const std::string& key, F each) {
    const toml::node* n = need(t, key, "");
    if (!n) return;
    const toml::array* a = n->as_array();
    if (!a) return bad(where(*n) + ": `" + key + "` is not a list of tables ([[" + key + "]])");
    for (const toml::node& item : *a) {
      if (const toml::table* row = item.as_table())
        each(*row, where(item) + ": [[" + key + "]] ");
      else
        bad(where(item) + ": `" + key + "` holds something that is not a table");
    }
  }
  std::string inside(const toml::table& t, const std::string& key, const std::string& in,
                     bool may_be_empty = false) {
    std::string p = text(t, key, in);
    if ((p.empty() && may_be_empty) || !problem.empty()) return p;
    if (!inside_path(p))
      bad(in + "`" + key + "` is \"" + p +
          "\", which is not a path inside the bundle (relative, no \"..\")");
    return p;
  }
};

}  // namespace

bool inside_path(const std::string& path) {
  if (path.empty() || path.front() == '/') return false;
  size_t start = 0;
  while (start <= path.size()) {
    size_t slash = path.find('/', start);
    std::string part =
        path.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
    if (part.empty() || part == "." || part == ".." || part.find('\\') != std::string::npos)
      return false;
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  return true;
}

std::string to_toml(const Manifest& m) {
  toml::array sets;
  for (const auto& [knob, value] : m.sets) sets.push_back(knob + "=" + value);
  toml::table selection{{"variants", strings(m.variants)}, {"sets", sets}, {"point", m.point}};
  const DeviceNeeds& d = m.device;
  toml::table device{{"parameters", d.parameters},
                     {"gradients", d.gradients},
                     {"optimizer_state", d.optimizer_state},
                     {"batch", d.batch},
                     {"activations", d.activations},
                     {"workspace", d.workspace},
                     {"total", d.total}};
  toml::array files;
  for (const FileEntry& f : m.files)
    files.push_back(toml::table{{"path", f.path}, {"size", f.size}, {"sha256", f.sha256}});
  toml::array data;
  for (const DataEntry& e : m.data) {
    toml::table row{{"loader", e.loader}, {"source", e.source}, {"size", e.size}};
    if (e.etag.empty()) row.insert("sha256", e.sha256);
    if (!e.etag.empty()) row.insert("etag", e.etag);
    if (!e.path.empty()) row.insert("path", e.path);
    data.push_back(std::move(row));
  }
  toml::table root{{"format", m.format},
                   {"sexpgpu_version", m.sexpgpu_version},
                   {"run_file", m.run_file},
                   {"slug", m.slug},
                   {"ir_hash", m.ir_hash},
                   {"module_path", strings(m.module_path)},
                   {"data_bundled", m.data_bundled},
                   {"selection", selection},
                   {"device", device},
                   {"files", files},
                   {"data", data}};
  std::ostringstream out;
  out << "# A bundle made by `sexpgpu bundle` (docs/bundle.md). `sexpgpu run` on this\n"
         "# directory (what run.sh does) checks every file below before it trains.\n"
         "# Sizes are bytes; device needs are the core's memory plan (sexpgpu explain).\n\n"
      << root << "\n";
  return out.str();
}

Result<Manifest> parse_manifest(const std::string& text, const std::string& path) {
  toml::table root;
  try {
    root = toml::parse(text, path);
  } catch (const toml::parse_error& e) {
    return fail("E-BUNDLE", path + ":" + std::to_string(e.source().begin.line) + ":" +
                                std::to_string(e.source().begin.column) +
                                ": not TOML: " + std::string(e.description()));
  }
  Reader r{path, ""};
  Manifest m;
  m.format = r.count(root, "format");
  if (r.problem.empty() && m.format != kFormat)
    return fail("E-BUNDLE", path + ": format " + std::to_string(m.format) +
                                " is not one this sexpgpu reads (it reads format " +
                                std::to_string(kFormat) + "); a newer sexpgpu made it");
  m.sexpgpu_version = r.text(root, "sexpgpu_version");
  m.run_file = r.inside(root, "run_file", "");
  m.slug = r.text(root, "slug");
  m.ir_hash = r.text(root, "ir_hash");
  for (const std::string& dir : r.list(root, "module_path")) {
    if (!inside_path(dir))
      r.bad(path + ": module_path holds \"" + dir +
            "\", which is not a directory inside the bundle");
    m.module_path.push_back(dir);
  }
  m.data_bundled = r.flag(root, "data_bundled");
  if (const toml::table* sel = root["selection"].as_table()) {
    m.variants = r.list(*sel, "variants", "[selection] ");
    for (const std::string& s : r.list(*sel, "sets", "[selection] ")) {
      size_t eq = s.find('=');
      if (eq == std::string::npos || eq == 0)
        r.bad(path + ": [selection] sets holds \"" + s + "\", which is not KNOB=VALUE");
      else
        m.sets.push_back({s.substr(0, eq), s.substr(eq + 1)});
    }
    m.point = r.text(*sel, "point", "[selection] ");
  } else {
    r.bad(path + ": no [selection] table");
  }
  if (const toml::table* dev = root["device"].as_table()) {
    DeviceNeeds& d = m.device;
    const std::string in = "[device] ";
    d.parameters = r.count(*dev, "parameters", in), d.gradients = r.count(*dev, "gradients", in);
    d.optimizer_state = r.count(*dev, "optimizer_state", in), d.batch = r.count(*dev, "batch", in);
    d.activations = r.count(*dev, "activations", in), d.workspace = r.count(*dev, "workspace", in);
    d.total = r.count(*dev, "total", in);
  } else {
    r.bad(path + ": no [device] table");
  }
  r.tables(root, "files", [&](const toml::table& row, const std::string& in) {
    FileEntry f;
    f.path = r.inside(row, "path", in);
    f.size = r.count(row, "size", in);
    f.sha256 = r.text(row, "sha256", in);
    m.files.push_back(std::move(f));
  });
  r.tables(root, "data", [&](const toml::table& row, const std::string& in) {
    DataEntry e;
    e.loader = r.text(row, "loader", in);
    e.source = r.text(row, "source", in);
    e.size = r.count(row, "size", in);
    if (row.get("etag") || e.source.rfind("s3://", 0) == 0)
      e.etag = r.text(row, "etag", in);
    else
      e.sha256 = r.text(row, "sha256", in);
    if (row.get("path")) e.path = r.inside(row, "path", in);
    m.data.push_back(std::move(e));
  });
  if (!r.problem.empty()) return fail("E-BUNDLE", r.problem);
  return m;
}

}  // namespace sexpgpu::bundle
