// defeval, defcurriculum, defdiagnostic, defrun and the contract's shape
// (contract.h).
#include "runfile/contract.h"

#include <algorithm>
#include <cmath>

#include "lisp/builtins.h"
#include "run/summary.h"
#include "select/selection.h"
#include "stage/args.h"

namespace sexpgpu::runfile {

using lisp::Interp;
using lisp::Value;

Contract& contract_of(Interp& in) {
  return in.extensions.get<Contract>();
}

const Contract& contract_of(const Interp& in) {
  return in.extensions.get<Contract>();
}

namespace {

std::string lower(std::string_view s) {
  return stage::lower_name(s);
}

bool is_keyword(Value v) {
  return v.is_symbol() && v.sym()->keyword;
}

// Option pairs (:key value ...) as written, keys lower case without colon.
std::vector<std::pair<std::string, Value>> option_pairs(Interp& in, Value forms, const char* code,
                                                        const char* where) {
  std::vector<Value> items = in.list_items(forms, where);
  if (items.size() % 2 != 0)
    in.fail(code, std::string(where) + ": options come in pairs (:key value ...)");
  std::vector<std::pair<std::string, Value>> out;
  for (size_t i = 0; i < items.size(); i += 2) {
    if (!is_keyword(items[i]))
      in.fail(code, std::string(where) + ": " + in.show(items[i]) + " is not an option keyword");
    out.emplace_back(lower(items[i].sym()->name), items[i + 1]);
  }
  return out;
}

// A name given as a symbol (not evaluated), #'name or a string.
std::string name_option(Interp& in, Value v, const char* what) {
  if (v.is_cons() && lisp::car_of(v).is_symbol() && lisp::car_of(v).sym()->name == "FUNCTION")
    v = lisp::car_of(lisp::cdr_of(v));
  if (v.is_symbol() && !v.is_nil()) return lower(v.sym()->name);
  if (v.is_string()) return lisp::u32_to_utf8(v.str()->chars);
  in.type_error(v, "a name", what);
}

int64_t positive_int(Interp& in, Value v, const char* code, const std::string& what) {
  if (!v.is_int() || v.i < 1)
    in.fail(code, what + " must be a positive integer, not " + in.show(v));
  return v.i;
}

Value define_eval(Interp& in, Value name, Value options) {
  Contract& c = contract_of(in);
  EvalDecl e;
  e.name = name_option(in, name, "defeval");
  e.span = in.current_span();
  for (const EvalDecl& other : c.evals)
    if (other.name == e.name) in.fail("E-CONTRACT-SHAPE", "defeval " + e.name + " appears twice");
  for (auto& [key, form] : option_pairs(in, options, "E-CONTRACT-SHAPE", "defeval")) {
    if (key == "loader") {
      e.loader = name_option(in, form, "defeval :loader");
      continue;
    }
    if (key == "fn") {
      e.fn = name_option(in, form, "defeval :fn");
      continue;
    }
    Value v = select::eval_option(in, form);
    if (key == "every")
      e.every = v.is_nil() ? 0 : positive_int(in, v, "E-CONTRACT-SHAPE", "defeval :every");
    else if (key == "batches")
      e.batches = is_keyword(v) && v.sym()->name == "ALL"
                      ? -1
                      : positive_int(in, v, "E-CONTRACT-SHAPE", "defeval :batches");
    else if (key == "at-start")
      e.at_start = v.truthy();
    else if (key == "at-end")
      e.at_end = v.truthy();
    else
      in.fail("E-CONTRACT-SHAPE", "defeval has no option :" + key,
              "its options are :loader :every :batches :at-start :at-end :fn");
  }
  if (e.loader.empty())
    in.fail("E-CONTRACT-SHAPE", "defeval " + e.name + " has no :loader",
            "(defeval " + e.name + " :loader test :every 500)");
  c.evals.push_back(std::move(e));
  return name;
}

// (%defcurriculum ((NAME UNTIL-FN) ...)) from the defcurriculum macro.
Value define_curriculum(Interp& in, Value stages) {
  Contract& c = contract_of(in);
  if (!c.stages.empty()) in.fail("E-CONTRACT-SHAPE", "defcurriculum appears twice");
  c.curriculum_span = in.current_span();
  std::vector<Value> items = in.list_items(stages, "defcurriculum");
  if (items.empty()) in.fail("E-CONTRACT-SHAPE", "defcurriculum has no stage");
  for (size_t i = 0; i < items.size(); ++i) {
    std::vector<Value> parts = in.list_items(items[i], "defcurriculum");
    StageDecl s{name_option(in, parts.at(0), "stage"), parts.at(1), c.curriculum_span};
    for (const StageDecl& other : c.stages)
      if (other.name == s.name)
        in.fail("E-CONTRACT-SHAPE", "stage :" + s.name + " appears twice in defcurriculum");
    if (s.until.is_nil() && i + 1 != items.size())
      in.fail("E-CONTRACT-SHAPE", "stage :" + s.name + " has no :until but is not the last",
              "every stage but the last says when it ends: (stage :" + s.name +
                  " :until (>= (ctx :step) 1000))");
    c.stages.push_back(std::move(s));
  }
  return in.t();
}

Value define_diagnostic(Interp& in, Value name, Value options) {
  Contract& c = contract_of(in);
  DiagnosticDecl d;
  d.name = name_option(in, name, "defdiagnostic");
  d.span = in.current_span();
  d.value = in.nil();
  d.select = in.nil();
  static const char* const overs[] = {"params", "grads", "updates", "state", "activations"};
  for (auto& [key, form] : option_pairs(in, options, "E-CONTRACT-SHAPE", "defdiagnostic")) {
    if (key == "select") {
      d.select = form;
      continue;
    }
    Value v = select::eval_option(in, form);
    if (key == "over") {
      d.over = is_keyword(v) ? lower(v.sym()->name) : "";
      if (std::find(std::begin(overs), std::end(overs), d.over) == std::end(overs))
        in.type_error(v, ":params, :grads, :updates, :state or :activations",
                      "defdiagnostic :over");
    } else if (key == "value") {
      if (!v.is_function()) in.type_error(v, "a function", "defdiagnostic :value");
      d.value = v;
    } else if (key == "reduce") {
      for (Value r : in.list_items(is_keyword(v) ? in.list({v}) : v, "defdiagnostic :reduce"))
        d.reduce.push_back(name_option(in, r, "defdiagnostic :reduce"));
    } else {
      in.fail("E-CONTRACT-SHAPE", "defdiagnostic has no option :" + key,
              "its options are :over :value :reduce :select");
    }
  }
  if (d.over.empty() || d.value.is_nil())
    in.fail("E-CONTRACT-SHAPE", "defdiagnostic " + d.name + " needs :over and :value");
  c.diagnostics.push_back(std::move(d));
  return name;
}

// The plist (:every 500 :keep 2) of a defrun key.
std::vector<std::pair<std::string, Value>> sub_options(Interp& in, Value v,
                                                       const std::string& key) {
  if (!v.is_list()) in.fail("E-RUN-KEY", ":" + key + " takes a plist, not " + in.show(v));
  std::vector<std::pair<std::string, Value>> out;
  std::vector<Value> items = in.list_items(v, key);
  for (size_t i = 0; i + 1 < items.size(); i += 2) {
    if (!is_keyword(items[i]))
      in.fail("E-RUN-KEY", ":" + key + ": " + in.show(items[i]) + " is not a keyword");
    out.emplace_back(lower(items[i].sym()->name), items[i + 1]);
  }
  if (items.size() % 2 != 0) in.fail("E-RUN-KEY", ":" + key + ": options come in pairs");
  return out;
}

[[noreturn]] void bad_sub_key(Interp& in, const std::string& key, const std::string& sub,
                              const char* allowed) {
  in.fail("E-RUN-KEY", ":" + key + " has no option :" + sub, std::string("it takes ") + allowed);
}

std::string keyword_choice(Interp& in, Value v, std::initializer_list<const char*> choices,
                           const std::string& what) {
  std::string s = is_keyword(v) ? lower(v.sym()->name) : "";
  for (const char* c : choices)
    if (s == c) return s;
  std::string list;
  for (const char* c : choices) list += (list.empty() ? ":" : ", :") + std::string(c);
  in.fail("E-RUN-KEY", what + " is " + in.show(v) + ", not one of " + list);
}

constexpr int64_t kMaxMicrobatches = 65536;
// :bucket-bytes, 1 KiB to 2 GiB: smaller buckets are all per-transfer
// overhead; larger ones pass the collectives' 32-bit counts.
constexpr int64_t kMinBucketBytes = 1024, kMaxBucketBytes = int64_t(1) << 31;

void read_run_key(Interp& in, RunDecl& r, const std::string& key, Value v) {
  auto positive = [&](const char* what) { return positive_int(in, v, "E-RUN-KEY", what); };
  if (key == "steps") {
    r.steps = positive(":steps");
  } else if (key == "epochs") {
    r.epochs = positive(":epochs");
  } else if (key == "microbatches") {
    r.microbatches = positive(":microbatches");
    // Each microbatch of a step is a pass the loop keeps until the step ends.
    if (r.microbatches > kMaxMicrobatches)
      in.fail("E-RUN-KEY",
              ":microbatches " + std::to_string(r.microbatches) + " is above " +
                  std::to_string(kMaxMicrobatches),
              "a larger :batch in the loader, fewer :microbatches");
  } else if (key == "bucket-bytes") {
    if (!v.is_int() || v.i < kMinBucketBytes || v.i > kMaxBucketBytes)
      in.fail("E-RUN-KEY",
              ":bucket-bytes must be an integer from " + std::to_string(kMinBucketBytes) + " to " +
                  std::to_string(kMaxBucketBytes) + ", not " + in.show(v),
              ":bucket-bytes 26214400 (25 MiB, the default)");
    r.bucket_bytes = v.i;
  } else if (key == "precision") {
    r.precision = keyword_choice(in, v, {"f32", "tf32", "bf16"}, ":precision");
  } else if (key == "master-weights") {
    r.master_weights = keyword_choice(in, v, {"f32", "none"}, ":master-weights");
  } else if (key == "seed") {
    if (!v.is_int() || v.i < 0) in.fail("E-RUN-KEY", ":seed must be a non-negative integer");
    r.seed = v.i;
  } else if (key == "clip-norm") {
    if (v.is_nil()) return;
    if (!v.is_number() || (v.is_int() ? double(v.i) : v.f) <= 0)
      in.fail("E-RUN-KEY", ":clip-norm must be a positive number or nil, not " + in.show(v));
    r.clip_norm = v.is_int() ? double(v.i) : v.f;
  } else if (key == "log-every") {
    r.log_every = positive(":log-every");
  } else if (key == "checkpoint") {
    for (auto& [k, x] : sub_options(in, v, key)) {
      if (k == "every")
        r.checkpoint_every =
            x.is_nil()
                ? std::nullopt
                : std::optional<int64_t>(positive_int(in, x, "E-RUN-KEY", ":checkpoint :every"));
      else if (k == "keep")
        r.checkpoint_keep = positive_int(in, x, "E-RUN-KEY", ":checkpoint :keep");
      else if (k == "at-end")
        r.checkpoint_at_end = x.truthy();
      else
        bad_sub_key(in, key, k, ":every :keep :at-end");
    }
  } else if (key == "diagnostics") {
    for (auto& [k, x] : sub_options(in, v, key)) {
      if (k == "every")
        r.diagnostics_every = positive_int(in, x, "E-RUN-KEY", ":diagnostics :every");
      else if (k == "select")
        for (Value d : in.list_items(x, ":diagnostics :select"))
          r.diagnostics_select.push_back(name_option(in, d, ":diagnostics :select"));
      else
        bad_sub_key(in, key, k, ":every :select");
    }
  } else if (key == "finite") {
    for (auto& [k, x] : sub_options(in, v, key)) {
      if (k == "on-nonfinite")
        r.skip_nonfinite = keyword_choice(in, x, {"stop", "skip"}, ":on-nonfinite") == "skip";
      else if (k == "max-skips")
        r.max_skips = positive_int(in, x, "E-RUN-KEY", ":finite :max-skips");
      else
        bad_sub_key(in, key, k, ":on-nonfinite :max-skips");
    }
  } else if (key == "target") {
    if (v.is_nil()) return;
    std::vector<Value> t = in.list_items(v, ":target");
    if (t.size() < 3 || !t[0].is_string() || !is_keyword(t[1]) || !t[2].is_number())
      in.fail("E-RUN-KEY", ":target is (METRIC OP VALUE [:stop t]), not " + in.show(v),
              ":target (\"test/acc\" :>= 0.85)");
    double value = t[2].is_int() ? double(t[2].i) : t[2].f;
    ir::Result<run::Target> target =
        run::Target::make(lisp::u32_to_utf8(t[0].str()->chars), lower(t[1].sym()->name), value);
    if (!target) in.fail("E-RUN-KEY", ":target: " + target.error());
    r.target = spec::TargetDecl{target->metric, target->op, target->value};
    for (size_t i = 3; i + 1 < t.size(); i += 2) {
      if (!is_keyword(t[i]) || t[i].sym()->name != "STOP")
        in.fail("E-RUN-KEY", ":target takes only :stop after its value");
      r.target_stop = t[i + 1].truthy();
    }
  } else if (key == "device") {
    r.device = name_option(in, v, ":device");
    r.device_given = true;
  } else {
    in.fail(
        "E-RUN-KEY", "defrun has no key :" + key,
        "its keys are :steps :epochs :microbatches :bucket-bytes :precision :master-weights :seed "
        ":clip-norm :log-every :checkpoint :diagnostics :finite :target :device");
  }
}

Value define_run(Interp& in, Value options) {
  Contract& c = contract_of(in);
  if (c.run) in.fail("E-CONTRACT-SHAPE", "defrun appears twice: a run file has exactly one, last");
  RunDecl r;
  r.span = in.current_span();
  for (auto& [key, form] : option_pairs(in, options, "E-RUN-KEY", "defrun"))
    read_run_key(in, r, key, select::eval_option(in, form));
  if (r.steps == 0 && r.epochs == 0)
    in.fail("E-RUN-KEY", "defrun says neither :steps nor :epochs", "(defrun :steps 1000)");
  if (r.steps != 0 && r.epochs != 0)
    in.fail("E-RUN-KEY", "defrun gives both :steps and :epochs; give one");
  c.run = std::move(r);
  return in.t();
}

// ---- the contract's shape ----------------------------------------------------------------

struct ContractForm {
  int order;         // 1..12 as run-file.md's table
  const char* what;  // how messages name it
};

// The contract position of a top-level form, or nullopt for other forms.
std::optional<ContractForm> contract_form(Value form) {
  if (!form.is_cons() || !lisp::car_of(form).is_symbol()) return std::nullopt;
  const lisp::Symbol* head = lisp::car_of(form).sym();
  if (!head->qualifier.empty()) return std::nullopt;
  const std::string& h = head->name;
  if (h == "REQUIRE") return ContractForm{1, "require"};
  if (h == "DEFKNOB" || h == "DEFVARIANT" || h == "DEFSWEEP") return ContractForm{2, "defknob"};
  if (h == "DEFLOADER") return ContractForm{3, "defloader"};
  if (h == "DEFMODEL") return ContractForm{4, "defmodel"};
  if (h == "DEFEVAL") return ContractForm{8, "defeval"};
  if (h == "DEFCURRICULUM") return ContractForm{10, "defcurriculum"};
  if (h == "DEFDIAGNOSTIC") return ContractForm{11, "defdiagnostic"};
  if (h == "DEFRUN") return ContractForm{12, "defrun"};
  if (h == "DEFUN") {
    Value name = lisp::car_of(lisp::cdr_of(form));
    if (!name.is_symbol()) return std::nullopt;
    const std::string& n = name.sym()->name;
    if (n == "PREPARE") return ContractForm{5, "prepare"};
    if (n == "OBJECTIVE") return ContractForm{6, "objective"};
    if (n == "EVALUATE") return ContractForm{7, "evaluate"};
    if (n == "OPTIMIZER") return ContractForm{9, "optimizer"};
  }
  return std::nullopt;
}

// A contract defun's lambda list: its required parameters, or -1 when it
// has anything else (&optional, &key, &rest).
int plain_arity(Interp& in, Value lambda_list) {
  if (!lambda_list.is_list()) return -1;
  int n = 0;
  for (Value p = lambda_list; p.is_cons(); p = lisp::cdr_of(p)) {
    Value x = lisp::car_of(p);
    if (!x.is_symbol() || x.sym()->name.rfind('&', 0) == 0) return -1;
    ++n;
  }
  (void)in;
  return n;
}

void report(Interp& in, const char* code, Span span, std::string message, std::string fix = "") {
  Diagnostic d;
  d.code = code;
  d.severity = severity_of(code);
  d.span = span;
  d.message = std::move(message);
  d.fix = std::move(fix);
  in.sink.report(std::move(d));
}

}  // namespace

bool is_run_file(const std::vector<lisp::ReadForm>& forms) {
  for (const lisp::ReadForm& rf : forms)
    if (std::optional<ContractForm> c = contract_form(rf.form); c && c->order >= 3) return true;
  return false;
}

void check_contract_forms(Interp& in, const std::vector<lisp::ReadForm>& forms) {
  int highest = 0;
  const char* highest_what = "";
  bool seen[13] = {};
  int defruns = 0;
  for (const lisp::ReadForm& rf : forms) {
    std::optional<ContractForm> c = contract_form(rf.form);
    if (!c) continue;
    seen[c->order] = true;
    if (c->order < highest)
      report(in, "W-ORDER", rf.span,
             std::string(c->what) + " comes after " + highest_what +
                 "; the contract's order is require, knobs, defloader, defmodel, prepare, "
                 "objective, evaluate, defeval, optimizer, defcurriculum, defdiagnostic, defrun",
             "move it up; the file still compiles");
    if (c->order > highest) highest = c->order, highest_what = c->what;
    if (c->order == 12 && ++defruns > 1)
      report(in, "E-CONTRACT-SHAPE", rf.span,
             "defrun appears twice: a run file has exactly one, last");
    int want = c->order == 9 ? 0 : (c->order >= 5 && c->order <= 7) ? 2 : -2;
    if (want != -2) {
      Value lambda_list = lisp::car_of(lisp::cdr_of(lisp::cdr_of(rf.form)));
      if (plain_arity(in, lambda_list) != want)
        report(in, "E-CONTRACT-SHAPE", rf.span,
               std::string(c->what) + " takes " + (want == 0 ? "no arguments" : "(batch ctx)") +
                   ", not " + in.show(lambda_list),
               want == 0 ? "(defun optimizer () ...)"
                         : std::string("(defun ") + c->what + " (batch ctx) ...)");
    }
  }
  Span file_span;
  if (!forms.empty()) file_span.file = forms.front().span.file;
  auto missing = [&](int order, const char* what, const char* smallest) {
    if (!seen[order])
      report(in, "E-CONTRACT-MISSING", file_span, std::string("the run file has no ") + what,
             std::string("the smallest that would do: ") + smallest);
  };
  missing(4, "defmodel", "(defmodel net (x) (nn:linear x 1 :name \"fc\"))");
  missing(6, "objective",
          "(defun objective (batch ctx) (mse (net (getf batch :x)) (getf batch :y)))");
  missing(9, "optimizer", "(defun optimizer () (optim:sgd :lr 0.1))");
  missing(12, "defrun", "(defrun :steps 200)");
  if (seen[8] && !seen[7]) {
    bool default_fn = std::any_of(contract_of(in).evals.begin(), contract_of(in).evals.end(),
                                  [](const EvalDecl& e) { return e.fn == "evaluate"; });
    if (default_fn)
      missing(7, "evaluate, which defeval calls",
              "(defun evaluate (batch ctx) (metric :loss (objective batch ctx)))");
  }
}

void register_contract(Interp& in) {
  in.extensions.emplace<Contract>();
  SG_BUILTIN(in, "%DEFEVAL", 2, 2, "records an evaluation pass (what defeval expands to)",
             { return define_eval(in, args[0], args[1]); });
  SG_BUILTIN(in, "%DEFCURRICULUM", 1, 1, "records the stages (what defcurriculum expands to)",
             { return define_curriculum(in, args[0]); });
  SG_BUILTIN(in, "%DEFDIAGNOSTIC", 2, 2, "records a diagnostic (what defdiagnostic expands to)",
             { return define_diagnostic(in, args[0], args[1]); });
  SG_BUILTIN(in, "%DEFRUN", 1, 1, "records the run's settings (what defrun expands to)",
             { return define_run(in, args[0]); });
}

}  // namespace sexpgpu::runfile
