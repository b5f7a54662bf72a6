// The conformance cases' vocabulary: a Case builds one small function
// around one op for one dtype, with random operands drawn by CaseBuilder.
// The operands are rounded to their dtype as they are drawn, so the f64
// reference (reference.h) sees exactly the values the device sees.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "cpu/program.h"
#include "ir/graph.h"

namespace conformance {

using namespace sexpgpu;
using ir::Attrs;
using ir::Dims;
using ir::DType;
using ir::NodeId;
using ir::Op;
using ir::Shape;
using ir::TensorType;
using Values = std::vector<double>;

// How an operand's values are drawn; each adapts to the operand's dtype
// (integers draw small integers, bool draws 0/1).
enum class Draw {
  Any,       // floats in [-2, 2); ints in [-4, 4] (unsigned: [0, 8])
  Positive,  // floats in [0.5, 2); ints in [1, 4]
  NonZero,   // magnitude in [0.3, 2), either sign; ints without 0
  Grid,      // halves in [-1.5, 1.5] (ints [-2, 2]): ties and equalities happen
  Unit,      // floats in [-1, 1); as Any for ints
};

// Thrown when the op's shape rule refuses the dtype: the dtype is skipped.
struct Refused : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class CaseBuilder {
 public:
  CaseBuilder(uint64_t seed, DType dtype);

  // The dtype under test.
  DType dt() const { return dtype_; }
  std::mt19937_64& rng() { return rng_; }

  NodeId input(DType dtype, const Shape& shape, const Values& values);
  NodeId input(DType dtype, const Shape& shape, Draw draw);
  NodeId input(const Shape& shape, Draw draw = Draw::Any) { return input(dtype_, shape, draw); }
  // Adds op; throws Refused with the rule's message when it does not fit.
  NodeId op(Op op, std::initializer_list<NodeId> operands, Attrs attrs = {});
  NodeId op(Op op, std::span<const NodeId> operands, Attrs attrs = {});

  Values draw(DType dtype, int64_t n, Draw how);
  double uniform(double lo, double hi) { return std::uniform_real_distribution<>(lo, hi)(rng_); }
  int64_t integer(int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng_);
  }

  // The module ("f" with one output "y") and its inputs in calling order.
  ir::Module finish(NodeId result);
  std::vector<cpu::HostTensor> take_inputs() { return std::move(inputs_); }

 private:
  ir::Module module_;
  ir::Builder builder_;
  DType dtype_;
  std::mt19937_64 rng_;
  std::vector<cpu::HostTensor> inputs_;
};

struct Case {
  std::string label;  // what the shapes and attributes alone do not say
  Op op;
  // The tolerance's scale: the number of terms each output element sums
  // (reductions, matmul, conv), 1 for elementwise ops.
  double terms = 1;
  std::function<NodeId(CaseBuilder&)> build;
};

// Every case of `op`; empty only for the leaves (Input, Param).
std::vector<Case> cases_for(Op op);

// The per-family case lists cases_for dispatches to.
std::vector<Case> elementwise_cases(Op op);
std::vector<Case> reduction_cases(Op op);
std::vector<Case> creation_cases(Op op);
std::vector<Case> shape_cases(Op op);
std::vector<Case> neural_cases(Op op);
std::vector<Case> collective_cases(Op op);  // cases_collective.cpp

Dims dims(std::initializer_list<int64_t> v);

}  // namespace conformance
