// Diagnostics (core/runfile/diagnostics.h): a tiny run file compiled, its
// diagnostic functions run on the CPU with chosen inputs and checked
// against hand-computed numbers; the diag event's values assembled from
// them, with a reducer plugin driven through its C table; the errors.
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "catch.hpp"
#include "cpu/program.h"
#include "runfile/compile.h"
#include "runfile/diagnostics.h"
#include "runfile/session.h"
#include "train/diag_values.h"

namespace {

using namespace sexpgpu;
using runfile::DiagnosticPlan;
using Named = std::map<std::string, std::vector<double>>;

// A linear model y = x·w + b, probed; every kind of defdiagnostic.
const std::string kRunFile = R"(
(require "sexpgpu/optim")
(defloader train :source (synthetic :regression :features 2 :examples 8 :seed 1) :batch 4)
(defmodel net (x)
  (probe "out" (+ (matmul x (defparam w '(2 1) :init (lambda (s) (full s 0.5))))
                  (defparam b '(1) :init (lambda (s) (full s 0.0))))))
(defun objective (batch ctx) (mse (net (getf batch :x)) (getf batch :y)))
(defun optimizer () (optim:adam :lr 0.1))
(defdiagnostic update-to-weight
  :over :updates
  :value (lambda (u p) (/ (norm u) (+ (norm p) 1e-12)))
  :reduce (:max :mean))
(defdiagnostic spread :over :params :value (lambda (p) (* p 2))
  :reduce (:l2 :std :min :histogram :kurtosis) :select (ndim 2))
(defdiagnostic act-spread :over :activations :value (lambda (a) a)
  :reduce (:histogram :frac-nonfinite :frac-zero))
(defdiagnostic grad-mean :over :grads :value (lambda (g p) g))
)";

struct Compiled {
  runfile::Session s;
  std::shared_ptr<runfile::CompiledRun> run;
  const DiagnosticPlan& plan() const { return *run->diagnostics; }
};

std::unique_ptr<Compiled> compile(const std::string& text) {
  auto c = std::make_unique<Compiled>();
  c->s.load_source("/diag-test/run.lisp", text);
  c->s.compile();
  std::string reported;
  for (const Diagnostic& d : c->s.sink.all())
    reported += d.code + " " + d.message + " at line " + std::to_string(d.span.line) + "\n";
  INFO(reported);
  REQUIRE(c->s.compiled);
  c->run = c->s.compiled;
  REQUIRE(c->run->diagnostics);
  return c;
}

// The first error compiling `text` gives.
Diagnostic error_of(const std::string& text) {
  runfile::Session s;
  s.load_source("/diag-test/run.lisp", text);
  s.compile();
  for (const Diagnostic& d : s.sink.all())
    if (d.severity == Severity::Error) return d;
  FAIL("no error");
  return {};
}

// Runs function `fn` of the plan with inputs by name; outputs by name.
Named run_fn(const DiagnosticPlan& plan, const std::string& fn, const Named& inputs) {
  const ir::Function* f = plan.module.find(fn);
  INFO(fn);
  REQUIRE(f);
  std::vector<cpu::HostTensor> args;
  for (ir::NodeId id : f->inputs) {
    const ir::Node& n = f->node(id);
    auto it = inputs.find(*n.attrs.name);
    INFO("input " << *n.attrs.name);
    REQUIRE(it != inputs.end());
    args.push_back(cpu::HostTensor::from_doubles(n.type, it->second));
  }
  ir::Result<std::shared_ptr<cpu::Program>> p = cpu::Program::compile(plan.module, fn);
  INFO(p.error());
  REQUIRE(p.ok());
  ir::Result<std::vector<cpu::HostTensor>> r = (*p)->run(args);
  INFO(r.error());
  REQUIRE(r.ok());
  Named out;
  for (size_t i = 0; i < f->outputs.size(); ++i) out[f->outputs[i].name] = (*r)[i].to_doubles();
  return out;
}

// w = (3 4), b = -2 before the step; (3.3 4.4) and -2 after it.
const Named kStep = {{"net.w", {3, 4}},
                     {"net.b", {-2}},
                     {"grad:net.w", {1, 2}},
                     {"grad:net.b", {0.5}},
                     {"new:net.w", {3.3, 4.4}},
                     {"new:net.b", {-2}},
                     {"state:net.w/m", {1, -3}},
                     {"state:net.w/v", {4, 4}},
                     {"state:net.b/m", {0.25}},
                     {"state:net.b/v", {0}},
                     {"probe:net.out", {1, -1, 3, 0}}};

double one(const Named& out, const std::string& name) {
  INFO(name);
  REQUIRE(out.count(name));
  REQUIRE(out.at(name).size() == 1);
  return out.at(name)[0];
}

}  // namespace

TEST_CASE("the plan: built-ins then the file's, functions, probes, forward", "[diag]") {
  auto c = compile(kRunFile + "(defrun :steps 4 :diagnostics (:every 2 :select (:grad-norm)))");
  const DiagnosticPlan& plan = c->plan();
  CHECK(plan.names() ==
        "grad-norm, grad-rms, param-rms, update-ratio, state-rms, act-rms, act-max-abs, "
        "nonfinite, dead-relu, update-to-weight, spread, act-spread, grad-mean");
  CHECK(plan.probes == std::vector<std::string>{"net.out"});
  REQUIRE(plan.forwards.size() == 1);
  CHECK(plan.forwards[0].fn == "diag:forward");
  CHECK(plan.forwards[0].rows == 4);
  const runfile::Diagnostic* nonfinite = plan.find("nonfinite");
  REQUIRE(nonfinite);
  REQUIRE(nonfinite->fns.size() == 2);
  CHECK(nonfinite->fns[0].fn == "diag:nonfinite");
  CHECK(nonfinite->fns[1].fn == "diag:nonfinite:activations");
  CHECK(nonfinite->fns[1].rows == 4);
  CHECK(nonfinite->over_activations);
  CHECK(plan.find("spread")->plugin_reducers == std::vector<std::string>{"kurtosis"});
  CHECK(!plan.find("spread")->builtin);
  // The run's own module has none of them: an unselected diagnostic costs nothing.
  for (const ir::Function& fn : c->run->module.functions) CHECK(fn.name.rfind("diag:", 0) != 0);
  CHECK(runfile::unknown_diagnostics(*c->run, {"act-rms", "spread"}) == "");
  CHECK(runfile::unknown_diagnostics(*c->run, {"grad-norm", "bogus"})
            .rfind("no diagnostic named 'bogus'; the diagnostics are: grad-norm, grad-rms", 0) ==
        0);
}

TEST_CASE("the built-ins' numbers", "[diag]") {
  auto c = compile(kRunFile + "(defrun :steps 4)");
  const DiagnosticPlan& plan = c->plan();
  Named g = run_fn(plan, "diag:grad-norm", kStep);
  CHECK(one(g, "net.w") == Approx(2.2360680));  // sqrt(1 + 4)
  CHECK(one(g, "net.b") == Approx(0.5));
  CHECK(one(g, "global") == Approx(2.2912878));  // sqrt(5.25)
  Named rms = run_fn(plan, "diag:grad-rms", kStep);
  CHECK(one(rms, "net.w") == Approx(1.5811388));  // sqrt(5 / 2)
  CHECK(one(rms, "net.b") == Approx(0.5));
  Named p = run_fn(plan, "diag:param-rms", kStep);
  CHECK(one(p, "net.w") == Approx(3.5355339));  // sqrt(25 / 2)
  CHECK(one(p, "net.b") == Approx(2.0));
  Named u = run_fn(plan, "diag:update-ratio", kStep);
  CHECK(one(u, "net.w") == Approx(0.1).epsilon(1e-5));  // |(0.3 0.4)| / |(3 4)|
  CHECK(one(u, "net.b") == 0.0);
  Named s = run_fn(plan, "diag:state-rms", kStep);
  CHECK(one(s, "net.w/m") == Approx(2.2360680));
  CHECK(one(s, "net.w/v") == Approx(4.0));
  CHECK(one(s, "net.b/m") == Approx(0.25));
  CHECK(one(s, "net.b/v") == 0.0);
  Named a = run_fn(plan, "diag:act-rms:activations", kStep);
  CHECK(one(a, "net.out") == Approx(1.6583124));  // sqrt(11 / 4)
  CHECK(one(run_fn(plan, "diag:act-max-abs:activations", kStep), "net.out") == 3.0);
  CHECK(one(run_fn(plan, "diag:dead-relu:activations", kStep), "net.out") == 0.25);
  Named bad = kStep;
  bad["grad:net.w"] = {1, NAN};
  bad["probe:net.out"] = {1, NAN, INFINITY, 0};
  Named nf = run_fn(plan, "diag:nonfinite", bad);
  CHECK(one(nf, "net.w") == 1.0);
  CHECK(one(nf, "net.b") == 0.0);
  CHECK(one(run_fn(plan, "diag:nonfinite:activations", bad), "net.out") == 2.0);
}

TEST_CASE("defdiagnostic: :value per tensor, each reducer, :select", "[diag]") {
  auto c = compile(kRunFile + "(defrun :steps 4)");
  const DiagnosticPlan& plan = c->plan();
  Named r = run_fn(plan, "diag:update-to-weight", kStep);
  CHECK(one(r, "net.w:max") == Approx(0.1).epsilon(1e-5));
  CHECK(one(r, "net.w:mean") == Approx(0.1).epsilon(1e-5));
  CHECK(one(r, "net.b:max") == 0.0);
  // (* p 2) of w only (:select (ndim 2)): (6 8).
  Named s = run_fn(plan, "diag:spread", kStep);
  CHECK(s.size() == 5);
  CHECK(one(s, "net.w:l2") == Approx(10.0));
  CHECK(one(s, "net.w:std") == Approx(1.0));  // the population's
  CHECK(one(s, "net.w:min") == 6.0);
  CHECK(s.at("value:net.w") == std::vector<double>{6, 8});  // for the kurtosis plugin
  std::vector<double> h = s.at("net.w:histogram");
  REQUIRE(h.size() == 2 + runfile::kHistogramBins);
  CHECK(h[0] == 6.0);
  CHECK(h[1] == 8.0);
  CHECK(h[2] == 1.0);   // 6 in the first bin
  CHECK(h[17] == 1.0);  // the maximum in the last
  // Activations (1 NaN 3 0): non-finite values are counted apart.
  Named bad = kStep;
  bad["probe:net.out"] = {1, NAN, 3, 0};
  Named a = run_fn(plan, "diag:act-spread:activations", bad);
  CHECK(one(a, "net.out:frac-nonfinite") == 0.25);
  CHECK(one(a, "net.out:frac-zero") == 0.25);
  std::vector<double> ah = a.at("net.out:histogram");
  CHECK(ah[0] == 0.0);
  CHECK(ah[1] == 3.0);
  std::vector<double> counts(ah.begin() + 2, ah.end());
  std::vector<double> want(16, 0.0);
  want[0] = want[5] = want[15] = 1;  // 0, 1 (at 16/3) and 3 over [0, 3]
  CHECK(counts == want);
  // Without :reduce, the mean of the value, one number per path.
  Named m = run_fn(plan, "diag:grad-mean", kStep);
  CHECK(one(m, "net.w") == 1.5);
  CHECK(one(m, "net.b") == 0.5);
}

TEST_CASE("gradients are the microbatches' mean; a smaller last batch gets its own functions",
          "[diag]") {
  auto c = compile(kRunFile + "(defrun :steps 4 :microbatches 2)");
  Named r = run_fn(c->plan(), "diag:grad-rms", kStep);
  CHECK(one(r, "net.w") == Approx(0.7905694));  // rms of (0.5 1)
  std::string ten = kRunFile;
  ten.replace(ten.find(":examples 8"), 11, ":examples 10");
  auto d = compile(ten + "(defrun :steps 4)");
  const DiagnosticPlan& plan = d->plan();
  REQUIRE(plan.forwards.size() == 2);
  CHECK(plan.forwards[1].fn == "diag:forward@2");
  CHECK(plan.forwards[1].rows == 2);
  const runfile::Diagnostic* act = plan.find("act-rms");
  REQUIRE(act->fns.size() == 2);
  CHECK(act->fns[1].fn == "diag:act-rms:activations@2");
  Named small = kStep;
  small["probe:net.out"] = {3, 4};
  CHECK(one(run_fn(plan, "diag:act-rms:activations@2", small), "net.out") == Approx(3.5355339));
}

TEST_CASE("diag:forward recomputes the probes from the batch and the parameters", "[diag]") {
  auto c = compile(kRunFile + "(defrun :steps 4)");
  Named in = kStep;
  in["batch:x"] = {1, 2, 3, 4, 0, 0, -1, 1};
  in["batch:y"] = {0, 0, 0, 0};
  Named out = run_fn(c->plan(), "diag:forward", in);
  CHECK(out.at("probe:net.out") == std::vector<double>{9, 23, -2, -1});  // x·(3 4) - 2
}

namespace {

// A reducer plugin's table, as a plugin fills it: (sum count), and one
// whose update fails.
struct FakeError {
  std::string message;
};
struct FakeState {
  double sum = 0, count = 0;
};
sg_error* as_error(FakeError* e) {
  return reinterpret_cast<sg_error*>(e);
}
const char* const kOutputs[] = {"sum", "count"};

sg_reducer_api fake_reducer(bool fail_update) {
  sg_reducer_api api{};
  api.struct_size = sizeof api;
  api.error_destroy = [](sg_error* e) { delete reinterpret_cast<FakeError*>(e); };
  api.error_message = [](const sg_error* e, const char** m, size_t* n) {
    const std::string& s = reinterpret_cast<const FakeError*>(e)->message;
    *m = s.data();
    *n = s.size();
  };
  api.outputs = [](size_t* n, const char* const** names) {
    *n = 2;
    *names = kOutputs;
  };
  api.init = [](const char*, size_t, sg_reducer_state** out) -> sg_error* {
    *out = reinterpret_cast<sg_reducer_state*>(new FakeState);
    return nullptr;
  };
  api.update = fail_update ? [](sg_reducer_state*, const float*, size_t) -> sg_error* {
    return as_error(new FakeError{"no room"});
  }
  : [](sg_reducer_state* st, const float* v, size_t n) -> sg_error* {
      auto* s = reinterpret_cast<FakeState*>(st);
      for (size_t i = 0; i < n; ++i) s->sum += v[i];
      s->count += double(n);
      return nullptr;
    };
  api.finish = [](sg_reducer_state* st, double* out) -> sg_error* {
    auto* s = reinterpret_cast<FakeState*>(st);
    out[0] = s->sum;
    out[1] = s->count;
    return nullptr;
  };
  api.destroy = [](sg_reducer_state* st) { delete reinterpret_cast<FakeState*>(st); };
  return api;
}

}  // namespace

TEST_CASE("the diag event's values: numbers, reducers, histograms, reducer plugins", "[diag]") {
  auto c = compile(kRunFile + "(defrun :steps 4)");
  const DiagnosticPlan& plan = c->plan();
  auto downloads = [&](const std::string& fn) {
    train::DiagDownloads d;
    for (auto& [name, v] : run_fn(plan, fn, kStep)) d[name].assign(v.begin(), v.end());
    return d;
  };
  sg_reducer_api sum_count = fake_reducer(false), broken = fake_reducer(true);
  const sg_reducer_api* kurtosis = &sum_count;
  auto lookup = [&](const std::string& name) { return name == "kurtosis" ? kurtosis : nullptr; };

  nlohmann::json values = nlohmann::json::object();
  const runfile::Diagnostic* grad_norm = plan.find("grad-norm");
  REQUIRE(train::add_diag_values(grad_norm->fns[0], downloads("diag:grad-norm"), lookup, values));
  CHECK(values["global"].get<double>() == Approx(2.2912878));
  CHECK(values["net.b"].get<double>() == 0.5);

  values = nlohmann::json::object();
  const runfile::Diagnostic* spread = plan.find("spread");
  REQUIRE(train::add_diag_values(spread->fns[0], downloads("diag:spread"), lookup, values));
  CHECK(values.size() == 1);  // :select (ndim 2)
  const nlohmann::json& w = values["net.w"];
  CHECK(w["l2"].get<double>() == Approx(10.0));
  CHECK(w["min"].get<double>() == 6.0);
  CHECK(w["histogram"]["min"].get<double>() == 6.0);
  CHECK(w["histogram"]["max"].get<double>() == 8.0);
  CHECK(w["histogram"]["counts"].dump() == "[1,0,0,0,0,0,0,0,0,0,0,0,0,0,0,1]");
  CHECK(w["kurtosis"].dump() == R"({"count":2.0,"sum":14.0})");

  train::DiagDownloads nan_out = downloads("diag:grad-norm");
  nan_out["net.b"] = {NAN};
  values = nlohmann::json::object();
  REQUIRE(train::add_diag_values(grad_norm->fns[0], nan_out, lookup, values));
  CHECK(values["net.b"].is_null());  // JSON has no NaN

  kurtosis = &broken;
  values = nlohmann::json::object();
  Status broken_reducer =
      train::add_diag_values(spread->fns[0], downloads("diag:spread"), lookup, values);
  CHECK(broken_reducer.code() == "E-DIAG-REDUCER");
  CHECK(broken_reducer.error() == "reducer kurtosis update: no room");
  kurtosis = nullptr;
  CHECK(train::add_diag_values(spread->fns[0], downloads("diag:spread"), lookup, values).error() ==
        "no reducer plugin named 'kurtosis' is loaded");
  // One output: a number.
  Result<nlohmann::json> single = train::reduce_with_plugin(sum_count, std::vector<float>{});
  REQUIRE(single.ok());
  CHECK(single->dump() == R"({"count":0.0,"sum":0.0})");
}

TEST_CASE("diagnostics' errors: unknown selection, names taken, a :value that is no tensor",
          "[diag]") {
  Diagnostic d = error_of(kRunFile + "(defrun :steps 4 :diagnostics (:select (:grad-norm :nope)))");
  CHECK(d.code == "E-RUN-KEY");
  CHECK(d.message.find("'nope', which is no diagnostic; the diagnostics are: grad-norm") !=
        std::string::npos);
  CHECK(d.span.line == 18);  // the defrun
  d = error_of(kRunFile + "(defdiagnostic grad-norm :over :grads :value (lambda (g p) g))\n" +
               "(defrun :steps 4)");
  CHECK(d.code == "E-CONTRACT-SHAPE");
  CHECK(d.message == "defdiagnostic grad-norm: a built-in diagnostic has that name");
  CHECK(d.span.line == 18);
  d = error_of(kRunFile + "(defdiagnostic spread :over :params :value (lambda (p) p))\n" +
               "(defrun :steps 4)");
  CHECK(d.code == "E-CONTRACT-SHAPE");
  CHECK(d.message == "defdiagnostic spread appears twice");
  d = error_of(kRunFile + "(defdiagnostic words :over :params :value (lambda (p) \"big\"))\n" +
               "(defrun :steps 4)");
  CHECK(d.code == "E-TYPE");
  CHECK(d.message ==
        "defdiagnostic words: :value gave \"big\" for 'net.w', not a tensor or a number");
}
