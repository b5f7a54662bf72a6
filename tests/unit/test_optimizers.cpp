// Optimizers as values (core/runfile/optimizer.h, prelude/optimizers.lisp)
// and the standard module sexpgpu/optim (optimizers/sexpgpu/optim.lisp).
//
// Each optimizer configuration of tests/optim_reference/reference.json is
// staged for each of its parameters as an IR function (inputs p, g, the
// states, the ctx scalars it reads), compiled for the CPU and stepped, the
// states carried, against the trajectory PyTorch (or a NumPy transcription
// of the published algorithm) computed. Schedules are checked at every step
// both as numbers and staged. Then groups, selectors and the errors.
#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "catch.hpp"
#include "cpu/program.h"
#include "runfile/optimizer.h"
#include "runfile/session.h"
#include "stage/stager.h"

using namespace sexpgpu;
using cpu::HostTensor;
using ir::NodeId;
using lisp::Value;
using runfile::Optimizer;

namespace {

using Values = std::vector<double>;

const nlohmann::json& reference() {
  static const nlohmann::json j = [] {
    std::ifstream f(std::string(SEXPGPU_SOURCE_DIR) + "/tests/optim_reference/reference.json");
    return nlohmann::json::parse(f);
  }();
  return j;
}

std::string diagnostics(const runfile::Session& s) {
  std::string out;
  for (const Diagnostic& d : s.sink.all()) out += d.code + " " + d.message + "\n";
  return out;
}

std::vector<std::string> codes(const runfile::Session& s) {
  std::vector<std::string> out;
  for (const Diagnostic& d : s.sink.all()) out.push_back(d.code);
  return out;
}

// A session with sexpgpu/optim required.
struct OptimSession {
  runfile::Session s;
  lisp::Interp& in;
  int functions = 0;

  OptimSession() : in(*s.interp) { eval("(require \"sexpgpu/optim\")"); }

  Value eval(const std::string& text) {
    std::vector<Value> vals;
    bool ok = s.eval_string("<test>", text, &vals);
    INFO(text << "\n" << diagnostics(s));
    REQUIRE(ok);
    return vals.empty() ? in.nil() : vals[0];
  }
  // The code of the first error evaluating `text` ("" when none).
  std::string error_of(const std::string& text) {
    s.sink.clear();
    s.eval_string("<test>", text, nullptr);
    for (const Diagnostic& d : s.sink.all())
      if (d.severity == Severity::Error) return d.code;
    return "";
  }
  const Optimizer& optimizer(const std::string& text) {
    Optimizer* o = runfile::as_optimizer(eval(text));
    REQUIRE(o != nullptr);
    return *o;
  }
};

// Runs `body` as the compiler would, reporting a LispError as a test failure.
template <typename F>
void staging(const char* what, F&& body) {
  try {
    body();
  } catch (lisp::LispError& e) {
    FAIL(what << ": " << e.diag.code << " " << e.diag.message);
  }
}

// Feeds a function's inputs by name and runs it.
struct Stepper {
  std::shared_ptr<cpu::Program> program;

  std::vector<HostTensor> run(const std::map<std::string, Values>& values) {
    const ir::Function& fn = program->function();
    std::vector<HostTensor> inputs;
    for (NodeId id : fn.inputs) {
      const std::string& name = *fn.node(id).attrs.name;
      INFO("input " << name);
      REQUIRE(values.count(name));
      inputs.push_back(HostTensor::from_doubles(fn.type(id), values.at(name)));
    }
    ir::Result<std::vector<HostTensor>> out = program->run(inputs);
    INFO(out.error());
    REQUIRE(out.ok());
    return *out;
  }
};

Stepper compile(OptimSession& os) {
  ir::Result<std::shared_ptr<cpu::Program>> p = cpu::Program::compile(
      stage::stager_of(os.in).module(), stage::stager_of(os.in).current().name);
  INFO(p.error());
  REQUIRE(p.ok());
  return Stepper{*p};
}

// The update of one f32 parameter of `shape` staged as its own function:
// inputs p, g and "state:NAME"; outputs the new p, then the states.
Stepper stage_update_function(OptimSession& os, const Optimizer& opt, const ir::Shape& shape,
                              std::vector<ir::TensorType>& state_types) {
  stage::Stager& st = stage::stager_of(os.in);
  st.begin_function("update" + std::to_string(os.functions++));
  Stepper stepper;
  staging(opt.name.c_str(), [&] {
    ir::Builder b(st.current());
    ir::TensorType t{ir::DType::F32, shape};
    NodeId p = b.input("p", t), g = b.input("g", t);
    std::vector<NodeId> states;
    for (const runfile::StateDecl& s : opt.states) {
      ir::TensorType& type = state_types.emplace_back();
      type.dtype = s.dtype;
      type.shape = runfile::state_shape(os.in, s, shape);
      states.push_back(b.input("state:" + s.name, type));
    }
    runfile::StagedUpdate u = runfile::stage_update(os.in, opt, p, g, states);
    st.current().outputs.push_back({"p", u.param});
    for (size_t i = 0; i < states.size(); ++i)
      st.current().outputs.push_back({"state:" + opt.states[i].name, u.states[i]});
  });
  stepper = compile(os);
  st.end_function();
  return stepper;
}

// max |got - want| / max |want|: the error relative to the tensor's scale.
double relative_error(const Values& got, const Values& want) {
  double err = 0, scale = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    err = std::max(err, std::abs(got[i] - want[i]));
    scale = std::max(scale, std::abs(want[i]));
  }
  return err / std::max(scale, 1e-30);
}

Values doubles(const nlohmann::json& j) {
  return j.get<Values>();
}

ir::Shape shape_of(const nlohmann::json& j) {
  ir::Shape s;
  for (int64_t x : j) s.push_back(x);
  return s;
}

// Steps `opt` over one parameter of a reference case, checking every step.
void follow_trajectory(OptimSession& os, const Optimizer& opt, const std::string& label,
                       const nlohmann::json& param) {
  int64_t steps = reference()["steps"];
  ir::Shape shape = shape_of(param["shape"]);
  std::vector<ir::TensorType> state_types;
  Stepper stepper = stage_update_function(os, opt, shape, state_types);
  std::map<std::string, Values> values{{"p", doubles(param["initial"])},
                                       {"ctx:steps", {double(steps)}}};
  for (size_t i = 0; i < opt.states.size(); ++i)
    values["state:" + opt.states[i].name] =
        Values(size_t(*state_types[i].shape.numel()), opt.states[i].fill);
  for (int64_t k = 0; k < steps; ++k) {
    values["g"] = doubles(param["grads"][k]);
    values["ctx:step"] = {double(k)};
    std::vector<HostTensor> out = stepper.run(values);
    values["p"] = out[0].to_doubles();
    for (size_t i = 0; i < opt.states.size(); ++i)
      values["state:" + opt.states[i].name] = out[i + 1].to_doubles();
    double err = relative_error(values["p"], doubles(param["trajectory"][k]));
    INFO(label << " " << shape.to_string() << ", step " << k << ": relative error " << err);
    CHECK(err < 1e-5);
  }
}

const nlohmann::json& reference_case(const std::string& name) {
  for (const nlohmann::json& c : reference()["optimizers"])
    if (c["name"] == name) return c;
  FAIL("no reference case " << name);
  throw std::logic_error("unreachable");
}

}  // namespace

TEST_CASE("every optimizer follows its reference trajectory step by step", "[optim]") {
  CHECK(reference()["torch_version"].get<std::string>().size() > 0);
  size_t cases = 0;
  for (const nlohmann::json& c : reference()["optimizers"]) {
    OptimSession os;
    const Optimizer& opt = os.optimizer(c["lisp"]);
    for (const nlohmann::json& param : c["params"])
      follow_trajectory(
          os, opt, c["lisp"].get<std::string>() + " against " + c["reference"].get<std::string>(),
          param);
    ++cases;
  }
  CHECK(cases == 15);
}

TEST_CASE("the defoptimizer of run-file.md is PyTorch's AdamW", "[optim]") {
  OptimSession os;
  os.eval(
      R"((defoptimizer spec-adamw (&key (lr 1e-3) (betas '(0.9 0.999)) (eps 1e-8) (weight-decay 0.01))
  (defstate m :init :zeros)
  (defstate v :init :zeros)
  (optimizer-update (p g ctx)
    (let* ((b1 (first betas)) (b2 (second betas))
           (k (+ (ctx :step) 1)))
      (setf m (+ (* b1 m) (* (- 1 b1) g)))
      (setf v (+ (* b2 v) (* (- 1 b2) (square g))))
      (- (* p (- 1 (* lr weight-decay)))
         (* lr (/ (/ m (- 1 (pow b1 k)))
                  (+ (sqrt (/ v (- 1 (pow b2 k)))) eps))))))))");
  const nlohmann::json& c = reference_case("adamw");
  const Optimizer& opt = os.optimizer("(spec-adamw :lr 0.1)");
  for (const nlohmann::json& param : c["params"]) follow_trajectory(os, opt, "spec-adamw", param);
}

TEST_CASE("every schedule gives its formula's value at every step", "[optim]") {
  for (const nlohmann::json& c : reference()["schedules"]) {
    const std::string lisp = c["lisp"];
    DYNAMIC_SECTION(lisp) {
      OptimSession os;
      int64_t steps = c["steps"];
      Values want = doubles(c["values"]);
      os.eval("(defvar *schedule* " + lisp + ")");
      // As numbers: called with a ctx that answers numbers.
      for (int64_t k = 0; k < steps; ++k) {
        Value v = os.eval("(funcall *schedule* (lambda (key) (ecase key (:step " +
                          std::to_string(k) + ") (:steps " + std::to_string(steps) + "))))");
        REQUIRE(v.is_number());
        double got = v.is_int() ? double(v.i) : v.f;
        INFO("step " << k);
        CHECK(got == Approx(want[size_t(k)]).epsilon(1e-12).margin(1e-15));
      }
      // Staged, as the series lr/GROUP of an optimizer that uses it.
      const Optimizer& opt = os.optimizer("(optim:sgd :lr *schedule*)");
      stage::Stager& st = stage::stager_of(os.in);
      st.begin_function("schedule");
      staging("stage_schedules", [&] {
        auto scheduled = runfile::stage_schedules(os.in, opt);
        REQUIRE(scheduled.size() == 1);
        CHECK(scheduled[0].first == "lr");
        CHECK(st.type(scheduled[0].second) == ir::TensorType{ir::DType::F32, ir::Shape{}});
        st.current().outputs.push_back({"lr/default", scheduled[0].second});
      });
      Stepper stepper = compile(os);
      st.end_function();
      for (int64_t k = 0; k < steps; ++k) {
        double got = stepper.run({{"ctx:step", {double(k)}}, {"ctx:steps", {double(steps)}}})[0]
                         .to_doubles()[0];
        INFO("staged, step " << k);
        CHECK(got == Approx(want[size_t(k)]).epsilon(1e-5).margin(1e-7));
      }
    }
  }
}

TEST_CASE("defoptimizer: hyperparameters, states and what an update returns", "[optim]") {
  OptimSession os;
  os.eval(R"((defoptimizer probe (&key (lr 0.5) (shift '(1 2)) &aux (twice (* 2 lr)))
               "A test optimizer."
               (check-type lr (or real function))
               (defstate acc :init 2 :dtype :f16)
               (defstate rowsum :init :ones :shape (lambda (s) (list (first s))))
               (optimizer-update (p g ctx)
                 (setf acc (+ acc g))
                 (- p (* lr g)))))");
  const Optimizer& opt = os.optimizer("(probe :lr 0.25)");
  CHECK(opt.name == "probe");
  REQUIRE(opt.hyper.size() == 3);
  CHECK(opt.hyper[0].first == "lr");
  CHECK(opt.hyper[0].second.f == 0.25);
  CHECK(opt.hyper[1].first == "shift");
  CHECK(opt.hyper[2].first == "twice");
  CHECK(opt.hyper[2].second.f == 0.5);
  REQUIRE(opt.states.size() == 2);
  CHECK(opt.states[0].name == "acc");
  CHECK(opt.states[0].init == "full");
  CHECK(opt.states[0].fill == 2.0);
  CHECK(opt.states[0].dtype == ir::DType::F16);
  CHECK(opt.states[1].init == "ones");
  CHECK(opt.states[1].fill == 1.0);
  CHECK(runfile::state_shape(os.in, opt.states[0], ir::Shape{4, 3}) == ir::Shape{4, 3});
  CHECK(runfile::state_shape(os.in, opt.states[1], ir::Shape{4, 3}) == ir::Shape{4});
  CHECK(os.in.print(os.eval("(optimizer-hyperparameters (probe))")) ==
        "(:lr 0.5 :shift (1 2) :twice 1.0)");
  CHECK(os.in.print(os.eval("(optimizer-states (probe))")) == "(\"acc\" \"rowsum\")");
  CHECK(
      os.in.print(os.eval("(list (optimizerp (probe)) (optimizerp 3) (optimizer-name (probe)))")) ==
      "(t nil \"probe\")");

  // One bf16 parameter: the new value is cast back; the untouched state is
  // the input itself; acc (f16) + g (bf16) is f32, cast to the state's f16.
  stage::Stager& st = stage::stager_of(os.in);
  st.begin_function("cast");
  staging("probe", [&] {
    ir::Builder b(st.current());
    ir::TensorType t{ir::DType::BF16, ir::Shape{4, 3}};
    NodeId p = b.input("p", t), g = b.input("g", t);
    NodeId acc = b.input("acc", {ir::DType::F16, ir::Shape{4, 3}});
    NodeId rowsum = b.input("rowsum", {ir::DType::F32, ir::Shape{4}});
    NodeId states[] = {acc, rowsum};
    runfile::StagedUpdate u = runfile::stage_update(os.in, opt, p, g, states);
    CHECK(st.type(u.param) == t);
    CHECK(st.type(u.states[0]).dtype == ir::DType::F16);
    CHECK(u.states[1] == rowsum);
  });
  st.end_function();
}

TEST_CASE("a scheduled hyperparameter is a staged scalar in the body", "[optim]") {
  OptimSession os;
  os.eval(R"((defoptimizer seen (&key lr)
               (optimizer-update (p g ctx)
                 (setf *seen* (list (tensorp lr) (and (tensorp lr) (shape lr))))
                 (- p (* lr g))))
             (defvar *seen* nil))");
  std::vector<ir::TensorType> types;
  stage_update_function(os, os.optimizer("(seen :lr (optim:linear-warmup 0.1 :warmup 5))"),
                        ir::Shape{3}, types);
  CHECK(os.in.print(os.eval("*seen*")) == "(t nil)");
  stage_update_function(os, os.optimizer("(seen :lr 0.1)"), ir::Shape{3}, types);
  CHECK(os.in.print(os.eval("*seen*")) == "(nil nil)");
}

TEST_CASE("an update of the wrong shape is E-SHAPE at optimizer-update", "[optim]") {
  OptimSession os;
  os.eval(R"((defoptimizer flip (&key (lr 0.1))
(defstate m)
(optimizer-update (p g ctx)
  (transpose (- p (* lr g)))))
(defoptimizer zero (&key) (optimizer-update (p g ctx) 0.0)))");
  stage::Stager& st = stage::stager_of(os.in);
  st.begin_function("flip");
  ir::Builder b(st.current());
  ir::TensorType t{ir::DType::F32, ir::Shape{4, 3}};
  NodeId p = b.input("p", t), g = b.input("g", t), m = b.input("m", t);
  NodeId states[] = {m};
  try {
    runfile::stage_update(os.in, os.optimizer("(flip)"), p, g, states);
    FAIL("no error");
  } catch (lisp::LispError& e) {
    CHECK(e.diag.code == "E-SHAPE");
    CHECK(e.diag.span.line == 3);
    CHECK(e.diag.message.find("f32[3,4]") != std::string::npos);
  }
  // A scalar broadcasts to the parameter's shape.
  staging("zero", [&] {
    runfile::StagedUpdate u = runfile::stage_update(os.in, os.optimizer("(zero)"), p, g, {});
    CHECK(st.type(u.param) == t);
  });
  st.end_function();
}

TEST_CASE("optimizer errors", "[optim]") {
  OptimSession os;
  // Malformed forms are found when the macros expand (E-MACRO, the inner E-TYPE its message).
  CHECK(os.error_of("(defstate m :init :zeros)") == "E-MACRO");
  CHECK(os.error_of("(optimizer-update (p g ctx) p)") == "E-MACRO");
  CHECK(os.error_of("(defoptimizer none (&key lr) (defstate m))") == "E-MACRO");
  CHECK(os.error_of("(defoptimizer two-args (&key lr) (optimizer-update (p g) p))") == "E-MACRO");
  CHECK(os.error_of("(defoptimizer clash (&key m) (defstate m) (optimizer-update (p g ctx) p))") ==
        "E-MACRO");
  CHECK(
      os.error_of("(defoptimizer badkey () (defstate m :size 3) (optimizer-update (p g ctx) p))") ==
      "E-MACRO");
  os.eval(R"((defoptimizer badinit () (defstate m :init :random) (optimizer-update (p g ctx) p))
             (defoptimizer baddtype () (defstate m :dtype :f8) (optimizer-update (p g ctx) p))
             (defoptimizer badshape (&key (dims '(-1)))
               (defstate m :shape (lambda (s) dims))
               (optimizer-update (p g ctx) p)))");
  CHECK(os.error_of("(badinit)") == "E-TYPE");
  CHECK(os.error_of("(baddtype)") == "E-TYPE");
  CHECK(os.error_of("(optim:sgd :nesterov t)") == "E-TYPE");
  CHECK(os.error_of("(optim:step-decay 0.1)") == "E-TYPE");
  CHECK(os.error_of("(optim:exponential 0.1)") == "E-TYPE");
  CHECK(os.error_of("(stage-optimizer-update (optim:adam) (zeros 3) (zeros 3) (zeros 3))") ==
        "E-ARITY");
  // Muon takes 2-D parameters only; a schedule gives a scalar.
  CHECK(os.error_of("(stage-optimizer-update (optim:muon) (zeros 5) (zeros 5))") == "E-SHAPE");
  CHECK(os.error_of("(stage-optimizer-update (optim:sgd :lr (lambda (ctx) (zeros 3))) (zeros 3) "
                    "(zeros 3))") == "E-SHAPE");
  CHECK(os.error_of("(stage-optimizer-update (optim:sgd :lr (lambda (ctx) \"fast\")) (zeros 3) "
                    "(zeros 3))") == "E-TYPE");
  const Optimizer& bad = os.optimizer("(badshape)");
  const Optimizer& worse = os.optimizer("(badshape :dims '(a))");
  try {
    runfile::state_shape(os.in, bad.states[0], ir::Shape{2});
    FAIL("no error");
  } catch (lisp::LispError& e) {
    CHECK(e.diag.code == "E-SHAPE");
  }
  try {
    runfile::state_shape(os.in, worse.states[0], ir::Shape{2});
    FAIL("no error");
  } catch (lisp::LispError& e) {
    CHECK(e.diag.code == "E-TYPE");
  }
}

// ---- selectors and groups ----------------------------------------------------------------

namespace {

std::vector<runfile::ParamView> gpt_params() {
  using ir::DType;
  return {
      {"gpt.embed.weight", ir::Shape{100, 16}, DType::F32, {}},
      {"gpt.blocks.0.attn.weight", ir::Shape{16, 48}, DType::F32, {}},
      {"gpt.blocks.0.attn.bias", ir::Shape{48}, DType::F32, {"no-decay"}},
      {"gpt.blocks.1.mlp.weight", ir::Shape{16, 64}, DType::BF16, {}},
      {"gpt.head.weight", ir::Shape{16, 100}, DType::F32, {}},
      {"gpt.ln.scale", ir::Shape{16}, DType::F32, {"no-decay"}},
  };
}

// The paths a selector takes from gpt_params().
std::string taken(OptimSession& os, const std::string& expression) {
  Value sel = os.eval("(selector " + expression + ")");
  std::string out;
  for (const runfile::ParamView& p : gpt_params())
    if (runfile::selector_matches(os.in, sel, p)) out += (out.empty() ? "" : " ") + p.path;
  return out;
}

}  // namespace

TEST_CASE("globs: * is one segment, ** any number", "[optim]") {
  CHECK(runfile::glob_matches("gpt.embed.*", "gpt.embed.weight"));
  CHECK_FALSE(runfile::glob_matches("gpt.*", "gpt.embed.weight"));
  CHECK(runfile::glob_matches("gpt.**", "gpt.embed.weight"));
  CHECK(runfile::glob_matches("**.weight", "gpt.blocks.0.attn.weight"));
  CHECK(runfile::glob_matches("gpt.**.weight", "gpt.weight"));
  CHECK(runfile::glob_matches("gpt.blocks.*.attn.*", "gpt.blocks.0.attn.bias"));
  CHECK(runfile::glob_matches("gpt.b*s.?", "gpt.blocks.?"));
  CHECK_FALSE(runfile::glob_matches("gpt.b*s.*", "gpt.blocks"));
  CHECK(runfile::glob_matches("*", "w"));
  CHECK_FALSE(runfile::glob_matches("*", "a.b"));
  CHECK(runfile::glob_matches("**", "a.b.c"));
}

TEST_CASE("each kind of selector expression", "[optim]") {
  OptimSession os;
  const std::string all =
      "gpt.embed.weight gpt.blocks.0.attn.weight gpt.blocks.0.attn.bias gpt.blocks.1.mlp.weight "
      "gpt.head.weight gpt.ln.scale";
  CHECK(taken(os, "t") == all);
  CHECK(taken(os, "\"gpt.*.weight\"") == "gpt.embed.weight gpt.head.weight");
  CHECK(taken(os, "\"gpt.blocks.**\"") ==
        "gpt.blocks.0.attn.weight gpt.blocks.0.attn.bias gpt.blocks.1.mlp.weight");
  CHECK(taken(os, "(path \"gpt.embed.*\" \"gpt.head.*\")") == "gpt.embed.weight gpt.head.weight");
  CHECK(taken(os, "(name \"bias\" \"scale\")") == "gpt.blocks.0.attn.bias gpt.ln.scale");
  CHECK(taken(os, "(ndim 1)") == "gpt.blocks.0.attn.bias gpt.ln.scale");
  CHECK(taken(os, "(shape-is (16 64))") == "gpt.blocks.1.mlp.weight");
  CHECK(taken(os, "(tag :no-decay)") == "gpt.blocks.0.attn.bias gpt.ln.scale");
  CHECK(taken(os, "(and (ndim 2) (not (path \"gpt.embed.*\" \"gpt.head.*\")))") ==
        "gpt.blocks.0.attn.weight gpt.blocks.1.mlp.weight");
  CHECK(taken(os, "(or (name \"scale\") (shape-is (48)))") ==
        "gpt.blocks.0.attn.bias gpt.ln.scale");
  // Any other form is evaluated: a selector, or a predicate of the plist.
  os.eval("(defvar *matrices* (selector (ndim 2))) (defvar *width* 64)");
  CHECK(taken(os, "(and *matrices* (not \"gpt.embed.*\") (not \"gpt.head.*\"))") ==
        "gpt.blocks.0.attn.weight gpt.blocks.1.mlp.weight");
  CHECK(taken(os, "(lambda (p) (eq (getf p :dtype) :bf16))") == "gpt.blocks.1.mlp.weight");
  CHECK(taken(os, "(shape-is (list 16 *width*))") == "gpt.blocks.1.mlp.weight");
  CHECK(taken(os, "(lambda (p) (> (reduce #'* (getf p :shape)) 1000))") ==
        "gpt.embed.weight gpt.blocks.1.mlp.weight gpt.head.weight");
  CHECK(os.in.print(os.eval("(selector-matches-p (selector (tag :no-decay)) '(:path \"b\" :shape "
                            "(3) :tags (:no-decay)))")) == "t");
  CHECK(os.in.print(
            os.eval("(selector (and (ndim 2) (not (path \"a.*\")) (tag :x) (shape-is (2 3))))")) ==
        "#<selector (and (ndim 2) (not (path \"a.*\")) (tag :x) (shape-is (2 3)))>");
  // What defdiagnostic :select does with the form it read.
  Value from_form = runfile::selector_from_form(os.in, os.eval("'(or (ndim 1) \"gpt.head.*\")"));
  std::string took;
  for (const runfile::ParamView& p : gpt_params())
    if (runfile::selector_matches(os.in, from_form, p)) took += (took.empty() ? "" : " ") + p.path;
  CHECK(took == "gpt.blocks.0.attn.bias gpt.head.weight gpt.ln.scale");
  CHECK(os.error_of("(selector 42)") == "E-TYPE");
  CHECK(os.error_of("(selector (ndim \"two\"))") == "E-TYPE");
  CHECK(os.error_of("(selector (not (ndim 1) (ndim 2)))") == "E-MACRO");
  CHECK(os.error_of("(selector-matches-p (selector t) '(:path \"a\" :size 3))") == "E-TYPE");
}

TEST_CASE("groups: first match wins, ungrouped and empty groups", "[optim]") {
  OptimSession os;
  std::vector<runfile::ParamView> params = gpt_params();
  bool trainable[] = {true, true, true, true, true, false};
  auto assign = [&](const std::string& text) {
    return runfile::assign_groups(os.in, os.eval(text), params, trainable);
  };
  auto members = [&](const runfile::Group& g) {
    std::string out;
    for (size_t i : g.members) out += (out.empty() ? "" : " ") + params[i].path;
    return out;
  };

  std::vector<runfile::Group> one = assign("(optim:adamw :lr 0.1)");
  REQUIRE(one.size() == 1);
  CHECK(one[0].name == "default");
  CHECK(one[0].optimizer->name == "adamw");
  CHECK(one[0].members == std::vector<size_t>{0, 1, 2, 3, 4});  // not the frozen ln.scale

  std::vector<runfile::Group> two = assign(R"(
    (list (group :hidden :select (and (ndim 2) (not (path "gpt.embed.*" "gpt.head.*")))
                 :use (optim:muon :lr 0.02 :momentum 0.95))
          (group :rest :select t :use (optim:adamw :lr 0.1 :betas '(0.9 0.95) :weight-decay 0.0))))");
  REQUIRE(two.size() == 2);
  CHECK(two[0].name == "hidden");
  CHECK(two[0].optimizer->name == "muon");
  CHECK(members(two[0]) == "gpt.blocks.0.attn.weight gpt.blocks.1.mlp.weight");
  CHECK(two[1].name == "rest");
  CHECK(members(two[1]) == "gpt.embed.weight gpt.blocks.0.attn.bias gpt.head.weight");
  CHECK(two[1].span.line == 4);
  CHECK(os.s.sink.all().empty());

  // A group that a catch-all before it leaves empty.
  assign(R"((list (group "all" :select t :use (optim:sgd))
                   (group late :select (tag :no-decay) :use (optim:sgd))))");
  CHECK(codes(os.s) == std::vector<std::string>{"W-EMPTY-GROUP"});
  CHECK(os.s.sink.all()[0].message.find("late") != std::string::npos);

  try {
    assign("(list (group :matrices :select (ndim 2) :use (optim:sgd)))");
    FAIL("no error");
  } catch (lisp::LispError& e) {
    CHECK(e.diag.code == "E-PARAM-UNGROUPED");
    CHECK(e.diag.message.find("gpt.blocks.0.attn.bias") != std::string::npos);
    CHECK(e.diag.message.find("gpt.ln.scale") == std::string::npos);  // frozen: needs no group
  }
  for (const char* bad : {"(list (optim:sgd))", "42", "nil",
                          "(list (group :a :use (optim:sgd)) (group :a :use (optim:sgd)))"}) {
    INFO(bad);
    try {
      assign(bad);
      FAIL("no error");
    } catch (lisp::LispError& e) {
      CHECK(e.diag.code == "E-TYPE");
    }
  }
  CHECK(os.error_of("(group :g :select t :use 0.1)") == "E-TYPE");
  CHECK(os.in.print(os.eval("(group :g :use (optim:lion))")) == "#<group g lion>");
}
