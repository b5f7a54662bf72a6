// What the tests of the fused gradient ops (cross_entropy_grad,
// layer_norm_grad, layer_norm_param_grad) share: types from text, the
// shape rule's answer as text, running a function on the CPU device with
// values given as doubles, reproducible draws, and counting the ops a
// gradient rule emitted.
#pragma once

#include <initializer_list>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "catch.hpp"
#include "cpu/program.h"
#include "ir/graph.h"

namespace fused_grad {

using sexpgpu::ir::TensorType;
using Values = std::vector<double>;

inline TensorType T(std::string_view text) {
  return *sexpgpu::ir::parse_tensor_type(text);
}

// `op`'s result type for operands of `types`, or the shape rule's error.
inline std::string infer(sexpgpu::ir::Op op, std::initializer_list<std::string_view> types,
                         const sexpgpu::ir::Attrs& attrs) {
  std::vector<TensorType> in;
  for (std::string_view t : types) in.push_back(T(t));
  sexpgpu::ir::Result<TensorType> r = sexpgpu::ir::infer_type(op, in, attrs);
  return r ? r->to_string() : r.error();
}

// Function `fn` of `module` compiled for the CPU device and run on `in`
// (one list of values per input), its outputs as doubles.
inline std::vector<Values> run(sexpgpu::ir::Module& module, const sexpgpu::ir::Function& fn,
                               const std::vector<Values>& in) {
  using sexpgpu::cpu::HostTensor;
  auto program = sexpgpu::cpu::Program::compile(module, fn.name);
  INFO(program.error());
  REQUIRE(program.ok());
  std::vector<HostTensor> tensors;
  for (size_t i = 0; i < fn.inputs.size(); ++i)
    tensors.push_back(HostTensor::from_doubles(fn.type(fn.inputs[i]), in[i]));
  auto out = (*program)->run(tensors);
  INFO(out.error());
  REQUIRE(out.ok());
  std::vector<Values> values;
  for (const HostTensor& t : *out) values.push_back(t.to_doubles());
  return values;
}

// n values uniform in [lo, hi), each exact in f32 too.
inline Values draw(std::mt19937_64& rng, size_t n, double lo, double hi) {
  std::uniform_real_distribution<double> u(lo, hi);
  Values v(n);
  for (double& x : v) x = double(float(u(rng)));
  return v;
}

// How many nodes of `op` fn has from node `first` on (the backward's, when
// `first` is the forward's node count).
inline size_t count_from(const sexpgpu::ir::Function& fn, size_t first, sexpgpu::ir::Op op) {
  size_t n = 0;
  for (size_t i = first; i < fn.nodes.size(); ++i) n += fn.nodes[i].op == op;
  return n;
}

}  // namespace fused_grad
