// sexpgpu new FROM NEW [selection]: NEW as a copy of FROM with the
// selection baked in as the knobs' new defaults (docs/new.md). The defaults
// are replaced in FROM's text at the spans the reader gave them, so
// comments and layout survive; the result is formatted (lisp/fmt.h),
// headed by a comment naming FROM and its content hash, checked as `check`
// would check it, and written only when it has no errors, never over an
// existing file.
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <set>

#include "cli/settings.h"
#include "cli/verbs.h"
#include "lisp/fmt.h"
#include "lisp/modules.h"
#include "runfile/session.h"
#include "train/trainer.h"
#include "util/atomic_file.h"

namespace sexpgpu::cli {

namespace fs = std::filesystem;

namespace {

// Byte offset of 1-based line `line`, character column `col` (the reader's
// spans count UTF-8 characters).
size_t byte_offset(const SourceFile& f, uint32_t line, uint32_t col) {
  auto continuation = [&](size_t i) {
    return i < f.text.size() && (static_cast<unsigned char>(f.text[i]) & 0xC0) == 0x80;
  };
  size_t at = line >= 1 && line <= f.line_starts.size() ? f.line_starts[line - 1] : f.text.size();
  for (uint32_t c = 1; c < col && at < f.text.size(); ++c)
    for (++at; continuation(at); ++at) {
    }
  return at;
}

// A value as source text that evaluates to it: lists and symbols other than
// keywords, nil and t are quoted (a knob's default is evaluated; --set
// values are literals).
std::string literal_text(lisp::Interp& in, lisp::Value v) {
  std::string text = in.show(v);
  bool self_evaluating =
      !v.is_cons() && !(v.is_symbol() && !v.sym()->keyword && text != "nil" && text != "t");
  return self_evaluating ? text : "'" + text;
}

// One replacement of FROM's text: [begin, end) becomes `text`.
struct Edit {
  size_t begin, end;
  std::string text;
};

// The defknob form declaring `knob`, or null.
const lisp::ReadForm* defknob_of(const std::vector<lisp::ReadForm>& forms,
                                 const lisp::Symbol* knob) {
  for (const lisp::ReadForm& rf : forms) {
    lisp::Value f = rf.form;
    if (!f.is_cons() || !f.cons()->car.is_symbol() || f.cons()->car.sym()->name != "DEFKNOB")
      continue;
    lisp::Value rest = f.cons()->cdr;
    if (rest.is_cons() && rest.cons()->car.is_symbol() &&
        rest.cons()->car.sym()->name == knob->name)
      return &rf;
  }
  return nullptr;
}

// "--variant wide --set lr=0.003": the request as one would type it.
std::string request_text(const select::Request& r) {
  std::string out;
  if (!r.variants.empty()) {
    out += " --variant ";
    for (size_t i = 0; i < r.variants.size(); ++i) out += (i ? "," : "") + r.variants[i];
  }
  for (const auto& [k, v] : r.sets) out += " --set " + k + "=" + v;
  if (!r.point.empty()) out += " --point " + r.point;
  return out.empty() ? "" : out.substr(1);
}

}  // namespace

void add_new(CLI::App& app, int& exit_code) {
  struct Opts {
    std::string from, to;
    LimitFlags limits;
  };
  auto opts = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand(
      "new", "write NEW as a copy of FROM with the selection baked in as the knobs' defaults");
  cmd->add_option("from", opts->from, "the run file to start from")->required();
  cmd->add_option("new", opts->to, "the file to write (must not exist)")->required();
  opts->limits.add_to(cmd);
  cmd->callback([opts, &exit_code]() {
    if (!settings_or_report("new", exit_code)) return;
    std::error_code ec;
    if (fs::exists(fs::symlink_status(opts->to, ec))) {
      std::cerr << "sexpgpu new: " << opts->to << " already exists; new never overwrites a file\n"
                << "  fix: name another file, or remove " << opts->to << " first\n";
      exit_code = kUsage;
      return;
    }
    std::unique_ptr<runfile::Session> s = opts->limits.load(opts->from, "new", exit_code);
    if (!s) return;
    if (s->sink.error_count()) {
      std::cerr << "sexpgpu new: " << opts->from
                << (opts->limits.variants.empty() && opts->limits.sets.empty() &&
                            opts->limits.point.empty()
                        ? " has errors"
                        : " has errors under this selection")
                << "; nothing was written\n";
      exit_code = kFileErrors;
      return;
    }
    lisp::Interp& in = *s->interp;
    const select::Selection& sel = s->selection();
    uint32_t file_id = s->forms.empty() ? 0 : s->forms.front().span.file;
    std::string text;
    if (file_id) text = s->sources.file(file_id).text;

    // The knobs the selection moved off their defaults, and each one's new
    // default in place of the old one.
    std::vector<Edit> edits;
    std::vector<std::string> changed;
    for (const select::Knob& k : sel.knobs) {
      std::string value = literal_text(in, k.value);
      if (!k.selected || value == literal_text(in, k.default_value)) continue;
      const lisp::ReadForm* rf = defknob_of(s->forms, k.name);
      lisp::Value rest = rf ? rf->form.cons()->cdr.cons()->cdr : lisp::Value();
      Span span = rest.is_cons() ? in.span_of(rest.cons()->car_span) : Span{};
      if (!span.valid() || span.file != file_id) {
        std::cerr << "sexpgpu new: cannot find where " << opts->from << " writes the default of '"
                  << lower(k.name->name) << "' (a defknob made by a macro?); nothing was written\n";
        exit_code = kFileErrors;
        return;
      }
      const SourceFile& f = s->sources.file(file_id);
      edits.push_back({byte_offset(f, span.line, span.col),
                       byte_offset(f, span.end_line, span.end_col), value});
      changed.push_back(lower(k.name->name) + " " + in.show(k.default_value) + " -> " +
                        in.show(k.value));
    }
    std::sort(edits.begin(), edits.end(),
              [](const Edit& a, const Edit& b) { return a.begin > b.begin; });
    std::string edited = text;
    for (const Edit& e : edits) edited.replace(e.begin, e.end - e.begin, e.text);
    std::string selection = request_text(sel.request);
    edited = ";; new from " + opts->from + " (file_hash " + train::content_hash(text) + ")" +
             (selection.empty() ? "" : " with " + selection) + "\n" + edited;
    std::string formatted;
    lisp::FmtError fmt_error;
    if (!lisp::format_source(edited, formatted, fmt_error)) {
      std::cerr << "sexpgpu new: internal error: the new text does not read (" << fmt_error.line
                << ":" << fmt_error.col << ": " << fmt_error.message << "); nothing was written\n";
      exit_code = kFileErrors;
      return;
    }

    // The result, checked under its own name (so a relative require or data
    // path resolves from NEW's directory, as it will when NEW is used) and
    // with no selection: its defaults must now be the selected values.
    runfile::Session result(opts->limits.limits);
    result.reducer_plugins = lazy_reducer_plugins();
    result.load_source(opts->to, formatted);
    result.compile();
    if (result.sink.error_count()) {
      for (const Diagnostic& d : result.sink.all())
        if (d.severity == Severity::Error)
          std::cerr << render_human(result.sources, d, use_color_stderr());
      std::cerr << "sexpgpu new: " << opts->to << " would have errors; it was not written\n";
      if (fs::absolute(opts->to, ec).parent_path() != fs::absolute(opts->from, ec).parent_path())
        std::cerr << "  note: " << opts->to << " is in another directory than " << opts->from
                  << ": relative requires and data paths are looked up from its directory\n";
      exit_code = kFileErrors;
      return;
    }
    for (const select::Knob& k : sel.knobs) {
      const select::Knob* now = result.selection().find_knob(k.name);
      if (!now || result.interp->show(now->value) != in.show(k.value)) {
        std::cerr << "sexpgpu new: internal error: knob '" << lower(k.name->name)
                  << "' is not the selected value in the result; nothing was written\n";
        exit_code = kFileErrors;
        return;
      }
    }

    std::string io_error;
    if (!write_file_new(opts->to, formatted, &io_error)) {
      std::cerr << "sexpgpu new: " << io_error << "\n";
      exit_code = io_error.ends_with("already exists") ? kUsage : kRunFailed;
      return;
    }
    if (!quiet()) {
      std::cerr << "wrote " << opts->to << " from " << opts->from;
      if (changed.empty()) std::cerr << " (no default changed)";
      std::cerr << "\n";
      for (const std::string& c : changed) std::cerr << "  " << c << "\n";
      std::set<std::string> standard;
      for (uint32_t f : in.library_files) standard.insert(in.sources.file(f).path);
      std::vector<std::string> modules;
      for (const auto& m : in.modules)
        if (!m->path.empty() && !standard.count(m->path)) modules.push_back(m->path);
      if (!modules.empty()) {
        std::cerr << "  not copied: the modules it requires, which it still requires from where "
                     "they are:";
        for (const std::string& m : modules) std::cerr << " " << m;
        std::cerr << "\n";
      }
    }
    exit_code = kOk;
    (void)s.release();  // the process ends next
  });
}

}  // namespace sexpgpu::cli
