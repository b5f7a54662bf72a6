// The IR JSON (core/ir/json.cpp): the document's fields, write -> read ->
// write is the identity (every attribute kind, non-finite floats, positions,
// fusion groups), and the reader's errors name the path and the problem.
#include <limits>

#include "catch.hpp"
#include "ir/graph.h"
#include "ir/json.h"
#include "ir/print.h"

using namespace sexpgpu::ir;
using nlohmann::json;

namespace {

TensorType T(std::string_view text) {
  return *parse_tensor_type(text);
}

Dims dims(std::initializer_list<int64_t> d) {
  Dims out;
  for (int64_t x : d) out.push_back(x);
  return out;
}

// One node of every attribute kind, a param, positions and a fusion group.
Module sample() {
  Module m;
  uint32_t file = m.file_id("examples/mlp.lisp");
  m.params.push_back({"mlp.w", T("f32[3,4]"), true});
  m.params.push_back({"mlp.frozen", T("bf16[4]"), false});
  Function& fn = m.functions.emplace_back();
  fn.name = "step";
  Builder b(fn);
  NodeId x = b.input("x", T("f32[2,3]"));
  NodeId rng = b.input("rng", T("i64[3]"));
  NodeId w = b.param("mlp.w", T("f32[3,4]"));
  b.set_loc({file, 3, 7});
  NodeId h = b.must(Op::MatMul, {x, w});
  NodeId g = b.must(Op::GeluTanh, {h});
  Attrs sum;
  sum.axes = dims({-1});  // Ints
  sum.keepdims = true;    // Bool
  NodeId s = b.must(Op::Sum, {g}, sum);
  Attrs cast;
  cast.dtype = DType::BF16;  // DType
  NodeId c = b.must(Op::Cast, {s}, cast);
  Attrs drop;
  drop.shape = dims({2, 4});
  drop.dtype = DType::F32;
  drop.p = 0.25;     // Float
  drop.stream = 17;  // Int
  NodeId mask = b.must(Op::RandomBernoulli, {rng}, drop);
  Attrs k;
  k.shape = dims({4});
  k.dtype = DType::F32;
  k.data = std::vector<double>{0.1, -std::numeric_limits<double>::infinity(), 1e-300, 3};  // Floats
  NodeId kn = b.must(Op::Constant, {}, k);
  NodeId masked = b.must(Op::Mul, {h, mask});
  NodeId sum2 = b.must(Op::Add, {masked, kn});
  fn.node(masked).fusion_group = 0;
  fn.node(sum2).fusion_group = 0;
  NodeId nan = b.full(Shape{}, std::numeric_limits<double>::quiet_NaN(), DType::F32);
  fn.outputs = {{"loss", c}, {"y", sum2}, {"nan", nan}};
  return m;
}

std::string read_error(const json& doc) {
  Result<Module> r = module_from_json(doc);
  return r ? "ok" : r.error();
}

}  // namespace

TEST_CASE("the IR JSON document", "[ir][json]") {
  json doc = to_json(sample());
  CHECK(doc["version"] == kIrVersion);
  CHECK(doc["files"] == json({"", "examples/mlp.lisp"}));
  CHECK(doc["params"][1] ==
        json({{"path", "mlp.frozen"}, {"shape", {4}}, {"dtype", "bf16"}, {"trainable", false}}));
  CHECK(doc["loaders"] == json::array());
  CHECK(doc["schedule"] == json::object());
  const json& fn = doc["functions"][0];
  CHECK(fn["name"] == "step");
  CHECK(fn["inputs"] == json({0, 1, 2}));
  CHECK(fn["outputs"][0] == json({{"name", "loss"}, {"node", 6}}));
  CHECK(fn["nodes"][0]["attrs"]["name"] == "x");  // Str
  CHECK(fn["nodes"][4] ==
        json::parse(R"({"id": 4, "op": "gelu_tanh", "inputs": [3], "shape": [2, 4],
      "dtype": "f32", "attrs": {}, "loc": [1, 3, 7], "group": -1})"));
  CHECK(fn["nodes"][5]["attrs"] == json::parse(R"({"axes": [-1], "keepdims": true})"));
  CHECK(fn["nodes"][7]["attrs"] ==
        json::parse(R"({"shape": [2, 4], "dtype": "f32", "p": 0.25, "stream": 17})"));
  CHECK(fn["nodes"][8]["attrs"]["data"] == json::parse(R"([0.1, "-inf", 1e-300, 3.0])"));
  CHECK(fn["nodes"][9]["group"] == 0);
  CHECK(fn["nodes"][11]["attrs"]["value"] == "nan");
}

TEST_CASE("IR JSON round trip: write -> read -> write is the identity", "[ir][json]") {
  Module m = sample();
  std::string first = to_json(m).dump();
  Result<Module> back = module_from_json(std::string_view(first));
  REQUIRE(back.ok());
  CHECK(to_json(*back).dump() == first);
  CHECK(to_text(*back) == to_text(m));
  CHECK(back->params[1].trainable == false);
  CHECK(std::isnan(*back->functions[0].nodes[11].attrs.value));
}

TEST_CASE("the IR JSON reader's errors", "[ir][json]") {
  json doc = to_json(sample());
  json& nodes = doc["functions"][0]["nodes"];
  SECTION("version") {
    doc["version"] = kIrVersion + 1;
    CHECK(read_error(doc) == "version: this is IR version " + std::to_string(kIrVersion + 1) +
                                 "; this build reads " + std::to_string(kIrVersion));
  }
  SECTION("unknown op") {
    nodes[4]["op"] = "frobnicate";
    CHECK(read_error(doc) == "functions[0].nodes[4].op: unknown op \"frobnicate\"");
  }
  SECTION("unknown attribute") {
    nodes[5]["attrs"]["axis_list"] = json::array();
    CHECK(read_error(doc) ==
          "functions[0].nodes[5].attrs.axis_list: unknown attribute \"axis_list\"");
  }
  SECTION("IR version 1's gelu attribute") {
    // Version 2 made the tanh form of gelu its own op, gelu_tanh.
    nodes[4]["op"] = "gelu";
    nodes[4]["attrs"]["approximate"] = "tanh";
    CHECK(read_error(doc) ==
          "functions[0].nodes[4].attrs.approximate: unknown attribute \"approximate\"");
  }
  SECTION("an attribute of the wrong kind") {
    nodes[5]["attrs"]["keepdims"] = 1;
    CHECK(read_error(doc) == "functions[0].nodes[5].attrs.keepdims: expected true or false");
  }
  SECTION("a list element of the wrong kind") {
    nodes[5]["attrs"]["axes"] = json({0.5});
    CHECK(read_error(doc) == "functions[0].nodes[5].attrs.axes[0]: expected an integer");
  }
  SECTION("an unknown dtype") {
    nodes[2]["dtype"] = "f8";
    CHECK(read_error(doc) == "functions[0].nodes[2].dtype: unknown dtype \"f8\"");
  }
  SECTION("a missing field") {
    nodes[3].erase("loc");
    CHECK(read_error(doc) == "functions[0].nodes[3]: the field \"loc\" is missing");
  }
  SECTION("nodes out of order") {
    nodes[3]["id"] = 4;
    CHECK(read_error(doc) ==
          "functions[0].nodes[3].id: nodes are numbered densely in order: expected 3");
  }
  SECTION("a negative dimension") {
    nodes[0]["shape"] = json({2, -3});
    CHECK(read_error(doc).rfind("functions[0].nodes[0].shape: invalid shape [2,-3]", 0) == 0);
  }
  SECTION("a document that does not verify") {
    nodes[4]["shape"] = json({2, 5});
    CHECK(read_error(doc) ==
          "the IR does not verify: fn step: %4 = gelu_tanh %3 (examples/mlp.lisp:3:7): the node's "
          "type f32[2,5] is not its rule's f32[2,4]");
  }
  SECTION("text that is not JSON") {
    CHECK(module_from_json(std::string_view("{\"version\": ")).error() ==
          "IR JSON: the text is not valid JSON");
  }
  SECTION("not an object") {
    CHECK(read_error(json::array()) == "IR JSON: expected an object");
  }
}
