// defparam, scope, param and probe (model.h): the parameter registry, the
// scope path, call sites per trace, and the staging of `init`.
//
// A parameter is a Param node named by its *storage* path in whichever
// function is being staged, made on first use there, so a tie and its
// target are one node: one gradient, one optimizer state.
#include "runfile/model.h"

#include <algorithm>
#include <optional>
#include <unordered_map>

#include "lisp/builtins.h"
#include "lisp/span_guard.h"
#include "stage/args.h"
#include "stage/stager.h"

namespace sexpgpu::runfile {

using lisp::Interp;
using lisp::Value;
using stage::Stager;

const ParamDecl* Params::find(const std::string& path) const {
  auto it = index_.find(path);
  return it == index_.end() ? nullptr : &decls[it->second];
}

const ParamDecl* Params::storage(const std::string& path) const {
  const ParamDecl* d = find(path);
  return d && !d->tie.empty() ? find(d->tie) : d;
}

void Params::add(ParamDecl decl) {
  index_[decl.path] = decls.size();
  decls.push_back(std::move(decl));
}

namespace {

struct ModelState {
  Params params;
  std::vector<std::string> scope;  // the path segments pushed now
  bool in_trace = false;
  // The first call site of each path declared in the current trace.
  std::unordered_map<std::string, Span> trace_sites;
  std::vector<Probe> probes;
  // How explain shows an initialiser, by function object (describe-init).
  std::unordered_map<const void*, std::string> init_texts;
  Value default_init;
};

ModelState& state(Interp& in) {
  return in.extensions.get<ModelState>();
}

std::string lower(std::string s) {
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string text_of(Value v) {
  return lisp::u32_to_utf8(v.str()->chars);
}

std::string where(Interp& in, Span s) {
  if (!s.valid()) return "an unknown position";
  return in.sources.file(s.file).path + ":" + std::to_string(s.line) + ":" + std::to_string(s.col);
}

bool same_site(Span a, Span b) {
  return a.file == b.file && a.line == b.line && a.col == b.col;
}

std::string joined(const std::vector<std::string>& segments) {
  std::string out;
  for (const std::string& s : segments) out += (out.empty() ? "" : ".") + s;
  return out;
}

// ---- path segments -------------------------------------------------------------------------

void add_segment(Interp& in, const std::string& segment, Value written,
                 std::vector<std::string>& out) {
  bool bad = segment.empty() || segment.find_first_of("* \t\n") != std::string::npos;
  if (bad)
    in.fail("E-TYPE", "scope: " + in.show(written) + " gives the path segment '" + segment +
                          "'; segments are non-empty and have no spaces or '*'");
  out.push_back(segment);
}

void add_dotted(Interp& in, const std::string& text, Value written, std::vector<std::string>& out) {
  size_t start = 0;
  for (size_t dot; (dot = text.find('.', start)) != std::string::npos; start = dot + 1)
    add_segment(in, text.substr(start, dot - start), written, out);
  add_segment(in, text.substr(start), written, out);
}

// One segment from a string (dots split it), an integer or a symbol.
void atom_segments(Interp& in, Value v, std::vector<std::string>& out) {
  if (v.is_string())
    add_dotted(in, text_of(v), v, out);
  else if (v.is_int() && v.i >= 0)
    out.push_back(std::to_string(v.i));
  else if (v.is_symbol() && !v.is_nil())
    add_dotted(in, lower(v.sym()->name), v, out);
  else
    in.type_error(v, "a path segment (a string, a non-negative integer or a symbol)", "scope");
}

// A scope: nil (nothing), one segment, or a list of them.
std::vector<std::string> scope_segments(Interp& in, Value v) {
  std::vector<std::string> out;
  if (v.is_nil()) return out;
  if (!v.is_cons()) {
    atom_segments(in, v, out);
    return out;
  }
  for (Value item : in.list_items(v, "scope")) atom_segments(in, item, out);
  return out;
}

struct ScopePush {
  ModelState& ms;
  size_t depth;
  ScopePush(ModelState& m, const std::vector<std::string>& segments)
      : ms(m), depth(m.scope.size()) {
    ms.scope.insert(ms.scope.end(), segments.begin(), segments.end());
  }
  ~ScopePush() { ms.scope.resize(depth); }
};

// ---- parameters as staged tensors ----------------------------------------------------------

// The Param node of `storage` in the function being staged, made on first use.
Value param_tensor(Interp& in, const ParamDecl& storage) {
  Stager& st = stage::stager_of(in);
  ir::Function& fn = st.current();
  for (ir::NodeId id : fn.inputs)
    if (fn.node(id).op == ir::Op::Param && fn.node(id).attrs.name == storage.path)
      return st.wrap(id);
  ir::Builder b(fn);
  return st.wrap(b.param(storage.path, storage.type));
}

void record_module_param(Interp& in, const ParamDecl& d) {
  ir::Module& m = stage::stager_of(in).module();
  for (const ir::ParamInfo& p : m.params)
    if (p.path == d.path) return;
  m.params.push_back(ir::ParamInfo{d.path, d.type, d.trainable});
}

[[noreturn]] void unknown_param(Interp& in, const std::string& path, const std::string& what) {
  const Params& ps = state(in).params;
  std::vector<std::pair<size_t, std::string>> near;
  for (const ParamDecl& d : ps.decls) near.emplace_back(lisp::edit_distance(d.path, path), d.path);
  std::sort(near.begin(), near.end());
  std::string fix;
  for (size_t i = 0; i < near.size() && i < 3; ++i)
    fix += (fix.empty() ? "declared: '" : "', '") + near[i].second;
  fix = ps.decls.empty()
            ? "no parameter is declared yet: declare it (defparam, or an nn layer) "
              "before it is used"
            : fix + "'" +
                  (ps.decls.size() > 3 ? " (nearest of " + std::to_string(ps.decls.size()) + ")"
                                       : "");
  in.fail("E-PARAM-UNKNOWN", what + ": no parameter '" + path + "' is declared", fix);
}

[[noreturn]] void redeclared(Interp& in, const std::string& message, Span first) {
  lisp::LispError e;
  e.diag.code = "E-PARAM-REDECLARED";
  e.diag.span = in.current_span();
  e.diag.message = message + " (first at " + where(in, first) + ")";
  e.diag.fix =
      "give each declaration its own name (:name of an nn layer, or a scope), or use (param PATH)";
  e.diag.notes.push_back(DiagNote{first, "first declared here"});
  throw e;
}

std::string describe_init(Interp& in, Value init, Value written) {
  ModelState& ms = state(in);
  auto it = ms.init_texts.find(init.p);
  if (it != ms.init_texts.end()) return it->second;
  Value name = init.fn()->name;
  if (name.p && name.is_symbol() && !name.is_nil()) return lower(name.sym()->name);
  bool user_form = in.is_user_file(in.span_of(in.cur_span).file);
  if (user_form && !written.is_nil() && !written.is_symbol()) return in.show(written);
  return in.show(init);
}

Value init_function(Interp& in, Value v) {
  if (v.is_symbol() && !v.is_nil()) return in.resolve_function(v);
  if (!v.is_function()) in.type_error(v, "a function of the shape", "defparam :init");
  return v;
}

std::vector<std::string> tag_names(Interp& in, Value v) {
  std::vector<std::string> out;
  for (Value t :
       v.is_cons() || v.is_nil() ? in.list_items(v, "defparam :tags") : std::vector<Value>{v}) {
    if (t.is_symbol() && !t.is_nil())
      out.push_back(lower(t.sym()->name));
    else if (t.is_string())
      out.push_back(lower(text_of(t)));
    else
      in.type_error(t, "a tag keyword such as :no-decay", "defparam :tags");
  }
  return out;
}

std::string param_name(Interp& in, Value v, const char* what) {
  if (v.is_string()) return text_of(v);
  if (v.is_symbol() && !v.is_nil()) return lower(v.sym()->name);
  in.type_error(v, "a parameter name (a symbol or a string)", what);
}

enum Key { kInit, kDtype, kTrainable, kTags, kTie, kKeys };

// A :tie declaration takes its target's storage: same shape, dtype and
// trainability, and no initialiser of its own.
void fill_tie(Interp& in, ParamDecl& d, const Value* k, const bool* has) {
  const std::string target = param_name(in, k[kTie], "defparam :tie");
  const ParamDecl* s = state(in).params.storage(target);
  if (!s) unknown_param(in, target, "defparam :tie");
  if (has[kInit])
    in.fail("E-TYPE", "defparam " + d.path + ": a tied parameter has no :init of its own",
            "its values are those of '" + s->path + "'");
  ir::DType dtype = stage::arg_dtype(in, k[kDtype], s->type.dtype);
  if (dtype != s->type.dtype)
    in.fail("E-DTYPE", "defparam " + d.path + " is " + std::string(ir::ir_name(dtype)) +
                           " but its tie '" + s->path + "' is " + s->type.to_string());
  if (!(d.type.shape == s->type.shape))
    in.fail("E-SHAPE", "defparam " + d.path + " is " +
                           ir::TensorType{dtype, d.type.shape}.to_string() + " but its tie '" +
                           s->path + "' is " + s->type.to_string());
  if (has[kTrainable] && k[kTrainable].truthy() != s->trainable)
    in.fail("E-TYPE", "defparam " + d.path + ": a tied parameter is trained exactly when '" +
                          s->path + "' is");
  d.type.dtype = dtype;
  d.trainable = s->trainable;
  d.tie = s->path;
  d.init = s->init;
  d.init_text = s->init_text;
}

ParamDecl new_decl(Interp& in, const std::string& path, const ir::Shape& shape, Value written,
                   const Value* k, const bool* has) {
  ParamDecl d;
  d.path = path;
  d.type.shape = shape;
  d.span = in.current_span();
  d.tags = tag_names(in, k[kTags]);
  if (has[kTie] && !k[kTie].is_nil()) {
    fill_tie(in, d, k, has);
    return d;
  }
  d.type.dtype = stage::arg_dtype(in, k[kDtype], ir::kDefaultDType);
  d.trainable = !has[kTrainable] || k[kTrainable].truthy();
  d.init = k[kInit].is_nil() ? state(in).default_init : init_function(in, k[kInit]);
  d.init_text = describe_init(in, d.init, written);
  return d;
}

// A path declared before: the same type and tie, and within one trace the
// same call site.
void check_redeclaration(Interp& in, const ParamDecl& old, const ParamDecl& now) {
  if (!(old.type == now.type) || old.tie != now.tie) {
    auto show = [](const ParamDecl& d) {
      return d.type.to_string() + (d.tie.empty() ? "" : " tied to '" + d.tie + "'");
    };
    redeclared(in,
               "parameter '" + now.path + "' is declared as " + show(now) + " here and as " +
                   show(old) + " before",
               old.span);
  }
}

Value defparam(Interp& in, Value* args, int nargs) {
  ModelState& ms = state(in);
  std::vector<std::string> segments = ms.scope;
  add_dotted(in, param_name(in, args[0], "defparam"), args[0], segments);
  const std::string path = joined(segments);
  ir::Shape shape = stage::arg_shape(in, args[1], "defparam");
  Value k[kKeys];
  bool has[kKeys];
  in.parse_keys(args, nargs, 3, {"INIT", "DTYPE", "TRAINABLE", "TAGS", "TIE"}, k, has);
  ParamDecl now = new_decl(in, path, shape, args[2], k, has);
  if (const ParamDecl* old = ms.params.find(path)) {
    check_redeclaration(in, *old, now);
  } else {
    ms.params.add(now);
    if (now.tie.empty()) record_module_param(in, now);
  }
  if (ms.in_trace) {
    auto [site, first] = ms.trace_sites.emplace(path, now.span);
    if (!first && !same_site(site->second, now.span))
      redeclared(in, "parameter '" + path + "' is declared from two places in one trace",
                 site->second);
  }
  return param_tensor(in, *ms.params.storage(path));
}

// ---- scopes, models, probes ------------------------------------------------------------------

Value call_thunk(Interp& in, Value thunk) {
  if (!thunk.is_function()) in.type_error(thunk, "a function of no arguments", "scope");
  return in.apply(thunk, nullptr, 0);
}

Value call_in_scope(Interp& in, Value segments, Value thunk) {
  ScopePush push(state(in), scope_segments(in, segments));
  return call_thunk(in, thunk);
}

// A model called outside any trace is a trace of its own.
Value call_model(Interp& in, Value name, Value thunk) {
  ModelState& ms = state(in);
  std::optional<TraceScope> own;
  if (!ms.in_trace) own.emplace(in);
  return call_in_scope(in, name, thunk);
}

Value probe(Interp& in, Value name, Value x) {
  ModelState& ms = state(in);
  Stager& st = stage::stager_of(in);
  ir::NodeId node = st.tensor_operand(x, "probe");
  std::vector<std::string> segments = ms.scope;
  add_dotted(in, param_name(in, name, "probe"), name, segments);
  std::string full = joined(segments);
  size_t seen = std::count_if(ms.probes.begin(), ms.probes.end(), [&](const Probe& p) {
    return p.name == full || p.name.rfind(full + "#", 0) == 0;
  });
  if (seen) full += "#" + std::to_string(seen + 1);
  ms.probes.push_back(Probe{full, node, in.current_span()});
  return x;
}

Value param_info(Interp& in, const ParamDecl& d) {
  std::vector<Value> dims, tags;
  for (int64_t n : d.type.shape.dims()) dims.push_back(Value::integer(n));
  for (const std::string& t : d.tags) tags.push_back(in.sym_kw(lisp::upcase_ascii(t)));
  return in.list({in.sym_kw("PATH"), in.make_string_utf8(d.path), in.sym_kw("SHAPE"),
                  in.list_from(dims), in.sym_kw("DTYPE"),
                  in.sym_kw(lisp::upcase_ascii(ir::ir_name(d.type.dtype))), in.sym_kw("INIT"),
                  in.make_string_utf8(d.init_text), in.sym_kw("TAGS"), in.list_from(tags),
                  in.sym_kw("TRAINABLE"), in.boolean(d.trainable), in.sym_kw("TIE"),
                  d.tie.empty() ? in.nil() : in.make_string_utf8(d.tie)});
}

const ParamDecl& known_param(Interp& in, Value path, const char* what) {
  if (!path.is_string()) in.type_error(path, "a parameter path (a string)", what);
  const ParamDecl* d = state(in).params.find(text_of(path));
  if (!d) unknown_param(in, text_of(path), what);
  return *d;
}

void register_scope_builtins(Interp& in) {
  SG_BUILTIN(in, "%CALL-IN-SCOPE", 2, 2, "calls a function with path segments pushed (scope)",
             { return call_in_scope(in, args[0], args[1]); });
  SG_BUILTIN(in, "%CALL-MODEL", 2, 2, "calls a model's body under its name (defmodel)",
             { return call_model(in, args[0], args[1]); });
  SG_BUILTIN(in, "CURRENT-SCOPE", 0, 0, "the scope path parameters are declared under now",
             { return in.make_string_utf8(joined(state(in).scope)); });
  SG_BUILTIN(in, "PROBE", 2, 2, "(probe NAME x): x, marked as an activation for diagnostics",
             { return probe(in, args[0], args[1]); });
}

void register_param_builtins(Interp& in) {
  SG_BUILTIN(in, "%DEFPARAM", 3, -1, "declares a parameter (what defparam expands to)",
             { return defparam(in, args, nargs); });
  SG_BUILTIN(in, "PARAM", 1, 1, "(param PATH): a declared parameter as a staged tensor", {
    const ParamDecl& d = known_param(in, args[0], "param");
    return param_tensor(in, *state(in).params.storage(d.path));
  });
  SG_BUILTIN(in, "PARAM-PATHS", 0, 0, "the paths of every declared parameter, in order", {
    std::vector<Value> out;
    for (const ParamDecl& d : state(in).params.decls) out.push_back(in.make_string_utf8(d.path));
    return in.list_from(out);
  });
  SG_BUILTIN(in, "PARAM-INFO", 1, 1, "(param-info PATH): a declared parameter as a plist",
             { return param_info(in, known_param(in, args[0], "param-info")); });
  SG_BUILTIN(in, "DESCRIBE-INIT", 2, 2,
             "(describe-init FN TEXT): FN, with TEXT as how explain shows it as an :init", {
               if (!args[0].is_function()) in.type_error(args[0], "a function", "describe-init");
               if (!args[1].is_string()) in.type_error(args[1], "a string", "describe-init");
               state(in).init_texts[args[0].p] = text_of(args[1]);
               return args[0];
             });
  SG_BUILTIN(in, "%DEFAULT-PARAM-INIT", 1, 1, "normal(0, 0.02) draws: defparam's default :init", {
    Stager& st = stage::stager_of(in);
    ir::Attrs a;
    a.shape = stage::dims_of(stage::arg_shape(in, args[0], "defparam :init"));
    a.dtype = ir::kDefaultDType;
    a.mean = 0.0;
    a.stddev = 0.02;
    a.stream = st.next_stream();
    return st.stage_value(ir::Op::RandomNormal, {st.rng_state()}, std::move(a));
  });
  SG_BUILTIN(in, "%SHAPE-ERROR", 1, -1, "E-SHAPE with a format message (for library layers)", {
    if (!args[0].is_string()) in.type_error(args[0], "a format string", "%shape-error");
    in.fail("E-SHAPE", lisp::lisp_format(in, args[0].str()->chars, args + 1, nargs - 1));
  });
  state(in).default_init = in.intern("%DEFAULT-PARAM-INIT")->cell.function;
  state(in).init_texts[state(in).default_init.p] = "normal(std=0.02)";
}

// ---- init ----------------------------------------------------------------------------------

Value shape_list(Interp& in, const ir::Shape& s) {
  std::vector<Value> dims;
  for (int64_t n : s.dims()) dims.push_back(Value::integer(n));
  return in.list_from(dims);
}

ir::NodeId stage_init_of(Interp& in, const ParamDecl& d) {
  Stager& st = stage::stager_of(in);
  lisp::SpanGuard at(in, in.add_span(d.span));
  Value r = lisp::call1(in, d.init, shape_list(in, d.type.shape));
  stage::StagedTensor* t = stage::as_tensor(r);
  if (!t)
    in.fail_at(d.span, "E-PARAM-INIT",
               "the :init of '" + d.path + "' returned " + in.show(r) + ", not a tensor",
               "an init is a function of the shape returning a tensor of that shape");
  ir::NodeId n = st.operand(r, "init");
  if (!(t->type.shape == d.type.shape))
    in.fail_at(d.span, "E-PARAM-INIT",
               "the :init of '" + d.path + "' returned " + t->type.to_string() +
                   "; the parameter is " + d.type.to_string(),
               "an init is a function of the shape returning a tensor of that shape");
  if (t->type.dtype == d.type.dtype) return n;
  ir::Attrs cast;
  cast.dtype = d.type.dtype;
  return st.stage(ir::Op::Cast, {n}, std::move(cast));
}

}  // namespace

const Params& params_of(const Interp& in) {
  static const Params none;
  const ModelState* models = in.extensions.find<ModelState>();
  return models ? models->params : none;
}

void begin_trace(Interp& in) {
  ModelState& ms = state(in);
  ms.in_trace = true;
  ms.trace_sites.clear();
  ms.probes.clear();
}

void end_trace(Interp& in) {
  state(in).in_trace = false;
}

const std::vector<Probe>& probes_of(const Interp& in) {
  static const std::vector<Probe> none;
  const ModelState* models = in.extensions.find<ModelState>();
  return models ? models->probes : none;
}

void stage_init_function(Interp& in) {
  Stager& st = stage::stager_of(in);
  if (st.module().find("init")) in.fail("E-USER", "the IR function 'init' is staged already");
  st.begin_function("init");
  struct Staging {
    Stager& st;
    bool done = false;
    ~Staging() { done ? st.end_function() : st.abandon_function(); }
  } staging{st};
  st.rng_state();
  for (const ParamDecl& d : state(in).params.decls) {
    if (!d.tie.empty()) continue;
    ir::NodeId n = stage_init_of(in, d);
    st.current().outputs.push_back({"param:" + d.path, n});
  }
  staging.done = true;
}

void register_models(Interp& in) {
  in.extensions.emplace<ModelState>();
  register_scope_builtins(in);
  register_param_builtins(in);
}

}  // namespace sexpgpu::runfile
