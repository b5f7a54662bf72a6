// The IR's text form (print.h; tensors.md, "IR printed form"). Golden IR
// files hold this text, so its layout is a contract:
//
//   fn train_step(%x: f32[128,784], %y: i32[128]) params 1
//     %0 = param "mlp.fc1.weight"  f32[784,256]
//     %1 = matmul %x %0            f32[128,256]  mlp.lisp:14:5
//     %2 = sum %1 axes=[1]         f32[128]      mlp.lisp:15:3
//     outputs: loss=%2
//
// Inputs are named by their `name` and appear only in the header; every
// other node is numbered in order from %0. Attributes follow the operands as
// key=value in attrs.def order (`shape` and `dtype` only where they differ
// from the node's type, which already shows them); a fused node ends with
// fusion=G. The type and position columns are aligned per function; a
// position is the file's base name, line and column.
#include "ir/print.h"

#include <charconv>
#include <filesystem>
#include <vector>

namespace sexpgpu::ir {

namespace {

constexpr size_t kDataShown = 8;  // constants print their first values only

std::string number(double v) {
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, end);
}

std::string quoted(const std::string& s) {
  std::string q = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') q += '\\';
    q += c;
  }
  return q + "\"";
}

std::string text(const AttrInt& v) {
  return std::to_string(v);
}
std::string text(const AttrFloat& v) {
  return number(v);
}
std::string text(const AttrBool& v) {
  return v ? "true" : "false";
}
std::string text(const AttrStr& v) {
  return quoted(v);
}
std::string text(const AttrDType& v) {
  return std::string(ir_name(v));
}
std::string text(const AttrInts& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + "]";
}
std::string text(const AttrFloats& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size() && i < kDataShown; ++i) s += (i ? "," : "") + number(v[i]);
  if (v.size() > kDataShown) s += ",...(" + std::to_string(v.size()) + " values)";
  return s + "]";
}

// Whether the attribute only restates the node's type.
bool restates_type(const Node& n, std::string_view attr) {
  if (attr == "shape") return n.attrs.shape && Shape(*n.attrs.shape) == n.type.shape;
  if (attr == "dtype") return n.attrs.dtype == n.type.dtype;
  return false;
}

std::string attrs_text(const Node& n) {
  std::string s;
#define SG_ATTR(attr, kind)                                                             \
  if (n.attrs.attr && !restates_type(n, #attr) &&                                       \
      !((n.op == Op::Input || n.op == Op::Param) && std::string_view(#attr) == "name")) \
    s += " " #attr "=" + text(*n.attrs.attr);
#include "ir/attrs.def"
#undef SG_ATTR
  return s;
}

std::string pad_to(std::string s, size_t width) {
  if (s.size() < width) s.append(width - s.size(), ' ');
  return s;
}

struct Line {
  std::string body, type, loc;
};

class Printer {
 public:
  Printer(const Module& module, const Function& fn) : module_(module), fn_(fn) {
    size_t next = 0;
    for (const Node& n : fn.nodes)
      names_.push_back(n.op == Op::Input ? "%" + n.attrs.name.value_or("?")
                                         : "%" + std::to_string(next++));
  }

  std::string print() const {
    std::vector<Line> lines;
    for (size_t i = 0; i < fn_.nodes.size(); ++i)
      if (fn_.nodes[i].op != Op::Input) lines.push_back(node_line(NodeId(i)));
    size_t body_w = 0, type_w = 0;
    for (const Line& l : lines) {
      body_w = std::max(body_w, l.body.size());
      type_w = std::max(type_w, l.type.size());
    }
    std::string out = header() + "\n";
    for (const Line& l : lines) {
      std::string row = "  " + pad_to(l.body, body_w + 2) + l.type;
      if (!l.loc.empty()) row = pad_to(row, 2 + body_w + 2 + type_w + 2) + l.loc;
      out += row + "\n";
    }
    return out + outputs_line() + "\n";
  }

 private:
  std::string header() const {
    std::string h = "fn " + fn_.name + "(";
    size_t params = 0;
    bool first = true;
    for (NodeId id : fn_.inputs) {
      const Node& n = fn_.node(id);
      if (n.op == Op::Param) {
        ++params;
        continue;
      }
      h += (first ? "" : ", ") + names_[size_t(id)] + ": " + n.type.to_string();
      first = false;
    }
    return h + ") params " + std::to_string(params);
  }

  Line node_line(NodeId id) const {
    const Node& n = fn_.node(id);
    Line l;
    l.body = names_[size_t(id)] + " = " + std::string(info(n.op).ir_name);
    if (n.op == Op::Param) l.body += " " + quoted(n.attrs.name.value_or(""));
    for (NodeId in : n.inputs) l.body += " " + operand(in);
    l.body += attrs_text(n);
    if (n.fusion_group >= 0) l.body += " fusion=" + std::to_string(n.fusion_group);
    l.type = n.type.to_string();
    if (n.loc.valid() && n.loc.file < module_.files.size())
      l.loc = std::filesystem::path(module_.files[n.loc.file]).filename().string() + ":" +
              std::to_string(n.loc.line) + ":" + std::to_string(n.loc.col);
    return l;
  }

  std::string operand(NodeId id) const {
    return id >= 0 && size_t(id) < names_.size() ? names_[size_t(id)] : "%?" + std::to_string(id);
  }

  std::string outputs_line() const {
    std::string s = "  outputs:";
    for (size_t i = 0; i < fn_.outputs.size(); ++i)
      s += (i ? ", " : " ") + fn_.outputs[i].name + "=" + operand(fn_.outputs[i].node);
    return s;
  }

  const Module& module_;
  const Function& fn_;
  std::vector<std::string> names_;  // per node: "%x" for inputs, "%3" for the rest
};

}  // namespace

std::string to_text(const Module& module, const Function& fn) {
  return Printer(module, fn).print();
}

std::string to_text(const Module& module) {
  std::string out;
  for (size_t i = 0; i < module.functions.size(); ++i)
    out += (i ? "\n" : "") + to_text(module, module.functions[i]);
  return out;
}

}  // namespace sexpgpu::ir
