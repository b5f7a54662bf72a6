// Helpers of the model layer's tests (test_models*.cpp): a session that
// evaluates the user's file and stages contract-like functions as traces,
// runs them on the CPU, and the gen() values the PyTorch references used.
#pragma once

#include <cmath>
#include <optional>

#include "catch.hpp"
#include "cpu/program.h"
#include "runfile/model.h"
#include "runfile/session.h"
#include "stage/stager.h"

namespace models_test {

using namespace sexpgpu;
using lisp::Value;

inline const char* const kFile = "/models-test/run.lisp";

struct Lab {
  runfile::Session s;
  lisp::Interp& in() { return *s.interp; }
  stage::Stager& st() { return stage::stager_of(in()); }

  // Evaluates `text` as the user's file; the values of its last form.
  std::vector<Value> eval(const std::string& text) {
    std::vector<Value> last;
    bool ok = s.eval_string(kFile, text, &last);
    if (!ok) FAIL(s.sink.all().back().code << " " << s.sink.all().back().message);
    return last;
  }
  std::string show(const std::string& text) { return in().show(eval(text).at(0)); }
  // The first error `text` reports.
  Diagnostic error_of(const std::string& text) {
    s.sink.clear();
    s.eval_string(kFile, text, nullptr);
    REQUIRE(!s.sink.all().empty());
    return s.sink.all().front();
  }

  // Stages `fn` as one trace: CALLEE (a form giving a function) applied to
  // staged inputs of `types`, its value the output "y". The error, if any.
  std::optional<Diagnostic> trace(const std::string& fn, const std::string& callee,
                                  const std::vector<ir::TensorType>& types) {
    Value f = eval(callee).at(0);
    st().begin_function(fn);
    runfile::begin_trace(in());
    try {
      ir::Builder b(st().current());
      std::vector<Value> args;
      for (size_t i = 0; i < types.size(); ++i)
        args.push_back(st().wrap(b.input("x" + std::to_string(i), types[i])));
      Value y = in().apply(f, args.data(), int(args.size()));
      st().current().outputs.push_back({"y", st().operand(y, "y")});
    } catch (lisp::LispError& e) {
      runfile::end_trace(in());
      st().abandon_function();
      return e.diag;
    }
    runfile::end_trace(in());
    st().end_function();
    return std::nullopt;
  }
  const ir::Function& fn(const std::string& name) { return *st().module().find(name); }

  std::vector<cpu::HostTensor> run(const std::string& fn_name,
                                   const std::vector<cpu::HostTensor>& inputs) {
    ir::Result<std::shared_ptr<cpu::Program>> p = cpu::Program::compile(st().module(), fn_name);
    INFO(p.error());
    REQUIRE(p.ok());
    ir::Result<std::vector<cpu::HostTensor>> r = (*p)->run(inputs);
    INFO(r.error());
    REQUIRE(r.ok());
    return *r;
  }
};

inline ir::TensorType f32(std::initializer_list<int64_t> dims) {
  ir::Dims d;
  for (int64_t n : dims) d.push_back(n);
  return ir::TensorType{ir::DType::F32, ir::Shape(d)};
}

inline ir::TensorType i32(std::initializer_list<int64_t> dims) {
  ir::TensorType t = f32(dims);
  t.dtype = ir::DType::I32;
  return t;
}

inline cpu::HostTensor gen(const ir::TensorType& t, double seed, double scale) {
  std::vector<double> v(size_t(*t.shape.numel()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = scale * std::sin(0.37 * double(i) + seed);
  return cpu::HostTensor::from_doubles(t, v);
}

inline std::vector<std::string> param_nodes(const ir::Function& fn) {
  std::vector<std::string> out;
  for (ir::NodeId id : fn.inputs)
    if (fn.node(id).op == ir::Op::Param) out.push_back(*fn.node(id).attrs.name);
  return out;
}

inline std::vector<std::string> decl_paths(const lisp::Interp& in) {
  std::vector<std::string> out;
  for (const runfile::ParamDecl& d : runfile::params_of(in).decls) out.push_back(d.path);
  return out;
}

// Runs `fn` on inputs from gen(): the i-th Input with seed input_seeds[i],
// the k-th Param with seed k+1, scale 0.5 (the PyTorch script's order).
inline std::vector<double> run_numeric(Lab& lab, const std::string& fn,
                                       const std::vector<double>& input_seeds) {
  const ir::Function& f = lab.fn(fn);
  std::vector<cpu::HostTensor> inputs;
  size_t n_inputs = 0, n_params = 0;
  for (ir::NodeId id : f.inputs) {
    const ir::Node& node = f.node(id);
    if (node.op == ir::Op::Input)
      inputs.push_back(gen(node.type, input_seeds.at(n_inputs++), 1.0));
    else
      inputs.push_back(gen(node.type, double(++n_params), 0.5));
  }
  return lab.run(fn, inputs).at(0).to_doubles();
}

inline void check_close(const std::vector<double>& got, const std::vector<double>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i);
    CHECK(got[i] == Approx(want[i]).epsilon(1e-5).margin(2e-6));
  }
}

struct Stats {
  double min = INFINITY, max = -INFINITY, mean = 0, std = 0;
};

inline Stats stats_of(const std::vector<double>& v) {
  Stats s;
  for (double x : v) {
    s.min = std::min(s.min, x);
    s.max = std::max(s.max, x);
    s.mean += x;
  }
  s.mean /= double(v.size());
  for (double x : v) s.std += (x - s.mean) * (x - s.mean);
  s.std = std::sqrt(s.std / double(v.size()));
  return s;
}

}  // namespace models_test
