// The declared selection: pre-reading defknob/defvariant/defsweep, resolving
// --variant/--set/--point against them, checking values, the slug.
#include "select/selection.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "lisp/builtins.h"

namespace sexpgpu::select {

namespace {

void report(Interp& in, const char* code, const Span& span, std::string message,
            std::string fix = "") {
  Diagnostic d;
  d.code = code;
  d.severity = code[0] == 'W' ? Severity::Warning : Severity::Error;
  d.span = span;
  d.message = std::move(message);
  d.fix = std::move(fix);
  in.sink.report(std::move(d));
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = char(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool head_is(Value form, const char* name) {
  return form.is_cons() && form.cons()->car.is_symbol() && form.cons()->car.sym()->name == name &&
         form.cons()->car.sym()->qualifier.empty();
}

std::vector<Value> items(Value list) {
  std::vector<Value> out;
  for (; list.is_cons(); list = list.cons()->cdr) out.push_back(list.cons()->car);
  return out;
}

// A span for diagnostics with no declaration: the file, line 0.
Span file_span(const std::vector<lisp::ReadForm>& forms) {
  Span s;
  if (!forms.empty()) s.file = forms[0].span.file;
  return s;
}

std::string names_of(const std::vector<std::string>& names) {
  if (names.empty()) return "none are declared";
  std::string out = "declared: ";
  for (size_t i = 0; i < names.size(); ++i) out += (i ? ", " : "") + names[i];
  return out;
}

std::string knob_names(const Selection& sel) {
  std::vector<std::string> n;
  for (const Knob& k : sel.knobs) n.push_back(lower(k.name->name));
  return names_of(n);
}

// Keyword arguments of a declaration: (NAME REQUIRED... :key value ...).
Value option(const std::vector<Value>& parts, size_t from, const char* key) {
  for (size_t i = from; i + 1 < parts.size(); i += 2)
    if (parts[i].is_symbol() && parts[i].sym()->keyword && parts[i].sym()->name == key)
      return parts[i + 1];
  return Value();
}

bool is_data_list(Value v) {
  if (!v.is_cons()) return false;
  Value first = v.cons()->car;
  if (first.is_number() || first.is_string()) return true;
  if (first.is_symbol() && first.sym()->keyword) return true;
  return first.is_cons() && is_data_list(first);
}

// Checks a knob's value against its :type, :min and :max; a float knob
// takes an integer and converts it.
bool check_value(Interp& in, Knob& k, Value& v, std::string* why) {
  if (!k.type.is_nil()) {
    bool float_type = k.type.is_symbol() &&
                      (k.type.sym()->name == "FLOAT" || k.type.sym()->name == "DOUBLE-FLOAT" ||
                       k.type.sym()->name == "REAL");
    if (float_type && v.is_int() && k.type.sym()->name != "REAL") v = Value::flt(double(v.i));
    if (!lisp::typep(in, v, k.type)) {
      *why = "is not of type " + in.show(k.type);
      return false;
    }
  }
  if (v.is_number()) {
    double x = v.is_int() ? double(v.i) : v.f;
    if (k.min && x < *k.min) {
      *why = "is below the minimum " + lisp::format_float(*k.min);
      return false;
    }
    if (k.max && x > *k.max) {
      *why = "is above the maximum " + lisp::format_float(*k.max);
      return false;
    }
  }
  return true;
}

void read_knob(Interp& in, const lisp::ReadForm& rf, Selection& sel) {
  std::vector<Value> parts = items(rf.form.cons()->cdr);
  if (parts.empty() || !parts[0].is_symbol() || parts[0].sym()->keyword) {
    report(in, "E-KNOB-TYPE", rf.span,
           "defknob needs a name and a default: (defknob NAME DEFAULT ...)");
    return;
  }
  Knob k;
  k.name = parts[0].sym();
  k.span = rf.span;
  k.type = option(parts, 2, "TYPE");
  if (k.type.p == nullptr && k.type.kind == lisp::Kind::Symbol) k.type = in.nil();
  Value doc = option(parts, 2, "DOC");
  if (doc.is_string()) k.doc = lisp::u32_to_utf8(doc.str()->chars);
  for (const char* key : {"MIN", "MAX"}) {
    Value m = option(parts, 2, key);
    if (m.is_number()) (key[1] == 'I' ? k.min : k.max) = m.is_int() ? double(m.i) : m.f;
  }
  // The default is evaluated now, earlier knobs bound to their values.
  Value def = parts.size() > 1 ? parts[1] : in.nil();
  Value v;
  if (!in.eval_toplevel(def, &v, &rf.span)) return;
  k.default_value = v;
  k.value = v;
  sel.knobs.push_back(k);
}

void read_variant(Interp& in, const lisp::ReadForm& rf, Selection& sel) {
  std::vector<Value> parts = items(rf.form.cons()->cdr);
  if (parts.empty() || !parts[0].is_symbol()) {
    report(in, "E-VARIANT-UNKNOWN", rf.span,
           "defvariant needs a name: (defvariant NAME [:doc S] (:knob value ...))");
    return;
  }
  Variant var;
  var.name = lower(parts[0].sym()->name);
  var.span = rf.span;
  Value doc = option(parts, 1, "DOC");
  if (doc.is_string()) var.doc = lisp::u32_to_utf8(doc.str()->chars);
  Value plist = parts.back();
  std::vector<Value> kv = items(plist);
  for (size_t i = 0; i + 1 < kv.size(); i += 2) {
    Value value;
    if (!kv[i].is_symbol() || !in.eval_toplevel(kv[i + 1], &value, &rf.span)) continue;
    var.sets.push_back({in.intern(kv[i].sym()->name), value});
  }
  sel.variants.push_back(std::move(var));
}

void read_sweep(Interp& in, const lisp::ReadForm& rf, Selection& sel) {
  std::vector<Value> parts = items(rf.form.cons()->cdr);
  if (parts.size() < 2 || !parts[0].is_symbol()) {
    report(in, "E-SWEEP-UNKNOWN", rf.span, "defsweep needs a name and (:knob (values ...) ...)");
    return;
  }
  Sweep sw;
  sw.name = lower(parts[0].sym()->name);
  sw.span = rf.span;
  std::vector<Value> kv = items(parts[1]);
  for (size_t i = 0; i + 1 < kv.size(); i += 2) {
    if (!kv[i].is_symbol()) continue;
    std::vector<Value> values;
    for (Value x : items(kv[i + 1])) {
      Value v;
      if (in.eval_toplevel(x, &v, &rf.span)) values.push_back(v);
    }
    sw.axes.push_back({in.intern(kv[i].sym()->name), values});
  }
  sel.sweeps.push_back(std::move(sw));
}

// One knob setting the request asks for, in the order it applies.
struct Setting {
  lisp::Symbol* knob;
  Value value;
  Span where;
  std::string from;  // "variant 'wide'", "--set", "--point"
  bool by_variant;
};

// The :type of a knob's defknob form, read without evaluating anything (a
// string knob's --set value is taken verbatim).
bool declared_string(const std::vector<lisp::ReadForm>& forms, const std::string& upper_name) {
  for (const lisp::ReadForm& rf : forms) {
    if (!head_is(rf.form, "DEFKNOB")) continue;
    std::vector<Value> parts = items(rf.form.cons()->cdr);
    if (parts.empty() || !parts[0].is_symbol() || parts[0].sym()->name != upper_name) continue;
    Value type = option(parts, 2, "TYPE");
    // No :type: option() gives the null symbol, which names nothing.
    return type.is_symbol() && type.p != nullptr && type.sym()->name == "STRING";
  }
  return false;
}

}  // namespace

size_t Sweep::points() const {
  size_t n = axes.empty() ? 0 : 1;
  for (const auto& a : axes) n *= a.second.size();
  return n;
}

std::vector<std::pair<lisp::Symbol*, Value>> Sweep::point(size_t i) const {
  std::vector<std::pair<lisp::Symbol*, Value>> out(axes.size());
  for (size_t a = axes.size(); a-- > 0;) {
    size_t n = axes[a].second.size();
    out[a] = {axes[a].first, axes[a].second[i % n]};
    i /= n;
  }
  return out;
}

Knob* Selection::find_knob(const lisp::Symbol* s) {
  for (Knob& k : knobs)
    if (k.name->name == s->name) return &k;
  return nullptr;
}

const Variant* Selection::find_variant(const std::string& name) const {
  for (const Variant& v : variants)
    if (v.name == name) return &v;
  return nullptr;
}

const Sweep* Selection::find_sweep(const std::string& name) const {
  for (const Sweep& s : sweeps)
    if (s.name == name) return &s;
  return nullptr;
}

std::string Selection::slug(Interp& in, const std::string& stem) const {
  std::string out = stem;
  for (const std::string& v : request.variants) out += "." + v;
  // Knobs the variants did not set and that differ from their defaults.
  for (const Knob& k : knobs) {
    if (!k.selected || lisp::eql(k.value, k.default_value)) continue;
    bool by_variant = false;
    for (const std::string& vn : request.variants)
      if (const Variant* v = find_variant(vn))
        for (const auto& [name, value] : v->sets)
          if (name->name == k.name->name && lisp::eql(value, k.value)) by_variant = true;
    if (!by_variant) out += "." + lower(k.name->name) + "=" + in.show(k.value);
  }
  return out;
}

Value eval_option(Interp& in, Value form) {
  if (!is_data_list(form)) return in.eval(form, nullptr);
  std::vector<Value> out;
  for (Value x : items(form)) out.push_back(eval_option(in, x));
  return in.list_from(out, in.nil());
}

// The request as an ordered list of settings: variants left to right, then
// --set, then --point.
std::vector<Setting> request_settings(Interp& in, const std::vector<lisp::ReadForm>& forms,
                                      const Selection& sel, const Span& nowhere) {
  std::vector<Setting> out;
  for (const std::string& vn : sel.request.variants) {
    const Variant* v = sel.find_variant(vn);
    if (!v) {
      std::vector<std::string> n;
      for (const Variant& x : sel.variants) n.push_back(x.name);
      report(in, "E-VARIANT-UNKNOWN", nowhere,
             "no variant named '" + vn + "' (" + names_of(n) + ")");
      continue;
    }
    for (const auto& [name, value] : v->sets)
      out.push_back({name, value, v->span, "variant '" + vn + "'", true});
  }
  for (const auto& [name, text] : sel.request.sets) {
    lisp::Symbol* s = in.intern(lisp::upcase_ascii(name));
    Value v;
    if (declared_string(forms, s->name)) {
      v = in.make_string(lisp::utf8_to_u32(text));
    } else {
      try {
        std::vector<lisp::ReadForm> read = lisp::read_string_forms(in, "--set " + name, text);
        if (read.size() != 1) throw lisp::LispError{};
        v = read[0].form;
      } catch (lisp::LispError& e) {
        // A literal the reader refuses for its size is one literal too big.
        if (e.diag.code == "E-OVERFLOW")
          report(in, "E-OVERFLOW", nowhere, "--set " + name + "=" + text + ": " + e.diag.message);
        else
          report(in, "E-KNOB-TYPE", nowhere,
                 "--set " + name + "=" + text + ": not one Lisp literal");
        continue;
      }
    }
    out.push_back({s, v, nowhere, "--set", false});
  }
  if (!sel.request.point.empty()) {
    size_t colon = sel.request.point.rfind(':');
    std::string name = sel.request.point.substr(0, colon);
    const Sweep* sw = sel.find_sweep(name);
    std::string index = colon == std::string::npos ? "" : sel.request.point.substr(colon + 1);
    char* end = nullptr;
    long i = std::strtol(index.c_str(), &end, 10);
    if (!sw) {
      std::vector<std::string> n;
      for (const Sweep& x : sel.sweeps) n.push_back(x.name);
      report(in, "E-SWEEP-UNKNOWN", nowhere, "no sweep named '" + name + "' (" + names_of(n) + ")");
    } else if (index.empty() || *end || i < 0 || size_t(i) >= sw->points()) {
      report(in, "E-SWEEP-UNKNOWN", sw->span,
             "--point " + sel.request.point + ": sweep '" + name + "' has points 0 to " +
                 std::to_string(long(sw->points()) - 1));
    } else {
      for (const auto& [knob, value] : sw->point(size_t(i)))
        out.push_back({knob, value, sw->span, "--point", false});
    }
  }
  return out;
}

// Reads one defknob, applies the request's settings to it, binds it, and
// checks its value (bound first, so a bad :type leaves no unbound name).
static void bind_knob(Interp& in, const lisp::ReadForm& rf, Selection& sel,
                      const std::vector<Setting>& settings) {
  {
    size_t before = sel.knobs.size();
    read_knob(in, rf, sel);
    if (sel.knobs.size() == before) return;
    Knob& k = sel.knobs.back();
    const Setting* by_variant = nullptr;
    for (const Setting& s : settings) {
      if (s.knob->name != k.name->name) continue;
      if (s.by_variant && by_variant && !lisp::eql(by_variant->value, s.value))
        report(in, "W-VARIANT-CONFLICT", s.where,
               by_variant->from + " and " + s.from + " set '" + lower(k.name->name) +
                   "' differently; " + s.from + " wins");
      if (s.by_variant) by_variant = &s;
      k.value = s.value;
      k.selected = true;
    }
    in.set_symbol_value(k.name, k.value);
    std::string why;
    if (!check_value(in, k, k.value, &why))
      report(in, "E-KNOB-TYPE", k.span,
             "knob '" + lower(k.name->name) + "' = " + in.show(k.value) + " " + why);
    in.set_symbol_value(k.name, k.value);  // a float knob's integer, converted
  }
}

// Every setting, and every declared variant and sweep, names declared knobs.
static void check_names(Interp& in, const Selection& sel, const std::vector<Setting>& settings) {
  for (const Setting& s : settings)
    if (!sel.find_knob(s.knob))
      report(in, "E-KNOB-UNKNOWN", s.where,
             s.from + " sets '" + lower(s.knob->name) + "', which is not a declared knob (" +
                 knob_names(sel) + ")");
  for (const Variant& v : sel.variants)
    for (const auto& [name, value] : v.sets)
      if (!sel.find_knob(name))
        report(in, "E-KNOB-UNKNOWN", v.span,
               "variant '" + v.name + "' sets '" + lower(name->name) +
                   "', which is not a declared knob (" + knob_names(sel) + ")");
  for (const Sweep& sw : sel.sweeps)
    for (const auto& [name, values] : sw.axes)
      if (!sel.find_knob(name))
        report(in, "E-KNOB-UNKNOWN", sw.span,
               "sweep '" + sw.name + "' sets '" + lower(name->name) +
                   "', which is not a declared knob (" + knob_names(sel) + ")");
}

void preread(Interp& in, const std::vector<lisp::ReadForm>& forms, Selection& sel) {
  Span nowhere = file_span(forms);
  for (const lisp::ReadForm& rf : forms) {
    if (head_is(rf.form, "DEFVARIANT")) read_variant(in, rf, sel);
    if (head_is(rf.form, "DEFSWEEP")) read_sweep(in, rf, sel);
  }
  std::vector<Setting> settings = request_settings(in, forms, sel, nowhere);
  // Knobs in order: a default may use earlier knobs, which are bound to
  // their selected values by then.
  for (const lisp::ReadForm& rf : forms) {
    if (!head_is(rf.form, "DEFKNOB")) continue;
    try {
      bind_knob(in, rf, sel, settings);
    } catch (lisp::LispError& e) {  // a bad :type, a constant's name: at the defknob
      Value name = items(rf.form.cons()->cdr).empty() ? Value() : rf.form.cons()->cdr.cons()->car;
      if (name.is_symbol()) sel.failed.push_back(name.sym());
      e.diag.span = rf.span;
      in.sink.report(std::move(e.diag));
    }
  }
  check_names(in, sel, settings);
}

namespace {
// Counts the symbols of a form tree (conses only; vectors hold no code).
void count_symbols(Value v, std::unordered_map<const lisp::Symbol*, int>& seen, int depth = 0) {
  if (depth > 10000) return;  // the reader's nesting limit is far below
  for (; v.is_cons(); v = v.cons()->cdr) {
    Value x = v.cons()->car;
    if (x.is_symbol())
      ++seen[x.sym()];
    else if (x.is_cons())
      count_symbols(x, seen, depth + 1);
  }
  if (v.is_symbol()) ++seen[v.sym()];
}
}  // namespace

void warn_unused(Interp& in, const std::vector<lisp::ReadForm>& forms, const Selection& sel) {
  // A knob is read where its name appears in the file outside its own
  // defknob: known before anything is staged, and a knob used only in a
  // model or optimizer counts.
  std::unordered_map<const lisp::Symbol*, int> seen;
  for (const lisp::ReadForm& rf : forms) {
    if (head_is(rf.form, "DEFKNOB")) {
      std::vector<Value> parts = items(rf.form.cons()->cdr);
      for (size_t i = 1; i < parts.size(); ++i)
        if (parts[i].is_cons())
          count_symbols(parts[i], seen);
        else if (parts[i].is_symbol())
          ++seen[parts[i].sym()];
      continue;
    }
    count_symbols(rf.form, seen);
  }
  for (const Knob& k : sel.knobs)
    if (!seen.count(k.name) &&
        std::find(sel.failed.begin(), sel.failed.end(), k.name) == sel.failed.end())
      report(in, "W-UNUSED-KNOB", k.span, "knob '" + lower(k.name->name) + "' is never read",
             "remove it, or use it");
}

Selection* selection_of(Interp& in) {
  return in.extensions.find<Selection>();
}

void register_builtins(Interp& in) {
  SG_BUILTIN(in, "%DEFKNOB", 1, 1, "binds a knob to its selected value (what defknob expands to)", {
    Selection* sel = selection_of(in);
    if (sel && args[0].is_symbol())
      for (const lisp::Symbol* f : sel->failed)
        if (f == args[0].sym()) return args[0];
    Knob* k = sel && args[0].is_symbol() ? sel->find_knob(args[0].sym()) : nullptr;
    if (!k)
      in.fail("E-KNOB-UNKNOWN",
              "defknob '" + in.show(args[0]) +
                  "' was not read before the file: knobs are declared "
                  "by top-level defknob forms, not made by macros or inside other forms");
    in.set_symbol_value(k->name, k->value);
    return args[0];
  });
}

}  // namespace sexpgpu::select
