// Source map, diagnostic collection and rendering (human and JSON).
#include "util/diagnostics.h"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace sexpgpu {

std::string_view SourceFile::line_text(uint32_t line) const {
  if (line == 0 || line > line_starts.size()) return {};
  size_t begin = line_starts[line - 1];
  size_t end = line < line_starts.size() ? line_starts[line] : text.size();
  std::string_view s(text);
  s = s.substr(begin, end - begin);
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

SourceMap::SourceMap() {
  files_.push_back(std::make_unique<SourceFile>());
}

uint32_t SourceMap::add(std::string path, std::string text) {
  auto f = std::make_unique<SourceFile>();
  f->path = std::move(path);
  f->text = std::move(text);
  f->line_starts.push_back(0);
  for (size_t i = 0; i < f->text.size(); ++i)
    if (f->text[i] == '\n') f->line_starts.push_back(uint32_t(i + 1));
  files_.push_back(std::move(f));
  return uint32_t(files_.size() - 1);
}

static bool is_utf8_continuation(unsigned char c) {
  return (c & 0xC0) == 0x80;
}

void SourceMap::locate(uint32_t id, size_t offset, uint32_t& line, uint32_t& col) const {
  const SourceFile& f = *files_[id];
  auto it = std::upper_bound(f.line_starts.begin(), f.line_starts.end(), uint32_t(offset));
  line = uint32_t(it - f.line_starts.begin());
  size_t begin = f.line_starts[line - 1];
  col = 1;
  for (size_t i = begin; i < offset && i < f.text.size(); ++i)
    if (!is_utf8_continuation(static_cast<unsigned char>(f.text[i]))) ++col;
}

void DiagnosticSink::report(Diagnostic d) {
  diags_.push_back(std::move(d));
}

size_t DiagnosticSink::error_count() const {
  return size_t(std::count_if(diags_.begin(), diags_.end(),
                              [](const Diagnostic& d) { return d.severity == Severity::Error; }));
}

size_t DiagnosticSink::warning_count() const {
  return size_t(std::count_if(diags_.begin(), diags_.end(),
                              [](const Diagnostic& d) { return d.severity == Severity::Warning; }));
}

static const char* severity_name(Severity s) {
  switch (s) {
    case Severity::Error: return "error";
    case Severity::Warning: return "warning";
    case Severity::Note: return "note";
  }
  return "error";
}

// Byte offset of character column `col` (1-based) in `text`.
static size_t byte_of_column(std::string_view text, uint32_t col) {
  uint32_t c = 1;
  for (size_t i = 0; i < text.size(); ++i) {
    if (is_utf8_continuation(static_cast<unsigned char>(text[i]))) continue;
    if (c == col) return i;
    ++c;
  }
  return text.size();
}

static void render_location(const SourceMap& sources, Span span, std::string& out) {
  // Line 0 is the file as a whole (a selection error: an unknown knob or
  // variant on the command line): there is no source line to show.
  if (!span.valid() || span.line == 0) return;
  const SourceFile& f = sources.file(span.file);
  std::string_view text = f.line_text(span.line);
  // A very long line (generated or minified code) is shown as a window of
  // it around the position, so one diagnostic never floods the terminal.
  constexpr uint32_t kWindow = 120;
  uint32_t first_col = 1;
  bool cut_left = false, cut_right = false;
  if (text.size() > kWindow) {
    if (span.col > kWindow / 2) {
      first_col = span.col - kWindow / 2;
      cut_left = true;
    }
    size_t begin = byte_of_column(text, first_col);
    size_t end = byte_of_column(text, first_col + kWindow);
    cut_right = end < text.size();
    text = text.substr(begin, end - begin);
  }
  std::string lineno = std::to_string(span.line);
  out += "  " + lineno + " | ";
  if (cut_left) out += "...";
  out += text;
  if (cut_right) out += "...";
  out += '\n';
  out += std::string(lineno.size() + 2, ' ') + " | ";
  if (cut_left) out += "   ";
  // Tabs in the source line are kept so the caret lines up under them.
  uint32_t col = first_col;
  size_t i = 0;
  for (; col < span.col && i < text.size(); ++i) {
    if (is_utf8_continuation(static_cast<unsigned char>(text[i]))) continue;
    out += text[i] == '\t' ? '\t' : ' ';
    ++col;
  }
  uint32_t width = 1;
  if (span.end_line == span.line && span.end_col > span.col) width = span.end_col - span.col;
  width = std::min(width, kWindow);
  out += '^';
  if (width > 1) out += std::string(width - 1, '~');
  out += '\n';
}

// "path:line:col", or "path" alone for a diagnostic of the whole file (line
// 0: a selection flag on the command line names no form of it).
static std::string position(const SourceMap& sources, Span s) {
  const SourceFile& f = sources.file(s.file);
  if (s.line == 0) return f.path;
  return f.path + ":" + std::to_string(s.line) + ":" + std::to_string(s.col);
}

std::string render_human(const SourceMap& sources, const Diagnostic& d, bool color) {
  std::string out;
  const char* bold = color ? "\x1b[1m" : "";
  const char* red = color ? (d.severity == Severity::Error ? "\x1b[1;31m" : "\x1b[1;35m") : "";
  const char* reset = color ? "\x1b[0m" : "";
  if (d.span.valid()) out += bold + position(sources, d.span) + ": " + reset;
  out += std::string(red) + d.code + reset + " " + d.message + "\n";
  render_location(sources, d.span, out);
  if (!d.fix.empty()) out += "  fix: " + d.fix + "\n";
  for (const DiagNote& n : d.notes) {
    if (n.span.valid()) {
      out += "  note: " + position(sources, n.span) + ": " + n.message + "\n";
    } else {
      out += "  note: " + n.message + "\n";
    }
  }
  return out;
}

static nlohmann::json span_json(const SourceMap& sources, Span s) {
  nlohmann::json j;
  if (s.valid() && s.line == 0) {  // the whole file: no position in it
    j["file"] = sources.file(s.file).path;
    j["line"] = nullptr;
    j["col"] = nullptr;
    j["end_line"] = nullptr;
    j["end_col"] = nullptr;
  } else if (s.valid()) {
    j["file"] = sources.file(s.file).path;
    j["line"] = s.line;
    j["col"] = s.col;
    j["end_line"] = s.end_line;
    j["end_col"] = s.end_col;
  } else {
    j["file"] = nullptr;
    j["line"] = nullptr;
    j["col"] = nullptr;
    j["end_line"] = nullptr;
    j["end_col"] = nullptr;
  }
  return j;
}

std::string render_json(const SourceMap& sources, const std::vector<Diagnostic>& ds) {
  nlohmann::json arr = nlohmann::json::array();
  for (const Diagnostic& d : ds) {
    nlohmann::json j = span_json(sources, d.span);
    j["code"] = d.code;
    j["severity"] = severity_name(d.severity);
    j["message"] = d.message;
    j["fix"] = d.fix.empty() ? nlohmann::json(nullptr) : nlohmann::json(d.fix);
    nlohmann::json notes = nlohmann::json::array();
    for (const DiagNote& n : d.notes) {
      nlohmann::json nj = span_json(sources, n.span);
      nj["message"] = n.message;
      notes.push_back(nj);
    }
    j["notes"] = notes;
    arr.push_back(j);
  }
  return arr.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace sexpgpu
