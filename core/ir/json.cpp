// The IR's JSON form (json.h): the writer, and the reader that checks every
// field it takes in and then runs the verifier. Field names follow attrs.def
// and ops.def exactly, so a plugin reads the same names the text form shows.
//
// Floats that JSON cannot hold (NaN, +-infinity: a mask's -inf fill) are
// written as the strings "nan", "inf" and "-inf"; a node's `loc` is
// [file, line, col] with file 0 meaning none; `group` is its fusion group.
#include "ir/json.h"

#include <cmath>
#include <limits>
#include <stdexcept>

#include "ir/verify.h"

namespace sexpgpu::ir {

using nlohmann::json;

namespace {

// ---------------------------------------------------------------------------
// Writing

json float_json(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

json dims_json(std::span<const int64_t> d) {
  return json(std::vector<int64_t>(d.begin(), d.end()));
}

json attr_json(const AttrInt& v) {
  return v;
}
json attr_json(const AttrFloat& v) {
  return float_json(v);
}
json attr_json(const AttrBool& v) {
  return v;
}
json attr_json(const AttrStr& v) {
  return v;
}
json attr_json(const AttrDType& v) {
  return std::string(ir_name(v));
}
json attr_json(const AttrInts& v) {
  return dims_json({v.data(), v.size()});
}
json attr_json(const AttrFloats& v) {
  json a = json::array();
  for (double x : v) a.push_back(float_json(x));
  return a;
}

json node_json(const Node& n, NodeId id) {
  json attrs = json::object();
#define SG_ATTR(name, kind) \
  if (n.attrs.name) attrs[#name] = attr_json(*n.attrs.name);
#include "ir/attrs.def"
#undef SG_ATTR
  return {{"id", id},
          {"op", std::string(info(n.op).ir_name)},
          {"inputs", std::vector<NodeId>(n.inputs.begin(), n.inputs.end())},
          {"shape", dims_json(n.type.shape.dims())},
          {"dtype", std::string(ir_name(n.type.dtype))},
          {"attrs", attrs},
          {"loc", {n.loc.file, n.loc.line, n.loc.col}},
          {"group", n.fusion_group}};
}

json function_json(const Function& fn) {
  json nodes = json::array(), outputs = json::array();
  for (size_t i = 0; i < fn.nodes.size(); ++i) nodes.push_back(node_json(fn.nodes[i], NodeId(i)));
  for (const Output& o : fn.outputs) outputs.push_back({{"name", o.name}, {"node", o.node}});
  return {{"name", fn.name}, {"inputs", fn.inputs}, {"outputs", outputs}, {"nodes", nodes}};
}

// ---------------------------------------------------------------------------
// Reading: each accessor names the path of what it rejects.

struct BadDocument : std::runtime_error {
  using std::runtime_error::runtime_error;
};

[[noreturn]] void bad(const std::string& path, const std::string& why) {
  throw BadDocument(path + ": " + why);
}

const json& field(const json& obj, const std::string& path, const char* key) {
  if (!obj.is_object()) bad(path, "expected an object");
  auto it = obj.find(key);
  if (it == obj.end()) bad(path, std::string("the field \"") + key + "\" is missing");
  return *it;
}

int64_t get_int(const json& v, const std::string& path) {
  if (!v.is_number_integer()) bad(path, "expected an integer");
  return v.get<int64_t>();
}

double get_float(const json& v, const std::string& path) {
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
    if (s == "inf") return std::numeric_limits<double>::infinity();
    if (s == "-inf") return -std::numeric_limits<double>::infinity();
  }
  bad(path, "expected a number (or \"nan\", \"inf\", \"-inf\")");
}

std::string get_str(const json& v, const std::string& path) {
  if (!v.is_string()) bad(path, "expected a string");
  return v.get<std::string>();
}

bool get_bool(const json& v, const std::string& path) {
  if (!v.is_boolean()) bad(path, "expected true or false");
  return v.get<bool>();
}

const json& get_array(const json& v, const std::string& path) {
  if (!v.is_array()) bad(path, "expected an array");
  return v;
}

DType get_dtype(const json& v, const std::string& path) {
  std::optional<DType> d = parse_dtype_ir(get_str(v, path));
  if (!d) bad(path, "unknown dtype \"" + v.get<std::string>() + "\"");
  return *d;
}

Dims get_dims(const json& v, const std::string& path) {
  Dims d;
  for (size_t i = 0; i < get_array(v, path).size(); ++i)
    d.push_back(get_int(v[i], path + "[" + std::to_string(i) + "]"));
  return d;
}

std::vector<double> get_floats(const json& v, const std::string& path) {
  std::vector<double> d;
  for (size_t i = 0; i < get_array(v, path).size(); ++i)
    d.push_back(get_float(v[i], path + "[" + std::to_string(i) + "]"));
  return d;
}

void read_attr(AttrInt& out, const json& v, const std::string& p) {
  out = get_int(v, p);
}
void read_attr(AttrFloat& out, const json& v, const std::string& p) {
  out = get_float(v, p);
}
void read_attr(AttrBool& out, const json& v, const std::string& p) {
  out = get_bool(v, p);
}
void read_attr(AttrStr& out, const json& v, const std::string& p) {
  out = get_str(v, p);
}
void read_attr(AttrDType& out, const json& v, const std::string& p) {
  out = get_dtype(v, p);
}
void read_attr(AttrInts& out, const json& v, const std::string& p) {
  out = get_dims(v, p);
}
void read_attr(AttrFloats& out, const json& v, const std::string& p) {
  out = get_floats(v, p);
}

Attrs read_attrs(const json& obj, const std::string& path) {
  if (!obj.is_object()) bad(path, "expected an object");
  Attrs attrs;
  for (const auto& [key, value] : obj.items()) {
    std::string p = path + "." + key;
#define SG_ATTR(name, kind)                    \
  if (key == #name) {                          \
    read_attr(attrs.name.emplace(), value, p); \
    continue;                                  \
  }
#include "ir/attrs.def"
#undef SG_ATTR
    bad(p, "unknown attribute \"" + key + "\"");
  }
  return attrs;
}

TensorType read_type(const json& obj, const std::string& path) {
  DType dtype = get_dtype(field(obj, path, "dtype"), path + ".dtype");
  Dims dims = get_dims(field(obj, path, "shape"), path + ".shape");
  Result<Shape> shape = make_shape({dims.data(), dims.size()});
  if (!shape) bad(path + ".shape", shape.error());
  return TensorType{dtype, *shape};
}

uint32_t get_u32(const json& v, const std::string& path) {
  int64_t x = get_int(v, path);
  if (x < 0 || x > int64_t(std::numeric_limits<uint32_t>::max())) bad(path, "out of range");
  return uint32_t(x);
}

NodeId get_id(const json& v, const std::string& path) {
  int64_t x = get_int(v, path);
  if (x < 0 || x > int64_t(std::numeric_limits<NodeId>::max())) bad(path, "not a node id");
  return NodeId(x);
}

NodeIds get_ids(const json& v, const std::string& path) {
  NodeIds ids;
  for (size_t i = 0; i < get_array(v, path).size(); ++i)
    ids.push_back(get_id(v[i], path + "[" + std::to_string(i) + "]"));
  return ids;
}

Node read_node(const json& obj, const std::string& path, size_t index) {
  if (get_int(field(obj, path, "id"), path + ".id") != int64_t(index))
    bad(path + ".id", "nodes are numbered densely in order: expected " + std::to_string(index));
  std::string op_name = get_str(field(obj, path, "op"), path + ".op");
  std::optional<Op> op = op_by_ir_name(op_name);
  if (!op) bad(path + ".op", "unknown op \"" + op_name + "\"");
  Node n{*op, {}, read_type(obj, path), read_attrs(field(obj, path, "attrs"), path + ".attrs"), {}};
  n.inputs = get_ids(field(obj, path, "inputs"), path + ".inputs");
  const json& loc = get_array(field(obj, path, "loc"), path + ".loc");
  if (loc.size() != 3) bad(path + ".loc", "expected [file, line, col]");
  n.loc = {get_u32(loc[0], path + ".loc[0]"), get_u32(loc[1], path + ".loc[1]"),
           get_u32(loc[2], path + ".loc[2]")};
  n.fusion_group = int32_t(get_int(field(obj, path, "group"), path + ".group"));
  return n;
}

Function read_function(const json& obj, const std::string& path) {
  Function fn;
  fn.name = get_str(field(obj, path, "name"), path + ".name");
  const json& nodes = get_array(field(obj, path, "nodes"), path + ".nodes");
  for (size_t i = 0; i < nodes.size(); ++i)
    fn.nodes.push_back(read_node(nodes[i], path + ".nodes[" + std::to_string(i) + "]", i));
  NodeIds inputs = get_ids(field(obj, path, "inputs"), path + ".inputs");
  fn.inputs.assign(inputs.begin(), inputs.end());
  const json& outputs = get_array(field(obj, path, "outputs"), path + ".outputs");
  for (size_t i = 0; i < outputs.size(); ++i) {
    std::string p = path + ".outputs[" + std::to_string(i) + "]";
    fn.outputs.push_back({get_str(field(outputs[i], p, "name"), p + ".name"),
                          get_id(field(outputs[i], p, "node"), p + ".node")});
  }
  return fn;
}

Module read_module(const json& doc) {
  const std::string root = "IR JSON";
  int64_t version = get_int(field(doc, root, "version"), "version");
  if (version != kIrVersion)
    bad("version", "this is IR version " + std::to_string(version) + "; this build reads " +
                       std::to_string(kIrVersion));
  Module m;
  m.files.clear();
  const json& files = get_array(field(doc, root, "files"), "files");
  for (size_t i = 0; i < files.size(); ++i)
    m.files.push_back(get_str(files[i], "files[" + std::to_string(i) + "]"));
  const json& params = get_array(field(doc, root, "params"), "params");
  for (size_t i = 0; i < params.size(); ++i) {
    std::string p = "params[" + std::to_string(i) + "]";
    m.params.push_back({get_str(field(params[i], p, "path"), p + ".path"), read_type(params[i], p),
                        get_bool(field(params[i], p, "trainable"), p + ".trainable")});
  }
  const json& fns = get_array(field(doc, root, "functions"), "functions");
  for (size_t i = 0; i < fns.size(); ++i)
    m.functions.push_back(read_function(fns[i], "functions[" + std::to_string(i) + "]"));
  return m;
}

}  // namespace

json to_json(const Module& module) {
  json params = json::array(), functions = json::array();
  for (const ParamInfo& p : module.params)
    params.push_back({{"path", p.path},
                      {"shape", dims_json(p.type.shape.dims())},
                      {"dtype", std::string(ir_name(p.type.dtype))},
                      {"trainable", p.trainable}});
  for (const Function& fn : module.functions) functions.push_back(function_json(fn));
  return {{"version", kIrVersion},  {"files", module.files},    {"params", params},
          {"functions", functions}, {"loaders", json::array()}, {"schedule", json::object()}};
}

Result<Module> module_from_json(const json& doc) {
  try {
    Module m = read_module(doc);
    if (std::string problem = verify(m); !problem.empty())
      return Result<Module>::failure("the IR does not verify: " + problem);
    return m;
  } catch (const BadDocument& e) {
    return Result<Module>::failure(e.what());
  }
}

Result<Module> module_from_json(std::string_view text) {
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return Result<Module>::failure("IR JSON: the text is not valid JSON");
  return module_from_json(doc);
}

}  // namespace sexpgpu::ir
