// Helpers for the CPU device's tests: build a one-function module with the
// Builder, compile it with cpu::Program, run it on numbers, compare numbers.
#pragma once

#include <cmath>
#include <initializer_list>
#include <string>
#include <vector>

#include "catch.hpp"
#include "cpu/program.h"
#include "ir/graph.h"

namespace cpu_test {

using namespace sexpgpu;
using ir::DType;
using ir::NodeId;
using ir::Op;

inline ir::Dims dims(std::initializer_list<int64_t> v) {
  ir::Dims d;  // push_back: GCC 12 warns falsely on small_vector's range constructor
  for (int64_t x : v) d.push_back(x);
  return d;
}

inline ir::Shape shape(std::initializer_list<int64_t> v) {
  return ir::Shape(dims(v));
}

// One function "f" under construction, then compiled and run.
struct Case {
  ir::Module module;
  ir::Function* fn;
  ir::Builder* b;
  std::vector<ir::TensorType> input_types;

  Case() {
    module.functions.emplace_back();
    fn = &module.functions.back();
    fn->name = "f";
    builder = std::make_unique<ir::Builder>(*fn);
    b = builder.get();
  }

  NodeId input(DType d, std::initializer_list<int64_t> s) {
    ir::TensorType t{d, shape(s)};
    input_types.push_back(t);
    return b->input("x" + std::to_string(input_types.size() - 1), t);
  }

  // Adds a node; fails the test (with the rule's message) when it does not fit.
  NodeId add(Op op, std::initializer_list<NodeId> operands, ir::Attrs attrs = {}) {
    ir::Result<NodeId> r = b->add(op, operands, std::move(attrs));
    INFO(r.error());
    REQUIRE(r.ok());
    return *r;
  }

  void output(NodeId id, std::string name = "") {
    fn->outputs.push_back({name.empty() ? "out" + std::to_string(fn->outputs.size()) : name, id});
  }

  std::shared_ptr<cpu::Program> compile(int threads = 0) {
    auto p = cpu::Program::compile(module, "f", cpu::Options{threads});
    INFO(p.error());
    REQUIRE(p.ok());
    return *p;
  }

  // Runs with one vector of numbers per input; returns each output's numbers.
  std::vector<std::vector<double>> run(std::vector<std::vector<double>> inputs, int threads = 0) {
    auto program = compile(threads);
    std::vector<cpu::HostTensor> in;
    for (size_t i = 0; i < inputs.size(); ++i)
      in.push_back(cpu::HostTensor::from_doubles(input_types[i], inputs[i]));
    auto out = program->run(in);
    INFO(out.error());
    REQUIRE(out.ok());
    std::vector<std::vector<double>> values;
    for (const cpu::HostTensor& t : *out) values.push_back(t.to_doubles());
    return values;
  }

  // The run's error message ("" when it succeeded).
  std::string run_error(std::vector<std::vector<double>> inputs) {
    auto program = compile();
    std::vector<cpu::HostTensor> in;
    for (size_t i = 0; i < inputs.size(); ++i)
      in.push_back(cpu::HostTensor::from_doubles(input_types[i], inputs[i]));
    auto out = program->run(in);
    return out.ok() ? "" : out.error();
  }

  const ir::TensorType& type(NodeId id) const { return fn->type(id); }

 private:
  std::unique_ptr<ir::Builder> builder;
};

// Every element within rel*|want| + abs of the expected one (NaNs match NaNs).
inline void check_close(const std::vector<double>& got, const std::vector<double>& want,
                        double rel = 1e-6, double abs = 1e-6) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i << ": got " << got[i] << ", want " << want[i]);
    if (std::isnan(want[i])) {
      CHECK(std::isnan(got[i]));
    } else if (std::isinf(want[i])) {
      CHECK(got[i] == want[i]);
    } else {
      CHECK(std::fabs(got[i] - want[i]) <= rel * std::fabs(want[i]) + abs);
    }
  }
}

inline void check_exact(const std::vector<double>& got, const std::vector<double>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i);
    CHECK(got[i] == want[i]);
  }
}

}  // namespace cpu_test
