// The Stager: staged tensors as Lisp values, operands from numbers and
// lists, nodes added at the user's form with E-SHAPE/E-DTYPE/E-IR-LIMIT.
#include "stage/stager.h"

#include <cmath>
#include <utility>

#include "stage/args.h"

namespace sexpgpu::stage {

const char* StagedTensor::refuses_truth() const {
  if (type.dtype != ir::DType::Bool) return nullptr;
  return "a staged :bool tensor has no truth value at compile time: its elements are known "
         "only when the run computes them";
}

StagedTensor* as_tensor(Value v) {
  if (v.kind != lisp::Kind::Foreign || v.p == nullptr) return nullptr;
  return dynamic_cast<StagedTensor*>(v.foreign());
}

Stager::Stager(Interp& in) : in_(in) {
  module_.functions.push_back(ir::Function{"toplevel", {}, {}, {}});
  serials_.push_back(serial_++);
}

void Stager::begin_function(const std::string& name) {
  fn_stack_.push_back(fn_index_);
  module_.functions.push_back(ir::Function{name, {}, {}, {}});
  serials_.push_back(serial_++);
  fn_index_ = module_.functions.size() - 1;
  next_stream_ = 0;
}

void Stager::end_function() {
  fn_index_ = fn_stack_.back();
  fn_stack_.pop_back();
}

void Stager::abandon_function() {
  size_t dropped = fn_index_;
  end_function();
  module_.functions.erase(module_.functions.begin() + long(dropped));
  serials_.erase(serials_.begin() + long(dropped));
}

ir::Function& Stager::current() {
  return module_.functions[fn_index_];
}

Value Stager::wrap(ir::NodeId node) {
  StagedTensor* t = in_.alloc<StagedTensor>();
  t->function_serial = serials_[fn_index_];
  t->node = node;
  t->type = current().type(node);
  return Value::object(lisp::Kind::Foreign, t);
}

ir::Loc Stager::current_loc() {
  Span s = in_.current_span();
  if (!s.valid()) return {};
  return ir::Loc{module_.file_id(in_.sources.file(s.file).path), s.line, s.col};
}

namespace {

// Nested lists of numbers: their shape (checked rectangular) and values.
void flatten_list(Interp& in, Value v, size_t depth, std::vector<int64_t>& shape,
                  std::vector<double>& out, bool& all_ints) {
  if (v.is_number()) {
    if (depth != shape.size()) in.fail("E-SHAPE", "a constant's nested lists are not rectangular");
    all_ints = all_ints && v.is_int();
    out.push_back(v.is_int() ? double(v.i) : v.f);
    return;
  }
  std::vector<Value> items = in.list_items(v, "constant");
  if (depth == shape.size()) {
    if (!out.empty() && depth > 0)
      in.fail("E-SHAPE", "a constant's nested lists are not rectangular");
    shape.push_back(int64_t(items.size()));
  } else if (depth > shape.size() || shape[depth] != int64_t(items.size())) {
    in.fail("E-SHAPE", "a constant's nested lists are not rectangular");
  }
  for (Value item : items) {
    if (!item.is_number() && !item.is_cons() && !item.is_nil())
      in.type_error(item, "a number or a list of numbers", "constant");
    flatten_list(in, item, depth + 1, shape, out, all_ints);
  }
}

}  // namespace

ir::NodeId Stager::operand(Value v, std::string_view what, const ir::TensorType* like) {
  if (StagedTensor* t = as_tensor(v)) {
    if (t->function_serial != serials_[fn_index_])
      in_.fail("E-TYPE",
               "this tensor belongs to another staged function than '" + current().name + "'",
               "tensors cannot be carried from one staged function to another; make it again here");
    return t->node;
  }
  if (v.is_number()) {
    ir::DType d = ir::kDefaultDType;
    if (like) {
      d = like->dtype;
      if (!v.is_int() && !ir::is_float(d)) d = ir::DType::F32;
    }
    if (v.is_int() && d == ir::DType::Bool) d = ir::DType::I32;
    ir::Attrs a;
    a.shape = ir::Dims{};
    a.dtype = d;
    a.value = v.is_int() ? double(v.i) : v.f;
    return stage(ir::Op::Full, {}, std::move(a));
  }
  if (v.is_cons()) {
    std::vector<int64_t> shape;
    std::vector<double> data;
    bool all_ints = true;
    flatten_list(in_, v, 0, shape, data, all_ints);
    ir::Attrs a;
    a.shape = ir::Dims(shape.begin(), shape.end());
    a.dtype = like ? like->dtype : ir::kDefaultDType;
    a.data = std::move(data);
    return stage(ir::Op::Constant, {}, std::move(a));
  }
  in_.type_error(v, "a tensor or a number", what);
}

ir::NodeId Stager::tensor_operand(Value v, std::string_view what) {
  if (!as_tensor(v)) in_.type_error(v, "a tensor", what);
  return operand(v, what);
}

namespace {

// Under autocast: the ops computed in low precision, and the f32 islands
// (softmax, norms, the loss, reductions) whose low-precision inputs are
// widened first.
bool low_precision_op(ir::Op op) {
  return op == ir::Op::MatMul || op == ir::Op::Conv2d || op == ir::Op::Attention;
}

bool f32_island_op(ir::Op op) {
  switch (op) {
    case ir::Op::Softmax:
    case ir::Op::LogSoftmax:
    case ir::Op::CrossEntropy:
    case ir::Op::LayerNorm:
    case ir::Op::RmsNorm:
    case ir::Op::Sum:
    case ir::Op::Mean:
    case ir::Op::Var:
    case ir::Op::Std:
    case ir::Op::LogSumExp:
    case ir::Op::Norm: return true;
    default: return false;
  }
}

}  // namespace

ir::NodeId Stager::stage(ir::Op op, std::span<const ir::NodeId> operands, ir::Attrs attrs) {
  ir::Function& fn = current();
  if (autocast && (low_precision_op(op) || f32_island_op(op))) {
    ir::DType want = low_precision_op(op) ? *autocast : ir::DType::F32;
    std::vector<ir::NodeId> cast(operands.begin(), operands.end());
    for (ir::NodeId& id : cast) {
      ir::DType d = fn.type(id).dtype;
      if (!ir::is_float(d) || d == want || (want == ir::DType::F32 && d == ir::DType::F64))
        continue;
      ir::Attrs a;
      a.dtype = want;
      id = stage(ir::Op::Cast, {id}, std::move(a));
    }
    std::optional<ir::DType> saved = std::exchange(autocast, std::nullopt);
    struct Restore {
      Stager& st;
      std::optional<ir::DType> saved;
      ~Restore() { st.autocast = saved; }
    } restore{*this, saved};
    return stage(op, std::span<const ir::NodeId>(cast), std::move(attrs));
  }
  if (fn.nodes.size() >= node_limit)
    in_.fail("E-IR-LIMIT",
             "function '" + fn.name + "' has reached " + std::to_string(node_limit) + " IR nodes",
             "raise the limit with --ir-nodes N if the model really is that large");
  ir::Builder b(fn);
  b.set_loc(current_loc());
  ir::Result<ir::NodeId> r = b.add(op, operands, std::move(attrs));
  if (!r) {
    // The rules say "dtype" exactly when the dtypes are what does not fit.
    bool dtype = r.error().find("dtype") != std::string::npos;
    in_.fail(dtype ? "E-DTYPE" : "E-SHAPE", r.error());
  }
  return *r;
}

ir::NodeId Stager::rng_state() {
  ir::Function& fn = current();
  for (ir::NodeId id : fn.inputs)
    if (fn.node(id).op == ir::Op::Input && fn.node(id).attrs.name == "rng") return id;
  ir::Builder b(fn);
  return b.input("rng", ir::TensorType{ir::DType::I64, ir::Shape{3}});
}

Stager& stager_of(Interp& in) {
  return in.extensions.get<Stager>();
}

void install(Interp& in) {
  in.extensions.emplace<Stager>(in);
  register_tensor_basics(in);
  register_tensor_elementwise(in);
  register_tensor_shape(in);
  register_tensor_nn(in);
}

// ---- argument readers (args.h) -----------------------------------------------------------

std::string lower_name(std::string_view name) {
  std::string out(name);
  for (char& c : out) c = char(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

ir::Dims arg_ints(Interp& in, Value v, std::string_view what) {
  ir::Dims out;
  if (v.is_int()) {
    out.push_back(v.i);
    return out;
  }
  for (Value x : in.list_items(v, what)) {
    if (!x.is_int()) in.type_error(x, "an integer", what);
    out.push_back(x.i);
  }
  return out;
}

ir::Shape arg_shape(Interp& in, Value v, std::string_view what) {
  if (!v.is_int() && !v.is_cons() && !v.is_nil())
    in.type_error(v, "a shape (a list of integers)", what);
  ir::Dims d = arg_ints(in, v, what);
  ir::Result<ir::Shape> s = ir::make_shape(std::span<const int64_t>(d.data(), d.size()));
  if (!s) in.fail("E-SHAPE", std::string(what) + ": " + s.error());
  return *s;
}

int64_t arg_int(Interp& in, Value v, std::string_view what) {
  if (!v.is_int()) in.type_error(v, "an integer", what);
  return v.i;
}

double arg_number(Interp& in, Value v, std::string_view what) {
  if (v.is_int()) return double(v.i);
  if (v.is_float()) return v.f;
  in.type_error(v, "a number", what);
}

ir::DType arg_dtype(Interp& in, Value v, ir::DType fallback) {
  if (v.is_nil()) return fallback;
  if (!v.is_symbol()) in.type_error(v, "a dtype keyword such as :f32", "dtype");
  std::string name = v.sym()->name;
  std::optional<ir::DType> d = ir::parse_dtype(name);
  if (!d) in.fail("E-DTYPE", ir::unknown_dtype_message(":" + name));
  return *d;
}

int64_t arg_axis(Interp& in, Value v, int64_t rank, std::string_view what) {
  int64_t axis = arg_int(in, v, what);
  ir::Result<int64_t> a = ir::normalize_axis(axis, rank);
  if (!a) in.fail("E-SHAPE", std::string(what) + ": " + a.error());
  return *a;
}

std::optional<ir::Axes> arg_reduce_axes(Interp& in, Value v, int64_t rank) {
  if (v.is_nil()) return std::nullopt;
  ir::Dims raw = arg_ints(in, v, ":axis");
  ir::Result<ir::Axes> a =
      ir::normalize_axes(std::span<const int64_t>(raw.data(), raw.size()), rank);
  if (!a) in.fail("E-SHAPE", ":axis: " + a.error());
  return *a;
}

}  // namespace sexpgpu::stage
