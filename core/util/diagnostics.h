// Diagnostics: source files, spans, and the one Diagnostic type every stage
// reports through. A diagnostic has a stable code (errors.md), a severity, the
// span it is about, a message naming the things involved, an optional fix and
// secondary notes. Rendering (human with a caret, or JSON) lives here too, so
// the CLI is the only place that decides exit codes but not the only one that
// can print.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace sexpgpu {

// A registered source text. Spans refer to files by index into SourceMap.
struct SourceFile {
  std::string path;
  std::string text;
  std::vector<uint32_t> line_starts;  // byte offset of each line's first char

  std::string_view line_text(uint32_t line) const;  // 1-based, without '\n'
};

// 1-based line and column (columns count characters, not bytes). file == 0
// means "no position" (a value built at run time, not read from a file).
struct Span {
  uint32_t file = 0;
  uint32_t line = 0, col = 0;
  uint32_t end_line = 0, end_col = 0;
  bool valid() const { return file != 0; }
};

class SourceMap {
 public:
  SourceMap();
  uint32_t add(std::string path, std::string text);  // returns file id (>= 1)
  const SourceFile& file(uint32_t id) const { return *files_[id]; }
  size_t file_count() const { return files_.size(); }  // including the placeholder [0]
  // Byte offset -> line/column within file `id`.
  void locate(uint32_t id, size_t offset, uint32_t& line, uint32_t& col) const;

 private:
  std::vector<std::unique_ptr<SourceFile>> files_;  // [0] is a placeholder
};

enum class Severity { Error, Warning, Note };

struct DiagNote {
  Span span;
  std::string message;
};

struct Diagnostic {
  std::string code;  // "E-READ", "W-SHADOW", ...
  Severity severity = Severity::Error;
  Span span;
  std::string message;
  std::string fix;  // empty when there is no usual fix
  std::vector<DiagNote> notes;
};

inline Severity severity_of(std::string_view code) {
  return code.size() > 1 && code[0] == 'W' ? Severity::Warning : Severity::Error;
}

// Collects diagnostics in order. The first error of an independent form is
// kept; `suppress_duplicates` avoids reporting one problem twice.
class DiagnosticSink {
 public:
  void report(Diagnostic d);
  const std::vector<Diagnostic>& all() const { return diags_; }
  size_t error_count() const;
  size_t warning_count() const;
  void clear() { diags_.clear(); }

 private:
  std::vector<Diagnostic> diags_;
};

// "file:line:col: E-CODE message", the source line, a caret under the span,
// "fix: ..." and the notes. `color` adds ANSI colours (terminal only).
std::string render_human(const SourceMap& sources, const Diagnostic& d, bool color);
// The JSON document of check --json: a list of objects.
std::string render_json(const SourceMap& sources, const std::vector<Diagnostic>& ds);

}  // namespace sexpgpu
