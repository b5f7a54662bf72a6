// defloader at check time: source descriptions, opening them with the data
// library, the loader options, and `field` (loaders.h).
//
// A source constructor only checks its arguments and returns a plist
// describing the source, (:source :idx :images "a" :labels "b"); the files
// are found and opened by %defloader, which knows the run file's directory
// and reports a bad file as E-LOADER-SOURCE at the defloader form.
#include "runfile/loaders.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <optional>

#include "data/lookup.h"
#include "lisp/builtins.h"
#include "select/selection.h"

namespace sexpgpu::runfile {

using lisp::Interp;
using lisp::Value;
namespace fs = std::filesystem;

const Loaders& loaders_of(const Interp& in) {
  static const Loaders none;
  const Loaders* loaders = in.extensions.find<Loaders>();
  return loaders ? *loaders : none;
}

namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

bool is_keyword(Value v) {
  return v.is_symbol() && v.sym()->keyword;
}

// ":x" for the keyword X.
std::string keyword_text(Value v) {
  return ":" + lower(v.sym()->name);
}

Value getf(Interp& in, Value plist, Value key) {
  for (Value p = plist; p.is_cons() && lisp::cdr_of(p).is_cons(); p = lisp::cdr_of(lisp::cdr_of(p)))
    if (p.cons()->car == key) return lisp::car_of(lisp::cdr_of(p));
  return in.nil();
}

std::string text_of(Value v) {
  return lisp::u32_to_utf8(v.str()->chars);
}

Value checked_string(Interp& in, Value v, const char* where) {
  if (!v.is_string()) in.type_error(v, "a path (a string)", where);
  return v;
}

// A path, or a list of paths read as one stream: always a list.
Value path_list(Interp& in, Value v, const char* where) {
  if (v.is_string()) return in.list({v});
  if (!v.is_cons()) in.type_error(v, "a path or a list of paths", where);
  for (Value p : in.list_items(v, where)) checked_string(in, p, where);
  return v;
}

Value checked_int(Interp& in, Value v, bool present, const char* key, const char* where) {
  if (!present) in.fail("E-TYPE", std::string(where) + " needs " + key + " (an integer)");
  if (!v.is_int()) in.type_error(v, "an integer", where);
  return v;
}

Value checked_dtype(Interp& in, Value v, const char* where) {
  if (!is_keyword(v) || !ir::parse_dtype(v.sym()->name))
    in.type_error(v, "a dtype keyword (:u8 :u16 :i32 ...)", where);
  return v;
}

void register_constructors(Interp& in) {
  SG_BUILTIN(in, "IDX", 2, 2, "an IDX source: (idx IMAGES LABELS), for defloader's :source", {
    Value kw_source = in.sym_kw("SOURCE");
    return in.list({kw_source, in.sym_kw("IDX"), in.sym_kw("IMAGES"),
                    checked_string(in, args[0], "idx"), in.sym_kw("LABELS"),
                    checked_string(in, args[1], "idx")});
  });
  SG_BUILTIN(in, "TOKENS", 1, -1,
             "a token-file source: (tokens PATHS :dtype D :seq-len N), for defloader's :source", {
               Value k[2];
               bool has[2];
               in.parse_keys(args, nargs, 1, {"DTYPE", "SEQ-LEN"}, k, has);
               if (!has[0]) in.fail("E-TYPE", "tokens needs :dtype (:u8, :u16 or :i32)");
               return in.list({in.sym_kw("SOURCE"), in.sym_kw("TOKENS"), in.sym_kw("PATHS"),
                               path_list(in, args[0], "tokens"), in.sym_kw("DTYPE"),
                               checked_dtype(in, k[0], "tokens"), in.sym_kw("SEQ-LEN"),
                               checked_int(in, k[1], has[1], ":seq-len", "tokens")});
             });
  SG_BUILTIN(in, "TEXT", 1, -1,
             "a byte-level text source: (text PATHS :seq-len N), for defloader's :source", {
               Value k[1];
               bool has[1];
               in.parse_keys(args, nargs, 1, {"SEQ-LEN"}, k, has);
               return in.list({in.sym_kw("SOURCE"), in.sym_kw("TEXT"), in.sym_kw("PATHS"),
                               path_list(in, args[0], "text"), in.sym_kw("SEQ-LEN"),
                               checked_int(in, k[0], has[0], ":seq-len", "text")});
             });
  SG_BUILTIN(in, "NPY", 2, -1,
             "a .npy source: (npy :x PATH :y PATH ...), one array per field, for defloader", {
               if (nargs % 2 != 0) in.fail("E-ARITY", "npy takes pairs: (npy :x PATH :y PATH ...)");
               for (int i = 0; i < nargs; i += 2) {
                 if (!is_keyword(args[i])) in.type_error(args[i], "a field keyword", "npy");
                 checked_string(in, args[i + 1], "npy");
               }
               std::vector<Value> pairs(args, args + nargs);
               return in.list({in.sym_kw("SOURCE"), in.sym_kw("NPY"), in.sym_kw("FIELDS"),
                               in.list_from(pairs)});
             });
  SG_BUILTIN(in, "CSV", 1, -1,
             "a CSV source: (csv PATH :columns ((:x :f32 (0 1)) (:y :i32 2)) :header t)", {
               Value k[2];
               bool has[2];
               in.parse_keys(args, nargs, 1, {"COLUMNS", "HEADER"}, k, has);
               if (!has[0] || !k[0].is_cons())
                 in.fail("E-TYPE", "csv needs :columns, a list of (FIELD DTYPE COLUMNS)");
               return in.list({in.sym_kw("SOURCE"), in.sym_kw("CSV"), in.sym_kw("PATH"),
                               checked_string(in, args[0], "csv"), in.sym_kw("COLUMNS"), k[0],
                               in.sym_kw("HEADER"), k[1].truthy() ? in.t() : in.nil()});
             });
  SG_BUILTIN(
      in, "SYNTHETIC", 1, -1,
      "a generated source: (synthetic :regression|:blobs|:random-tokens ... :seed S)", {
        Value kind = args[0];
        if (!is_keyword(kind) || (kind.sym()->name != "REGRESSION" && kind.sym()->name != "BLOBS" &&
                                  kind.sym()->name != "RANDOM-TOKENS"))
          in.type_error(kind, "one of :regression :blobs :random-tokens", "synthetic");
        static const char* const keys[] = {"FEATURES", "EXAMPLES", "CLASSES",
                                           "VOCAB",    "SEQ-LEN",  "SEED"};
        Value k[6];
        in.parse_keys(args, nargs, 1,
                      {"FEATURES", "EXAMPLES", "CLASSES", "VOCAB", "SEQ-LEN", "SEED"}, k);
        std::vector<Value> desc{in.sym_kw("SOURCE"), in.sym_kw("SYNTHETIC"), in.sym_kw("KIND"),
                                kind};
        for (int i = 0; i < 6; ++i) {
          if (!k[i].is_nil() && !k[i].is_int()) in.type_error(k[i], "an integer", "synthetic");
          desc.push_back(in.sym_kw(keys[i]));
          desc.push_back(k[i].is_nil() ? Value::integer(0) : k[i]);
        }
        return in.list_from(desc);
      });
}

// ---------------------------------------------------------------------------
// Opening a description.

[[noreturn]] void source_error(Interp& in, const std::string& message) {
  in.fail("E-LOADER-SOURCE", message,
          "fix the path or the file; a relative path is looked up in the run file's directory, "
          "then $SEXPGPU_DATA, then /usr/share/datasets");
}

struct Opener {
  Interp& in;
  data::DataDirs dirs;
  Value desc;
  std::vector<spec::DataFile> found = {};  // every path found, for bundle

  Value get(const char* key) { return getf(in, desc, in.sym_kw(key)); }
  // A description may be written by hand, so each part is checked again.
  [[noreturn]] void not_a_source() {
    in.fail("E-TYPE", ":source " + in.show(desc) +
                          " is not a source: use idx, tokens, text, npy, csv or synthetic");
  }
  int64_t get_int(const char* key) {
    Value v = get(key);
    if (!v.is_int()) not_a_source();
    return v.i;
  }
  ir::DType get_dtype(const char* key) {
    Value v = get(key);
    std::optional<ir::DType> d = is_keyword(v) ? ir::parse_dtype(v.sym()->name) : std::nullopt;
    if (!d) not_a_source();
    return *d;
  }
  std::string get_keyword(const char* key) {
    Value v = get(key);
    return is_keyword(v) ? v.sym()->name : "";
  }
  fs::path find(Value written) {
    if (!written.is_string()) not_a_source();
    ir::Result<fs::path> p = data::find_data_file(text_of(written), dirs);
    // An S3 failure keeps its code and fix (credentials, bucket, network).
    if (!p && p.code() == "E-S3") in.fail("E-S3", p.error(), p.diagnostic().fix);
    if (!p) source_error(in, p.error());
    found.push_back({text_of(written), *p});
    return *p;
  }
  std::vector<fs::path> find_all(Value list) {
    std::vector<fs::path> out;
    if (!list.is_cons()) not_a_source();
    for (Value w : in.list_items(list, "defloader")) out.push_back(find(w));
    return out;
  }
  std::vector<data::CsvColumn> csv_columns(Value spec) {
    std::vector<data::CsvColumn> out;
    for (Value c : in.list_items(spec, "csv")) {
      std::vector<Value> parts = c.is_cons() ? in.list_items(c, "csv") : std::vector<Value>{};
      if (parts.size() != 3 || !is_keyword(parts[0]) || !is_keyword(parts[1]) ||
          !ir::parse_dtype(parts[1].sym()->name))
        source_error(in, "bad :columns: " + in.show(c) +
                             " is not (FIELD DTYPE COLUMN) or (FIELD DTYPE (COLUMN ...))");
      data::CsvColumn col{lower(parts[0].sym()->name),
                          *ir::parse_dtype(parts[1].sym()->name),
                          {},
                          parts[2].is_int()};
      for (Value n :
           parts[2].is_int() ? std::vector<Value>{parts[2]} : in.list_items(parts[2], "csv")) {
        if (!n.is_int())
          source_error(in, "bad :columns: " + in.show(n) + " is not a column number");
        col.columns.push_back(n.i);
      }
      out.push_back(std::move(col));
    }
    return out;
  }

  ir::Result<data::SourcePtr> open() {
    const std::string k = get_keyword("SOURCE");
    if (k == "IDX") {
      fs::path images = find(get("IMAGES"));  // reported first when both are missing
      return data::open_idx(images, find(get("LABELS")));
    }
    if (k == "TOKENS")
      return data::open_tokens(find_all(get("PATHS")), get_dtype("DTYPE"), get_int("SEQ-LEN"));
    if (k == "TEXT") return data::open_text(find_all(get("PATHS")), get_int("SEQ-LEN"));
    if (k == "NPY") {
      std::vector<data::NpyField> fields;
      std::vector<Value> pairs = in.list_items(get("FIELDS"), "npy");
      for (size_t i = 0; i + 1 < pairs.size(); i += 2) {
        if (!is_keyword(pairs[i])) not_a_source();
        fields.push_back({lower(pairs[i].sym()->name), find(pairs[i + 1])});
      }
      return data::open_npy(fields);
    }
    if (k == "CSV")
      return data::open_csv(find(get("PATH")), csv_columns(get("COLUMNS")), get("HEADER").truthy());
    if (k == "SYNTHETIC") return data::open_synthetic(synthetic_spec());
    not_a_source();
  }

  data::SyntheticSpec synthetic_spec() {
    const std::string kind = get_keyword("KIND");
    data::SyntheticSpec s;
    s.kind = kind == "REGRESSION"      ? data::SyntheticKind::Regression
             : kind == "BLOBS"         ? data::SyntheticKind::Blobs
             : kind == "RANDOM-TOKENS" ? data::SyntheticKind::RandomTokens
                                       : (not_a_source(), data::SyntheticKind::Blobs);
    s.examples = get_int("EXAMPLES");
    s.features = get_int("FEATURES");
    s.classes = get_int("CLASSES");
    s.vocab = get_int("VOCAB");
    s.seq_len = get_int("SEQ-LEN");
    s.seed = static_cast<uint64_t>(get_int("SEED"));
    return s;
  }
};

fs::path run_dir_of(const Interp& in) {
  std::error_code ec;
  fs::path dir = fs::absolute(fs::path(in.current_file), ec).parent_path();
  return ec || dir.empty() ? fs::current_path(ec) : dir;
}

// ---------------------------------------------------------------------------
// The options.

struct OptionReader {
  Interp& in;
  LoaderDecl& decl;

  [[noreturn]] void bad(const std::string& what) {
    in.fail("E-LOADER-SOURCE", "loader " + decl.name + ": " + what,
            "the options are :source :batch :shuffle :drop-last :split (FROM TO) :seed :stages");
  }
  int64_t positive(Value v, const char* key) {
    if (!v.is_int() || v.i < 1)
      bad(std::string(key) + " must be an integer of at least 1, not " + in.show(v));
    return v.i;
  }
  void split(Value v) {
    std::vector<Value> parts = v.is_cons() ? in.list_items(v, "defloader") : std::vector<Value>{};
    if (parts.size() != 2 || !parts[0].is_number() || !parts[1].is_number())
      bad(":split must be (FROM TO), two numbers, not " + in.show(v));
    double from = parts[0].is_int() ? double(parts[0].i) : parts[0].f;
    double to = parts[1].is_int() ? double(parts[1].i) : parts[1].f;
    if (!(from >= 0 && from < to && to <= 1))
      bad(":split (" + in.show(parts[0]) + " " + in.show(parts[1]) + ") needs 0 <= FROM < TO <= 1");
    decl.options.split_from = from;
    decl.options.split_to = to;
  }
  void stages(Value v) {
    if (!v.is_cons()) bad(":stages must be a list of (NAME :batch B), not " + in.show(v));
    for (Value st : in.list_items(v, "defloader")) {
      std::vector<Value> parts =
          st.is_cons() ? in.list_items(st, "defloader") : std::vector<Value>{};
      if (parts.empty() || !parts[0].is_symbol() || parts.size() % 2 != 1)
        bad("a stage is (NAME :batch B :seq-len N), not " + in.show(st));
      data::StageOverrides o;
      for (size_t i = 1; i < parts.size(); i += 2) {
        std::string key = is_keyword(parts[i]) ? parts[i].sym()->name : "";
        if (key == "BATCH")
          o.batch = positive(parts[i + 1], ":batch");
        else if (key == "SEQ-LEN")
          o.seq_len = positive(parts[i + 1], ":seq-len");
        else
          bad("a stage overrides :batch or :seq-len, not " + in.show(parts[i]));
      }
      decl.stages.emplace_back(lower(parts[0].sym()->name), o);
    }
  }
};

// A constructor call written in :source reads its arguments as options do
// (so `:columns ((:x :f32 (0 1)))` needs no quote); any other form is
// evaluated as it is.
Value eval_source(Interp& in, Value form) {
  static const char* const constructors[] = {"IDX", "TOKENS", "TEXT", "NPY", "CSV", "SYNTHETIC"};
  Value head = form.is_cons() ? form.cons()->car : in.nil();
  bool constructor = head.is_symbol() && head.sym()->qualifier.empty() &&
                     std::any_of(std::begin(constructors), std::end(constructors),
                                 [&](const char* c) { return head.sym()->name == c; });
  if (!constructor) return select::eval_option(in, form);
  std::vector<Value> call{head};
  for (Value arg : in.list_items(form.cons()->cdr, "defloader"))
    call.push_back(in.list({in.sym("QUOTE"), select::eval_option(in, arg)}));
  return in.eval(in.list_from(call), nullptr);
}

Value define_loader(Interp& in, Value name, Value option_forms) {
  if (!name.is_symbol() || name.is_nil())
    in.type_error(name, "a loader name (a symbol)", "defloader");
  auto& registry = in.extensions.get<Loaders>();
  LoaderDecl decl;
  decl.name = lower(name.sym()->name);
  decl.span = in.current_span();
  decl.options.name = decl.name;
  if (registry.find(decl.name))
    in.fail("E-LOADER-SOURCE", "loader " + decl.name + " is defined twice",
            "give each defloader its own name");
  OptionReader r{in, decl};
  std::vector<Value> forms = in.list_items(option_forms, "defloader");
  if (forms.size() % 2 != 0) r.bad("options come in pairs (:batch 32 ...)");
  Value source_desc = in.nil();
  bool has_batch = false;
  for (size_t i = 0; i < forms.size(); i += 2) {
    if (!is_keyword(forms[i])) r.bad(in.show(forms[i]) + " is not an option keyword");
    const std::string key = forms[i].sym()->name;
    Value v =
        key == "SOURCE" ? eval_source(in, forms[i + 1]) : select::eval_option(in, forms[i + 1]);
    if (key == "SOURCE")
      source_desc = v;
    else if (key == "BATCH")
      decl.options.batch = r.positive(v, ":batch"), has_batch = true;
    else if (key == "SHUFFLE")
      decl.options.shuffle = v.truthy();
    else if (key == "DROP-LAST")
      decl.options.drop_last = v.truthy();
    else if (key == "SPLIT")
      r.split(v);
    else if (key == "SEED") {
      if (!v.is_int() || v.i < 0) r.bad(":seed must be a non-negative integer, not " + in.show(v));
      decl.options.seed = static_cast<uint64_t>(v.i), decl.has_seed = true;
    } else if (key == "STAGES")
      r.stages(v);
    else
      r.bad("unknown option " + keyword_text(forms[i]));
  }
  if (source_desc.is_nil()) r.bad("no :source (idx, tokens, text, npy, csv or synthetic)");
  if (!has_batch) r.bad("no :batch (the examples per batch)");
  in.list_items(source_desc, "defloader");  // a proper list: getf must end
  Opener opener{in, data::DataDirs::from_environment(run_dir_of(in)), source_desc};
  ir::Result<data::SourcePtr> source = opener.open();
  if (!source) source_error(in, source.error());
  decl.source = *source;
  decl.data_files = std::move(opener.found);
  ir::Result<data::Loader> loader = data::Loader::create(decl.source, decl.options);
  if (!loader) source_error(in, loader.error());
  decl.batches_per_epoch = loader->batches_per_epoch();
  decl.last_batch_size = loader->last_batch_size();
  registry.decls.push_back(std::move(decl));
  return name;
}

// A plist's keys, for E-LOADER-FIELD: ":x, :y".
std::string field_names(Interp& in, Value batch) {
  std::string out;
  for (Value p = batch; p.is_cons() && lisp::cdr_of(p).is_cons(); p = lisp::cdr_of(lisp::cdr_of(p)))
    out += (out.empty() ? "" : ", ") + in.show(p.cons()->car);
  return out.empty() ? "no fields" : out;
}

}  // namespace

void register_loaders(Interp& in) {
  in.extensions.emplace<Loaders>();
  register_constructors(in);
  SG_BUILTIN(in, "%DEFLOADER", 2, 2, "records a loader (what defloader expands to)",
             { return define_loader(in, args[0], args[1]); });
  SG_BUILTIN(in, "FIELD", 2, 2,
             "a batch's field: (field batch :x), E-LOADER-FIELD when it lacks it", {
               if (!is_keyword(args[1])) in.type_error(args[1], "a field keyword (:x)", "field");
               if (!args[0].is_list()) in.type_error(args[0], "a batch (a plist)", "field");
               in.list_items(args[0], "field");
               for (Value p = args[0]; p.is_cons() && lisp::cdr_of(p).is_cons();
                    p = lisp::cdr_of(lisp::cdr_of(p)))
                 if (p.cons()->car == args[1]) return lisp::car_of(lisp::cdr_of(p));
               in.fail("E-LOADER-FIELD",
                       "the batch has no field " + keyword_text(args[1]) + ": the batch has " +
                           field_names(in, args[0]),
                       "use one of the batch's fields, or add it in prepare");
             });
}

}  // namespace sexpgpu::runfile
