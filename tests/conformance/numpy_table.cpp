// The NumPy/PyTorch table as Prepared cases: one op on fixed operands, the
// expected output pasted from numpy_reference.py's run.
#include "numpy_table.h"

#include <cmath>
#include <stdexcept>

#include "ir/json.h"

namespace conformance {

namespace {

constexpr DType F64 = DType::F64, F32 = DType::F32, I32 = DType::I32, I64 = DType::I64,
                U8 = DType::U8, Bool = DType::Bool;

struct T {
  DType dtype;
  Dims shape;
  Values values;
};

// Attributes by chained setters, as the generated table writes them.
struct A : Attrs {
  A& axes(Dims v) { return Attrs::axes = v, *this; }
  A& axis(int64_t v) { return Attrs::axis = v, *this; }
  A& keepdims(bool v) { return Attrs::keepdims = v, *this; }
  A& correction(int64_t v) { return Attrs::correction = v, *this; }
  A& reduction(std::string v) { return Attrs::reduction = v, *this; }
  A& ignore_index(int64_t v) { return Attrs::ignore_index = v, *this; }
  A& eps(double v) { return Attrs::eps = v, *this; }
  A& causal(bool v) { return Attrs::causal = v, *this; }
  A& scale(double v) { return Attrs::scale = v, *this; }
  A& kernel(Dims v) { return Attrs::kernel = v, *this; }
  A& stride(Dims v) { return Attrs::stride = v, *this; }
  A& padding(Dims v) { return Attrs::padding = v, *this; }
  A& dilation(Dims v) { return Attrs::dilation = v, *this; }
  A& groups(int64_t v) { return Attrs::groups = v, *this; }
  A& shape(Dims v) { return Attrs::shape = v, *this; }
  A& dtype(DType v) { return Attrs::dtype = v, *this; }
  A& pads(Dims v) { return Attrs::pads = v, *this; }
  A& value(double v) { return Attrs::value = v, *this; }
  A& start(double v) { return Attrs::start = v, *this; }
  A& step(double v) { return Attrs::step = v, *this; }
  A& slice(Dims starts, Dims ends, Dims steps) {
    Attrs::starts = starts, Attrs::ends = ends, Attrs::steps = steps;
    return *this;
  }
};

struct Entry {
  const char* label;
  Op op;
  A attrs;
  std::vector<T> inputs;
  Dims out_shape;
  Values expected;
};

const std::vector<Entry>& table() {
  static const std::vector<Entry> entries = {
#include "numpy_expected.inc"
  };
  return entries;
}

Prepared prepared_of(const Entry& e) {
  Prepared p;
  p.op = e.op;
  p.dtype = F64;
  p.module.functions.emplace_back().name = "f";
  ir::Function& fn = p.module.functions[0];
  ir::Builder b(fn);
  std::vector<NodeId> in;
  for (const T& t : e.inputs) {
    TensorType type{t.dtype, Shape(t.shape)};
    in.push_back(b.input("x" + std::to_string(in.size()), type));
    p.inputs.push_back(cpu::HostTensor::from_doubles(type, t.values));
  }
  ir::Result<NodeId> y = b.add(e.op, std::span<const NodeId>(in), e.attrs);
  if (!y) throw std::logic_error(std::string("NumPy table entry '") + e.label + "': " + y.error());
  if (!(b.type(*y).shape == Shape(e.out_shape)))
    throw std::logic_error(std::string("NumPy table entry '") + e.label + "': the op gives " +
                           b.type(*y).to_string() + ", the table " +
                           Shape(e.out_shape).to_string());
  fn.outputs.push_back({"y", *y});
  p.name = std::string(e.label) + ": " + b.type(*y).to_string();
  p.ir_json = ir::to_json(p.module).dump();
  p.expected.push_back(cpu::HostTensor::from_doubles(b.type(*y), e.expected));
  return p;
}

}  // namespace

std::vector<Prepared> numpy_cases() {
  std::vector<Prepared> out;
  for (const Entry& e : table()) out.push_back(prepared_of(e));
  return out;
}

}  // namespace conformance
