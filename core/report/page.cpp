// The report page's HTML (see page.h).
#include "report/page.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "util/embedded.h"

namespace sexpgpu::report {

namespace {

std::optional<std::string> read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return std::nullopt;
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// A source map comment would make a browser's developer tools ask for a file
// beside the page, which the page does not have.
std::string without_source_map(std::string text) {
  for (const char* marker : {"//# sourceMappingURL=", "/*# sourceMappingURL="}) {
    size_t at = text.rfind(marker);
    if (at == std::string::npos) continue;
    size_t end = text.find('\n', at);
    text.erase(at, end == std::string::npos ? std::string::npos : end - at);
  }
  return text;
}

const char* embedded(const char* name) {
  for (size_t i = 0; i < kReportFiles_count; ++i)
    if (std::strcmp(kReportFiles[i].name, name) == 0) return kReportFiles[i].text;
  return "";
}

// Copies `text`, writing `lt` for each '<' that starts one of `words`
// (compared without case): how a script or style element's text is kept
// from closing the element.
std::string guard_lt(std::string_view text, std::initializer_list<std::string_view> words,
                     std::string_view lt) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    bool guarded = false;
    if (text[i] == '<')
      for (std::string_view word : words) {
        std::string_view rest = text.substr(i + 1);
        bool same = rest.size() >= word.size();
        for (size_t k = 0; same && k < word.size(); ++k)
          same = std::tolower(static_cast<unsigned char>(rest[k])) == word[k];
        guarded = guarded || same;
      }
    if (guarded)
      out += lt;
    else
      out += text[i];
  }
  return out;
}

}  // namespace

Result<ChartLibrary> load_dygraphs(const std::string& js_path) {
  std::string path = js_path.empty() ? std::string(kDygraphsDir) + "/dygraph.min.js" : js_path;
  std::optional<std::string> js = read_file(path);
  if (!js) {
    std::string why = std::strerror(errno);
    if (js_path.empty())
      return fail("", "cannot read the charting library " + path + " (" + why +
                          "): install Debian's libjs-dygraphs (apt-get install libjs-dygraphs), "
                          "or point SEXPGPU_DYGRAPHS at a dygraph.min.js");
    return fail("", "cannot read the charting library " + path +
                        ", which SEXPGPU_DYGRAPHS names (" + why +
                        "): it is dygraph.min.js of Debian's libjs-dygraphs; unset "
                        "SEXPGPU_DYGRAPHS to use the package's");
  }
  ChartLibrary lib;
  lib.js_path = path;
  lib.js = without_source_map(std::move(*js));
  std::string dir =
      path.substr(0, path.find_last_of('/') == std::string::npos ? 0 : path.find_last_of('/'));
  for (const char* css : {"/dygraph.min.css", "/dygraph.css"})
    if (std::optional<std::string> text = read_file((dir.empty() ? "." : dir) + css)) {
      lib.css = without_source_map(std::move(*text));
      break;
    }
  return lib;
}

std::string script_safe(std::string_view js) {
  // "<\/script" and "<\!--" mean the same inside a JS string or regex, and a
  // comment holding them is still a comment.
  return guard_lt(js, {"/script", "!--"}, "<\\");
}

std::string json_for_script(const json& j) {
  std::string text = j.dump(-1, ' ', false, json::error_handler_t::replace);
  std::string out;
  out.reserve(text.size() + text.size() / 16);
  for (char c : text) {
    if (c == '<')
      out += "\\u003c";
    else if (c == '>')
      out += "\\u003e";
    else if (c == '&')
      out += "\\u0026";
    else
      out += c;
  }
  return out;
}

std::string html_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  return out;
}

json page_data(const Report& report, const std::vector<std::string>& series,
               const std::string& title, const std::string& version, const std::string& generated) {
  json runs = json::array();
  json timeline = json::array();
  for (size_t r = 0; r < report.runs.size(); ++r) {
    const RunData& run = report.runs[r];
    runs.push_back({{"label", run.label},
                    {"dir", run.dir},
                    {"state", run.state},
                    {"events", run.events},
                    {"opens", run.opens},
                    {"close", run.close},
                    {"status", run.status}});
    for (const Moment& m : run.timeline)
      timeline.push_back({{"run", r},
                          {"kind", m.kind},
                          {"step", m.step ? json(*m.step) : json(nullptr)},
                          {"wall_s", m.wall_s},
                          {"time", m.time},
                          {"text", m.text}});
  }
  json charts = json::array();
  for (const std::string& name : series) {
    json points = json::array();
    std::string source;
    for (const RunData& run : report.runs) {
      auto it = run.series.find(name);
      if (it == run.series.end()) {
        points.push_back(json::array());
        continue;
      }
      source = it->second.source;
      json pts = json::array();
      for (const Point& p : it->second.points)
        pts.push_back({p.step, p.wall_s, p.value ? json(*p.value) : json(nullptr)});
      points.push_back(std::move(pts));
    }
    charts.push_back({{"name", name}, {"source", source}, {"points", std::move(points)}});
  }
  json sweeps = json::array();
  for (const SweepData& s : report.sweeps)
    sweeps.push_back({{"dir", s.dir}, {"sweep", s.sweep}, {"runs", s.runs}});
  return {{"title", title},   {"version", version},   {"generated", generated}, {"runs", runs},
          {"series", charts}, {"timeline", timeline}, {"sweeps", sweeps}};
}

std::string render_page(const json& data, const ChartLibrary& library) {
  std::string title = data.value("title", std::string("sexpgpu report"));
  std::string page;
  page.reserve(library.js.size() + 64 * 1024);
  page += "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  // Nothing from the network, nothing from disk: everything is in the file.
  page +=
      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
      "script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:\">\n";
  page += "<meta name=\"generator\" content=\"sexpgpu report\">\n";
  page += "<title>" + html_escape(title) + "</title>\n";
  page += "<style>\n" + guard_lt(library.css, {"/style"}, "\\3c ") + "\n</style>\n";
  page += "<style>\n" + std::string(embedded("page.css")) + "</style>\n";
  page += "<!-- dygraphs, from " + html_escape(library.js_path) + " (libjs-dygraphs, MIT) -->\n";
  page += "<script>\n" + script_safe(library.js) + "\n</script>\n";
  page += "</head>\n<body>\n<div id=\"app\"></div>\n";
  page += "<script type=\"application/json\" id=\"report-data\">" + json_for_script(data) +
          "</script>\n";
  page += "<script>\n" + script_safe(embedded("page.js")) + "</script>\n";
  page += "</body>\n</html>\n";
  return page;
}

}  // namespace sexpgpu::report
