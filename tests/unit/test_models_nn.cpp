// sexpgpu/nn by its numbers: the staged `init` function run on the CPU (the
// statistics of every initialiser, casts, ties left out, E-PARAM-INIT),
// GPT-2 small's parameter count from examples/gpt2.lisp, and layer outputs
// against PyTorch.
//
// Numeric cases feed inputs and parameters made by gen() (test_models_util.h);
// the expected numbers came from PyTorch 1.13 (float64) on the same values:
//   gen(shape, seed, scale) = float32(scale * sin(0.37 * i + seed)), i the
//   flat index; the input has seed 0 (the cross-attention's kv: 0.5), and the
//   parameters, in declaration order, seeds 1, 2, ... with scale 0.5.
// The layers were written in torch ops: linear x @ W + b with W (in out);
// attention as nanoGPT splits qkv into q k v, heads contiguous in the width,
// softmax(q·kᵀ/√d) (masked above the diagonal when causal) · v; F.layer_norm,
// F.conv2d, F.gelu; rms-norm x / sqrt(mean(x²) + 1e-5) · w.
#include <fstream>
#include <map>
#include <sstream>

#include "test_models_util.h"

using namespace sexpgpu;
using namespace models_test;

namespace {

// The init function's outputs by parameter path, run with seed `seed`.
std::map<std::string, cpu::HostTensor> run_init(Lab& lab, int64_t seed) {
  const ir::Function& init = lab.fn("init");
  ir::TensorType rng{ir::DType::I64, ir::Shape(ir::Dims{3})};
  std::vector<cpu::HostTensor> out = lab.run(
      "init", {cpu::HostTensor::from_doubles(rng, std::vector<double>{double(seed), 0, 0})});
  std::map<std::string, cpu::HostTensor> by_path;
  for (size_t i = 0; i < out.size(); ++i)
    by_path.emplace(init.outputs[i].name.substr(std::string("param:").size()), out[i]);
  return by_path;
}

std::optional<Diagnostic> init_error(Lab& lab) {
  try {
    runfile::stage_init_function(lab.in());
  } catch (lisp::LispError& e) {
    return e.diag;
  }
  return std::nullopt;
}

}  // namespace

TEST_CASE("init: one output per storage parameter, each initialiser's statistics", "[models][nn]") {
  Lab lab;
  lab.eval(R"(
    (require "sexpgpu/nn")
    (defparam plain '(200 100))
    (defparam u '(200 100) :init (nn:uniform :low -0.5 :high 0.25))
    (defparam n '(200 100) :init (nn:normal :mean 1 :std 3))
    (defparam xu '(300 100) :init (nn:xavier-uniform))
    (defparam xn '(300 100) :init (nn:xavier-normal :gain 2))
    (defparam ku '(64 32 3 3) :init (nn:kaiming-uniform))
    (defparam kn '(64 32 3 3) :init (nn:kaiming-normal :mode :fan-out))
    (defparam c '(3 4) :init (nn:constant 0.5))
    (defparam z 5 :init #'nn:zeros)
    (defparam o 5 :init (nn:ones))
    (defparam h '(2 2) :dtype :bf16 :init (nn:constant 0.3))
    (defparam tied '(3 4) :tie "c")
    (defparam ramp '(2 3) :init (lambda (s) (reshape (arange 6) s)))
    (nn:linear (zeros '(1 784)) 256 :name "fc")
    (nn:embedding (zeros '(1 1) :dtype :i32) 200 100 :name "emb")
    (nn:layer-norm (zeros '(1 6)) :name "ln")
    (nn:conv2d (zeros '(1 8 5 5)) 16 3 :name "conv"))");
  REQUIRE_FALSE(init_error(lab));
  const ir::Function& init = lab.fn("init");
  REQUIRE(init.inputs.size() == 1);
  CHECK(*init.node(init.inputs[0]).attrs.name == "rng");
  std::vector<std::string> outputs;
  for (const ir::Output& o : init.outputs) outputs.push_back(o.name);
  CHECK(outputs == std::vector<std::string>{
                       "param:plain", "param:u", "param:n", "param:xu", "param:xn", "param:ku",
                       "param:kn", "param:c", "param:z", "param:o", "param:h", "param:ramp",
                       "param:fc.weight", "param:fc.bias", "param:emb.weight", "param:ln.weight",
                       "param:ln.bias", "param:conv.weight", "param:conv.bias"});

  std::map<std::string, cpu::HostTensor> v = run_init(lab, 1);
  auto stats = [&](const char* path) { return stats_of(v.at(path).to_doubles()); };
  Stats s = stats("plain");  // defparam's default: normal(0, 0.02)
  CHECK(std::abs(s.mean) < 6e-4);
  CHECK(s.std == Approx(0.02).epsilon(0.03));
  s = stats("u");
  CHECK(s.min >= -0.5);
  CHECK(s.max < 0.25);
  CHECK(s.min < -0.49);
  CHECK(s.max > 0.24);
  CHECK(s.mean == Approx(-0.125).margin(0.006));
  CHECK(s.std == Approx(0.75 / std::sqrt(12.0)).epsilon(0.02));
  s = stats("n");
  CHECK(s.mean == Approx(1.0).margin(0.08));
  CHECK(s.std == Approx(3.0).epsilon(0.03));
  s = stats("xu");  // ±√(6/(300+100))
  CHECK(s.max <= 0.12248);
  CHECK(s.min >= -0.12248);
  CHECK(s.std == Approx(0.122474 / std::sqrt(3.0)).epsilon(0.03));
  s = stats("xn");  // 2·√(2/400)
  CHECK(s.std == Approx(0.141421).epsilon(0.03));
  s = stats("ku");  // fan-in 32·9: bound √3·√2/√288
  CHECK(s.max <= 0.144338);
  CHECK(s.min >= -0.144338);
  CHECK(s.std == Approx(0.0833333).epsilon(0.03));
  s = stats("kn");  // fan-out 64·9: std √2/√576
  CHECK(s.std == Approx(0.0589256).epsilon(0.03));
  CHECK(v.at("c").to_doubles() == std::vector<double>(12, 0.5));
  CHECK(v.at("z").to_doubles() == std::vector<double>(5, 0.0));
  CHECK(v.at("o").to_doubles() == std::vector<double>(5, 1.0));
  CHECK(v.at("h").type.dtype == ir::DType::BF16);  // cast to the declared dtype
  CHECK(v.at("h").to_doubles() == std::vector<double>(4, 0.30078125));
  CHECK(v.at("ramp").to_doubles() == std::vector<double>{0, 1, 2, 3, 4, 5});
  s = stats("fc.weight");  // PyTorch's linear: uniform(±1/√784)
  CHECK(s.max < 1 / 28.0);
  CHECK(s.min >= -1 / 28.0);
  CHECK(s.max > 0.99 / 28.0);
  CHECK(s.std == Approx(1 / 28.0 / std::sqrt(3.0)).epsilon(0.02));
  s = stats("fc.bias");
  CHECK(s.max < 1 / 28.0);
  CHECK(s.min >= -1 / 28.0);
  s = stats("emb.weight");  // normal(0, 1)
  CHECK(s.std == Approx(1.0).epsilon(0.03));
  CHECK(v.at("ln.weight").to_doubles() == std::vector<double>(6, 1.0));
  CHECK(v.at("ln.bias").to_doubles() == std::vector<double>(6, 0.0));
  s = stats("conv.weight");  // uniform(±1/√(8·3·3))
  CHECK(s.max <= 0.117852);
  CHECK(s.min >= -0.117852);
  CHECK(s.max > 0.1);

  // The run's seed keys the draws: the same seed, the same values.
  std::map<std::string, cpu::HostTensor> again = run_init(lab, 1), other = run_init(lab, 2);
  CHECK(again.at("fc.weight").to_doubles() == v.at("fc.weight").to_doubles());
  CHECK(other.at("fc.weight").to_doubles() != v.at("fc.weight").to_doubles());

  auto text = [&](const char* path) { return runfile::params_of(lab.in()).find(path)->init_text; };
  CHECK(text("plain") == "normal(std=0.02)");
  CHECK(text("u") == "uniform(-0.5, 0.25)");
  CHECK(text("n") == "normal(mean=1, std=3)");
  CHECK(text("xn") == "xavier-normal(gain=2)");
  CHECK(text("kn") == "kaiming-normal(a=0, fan-out)");
  CHECK(text("c") == "constant(0.5)");
  CHECK(text("z") == "zeros");
  CHECK(text("fc.weight") == "uniform(±0.0357)");
  CHECK(text("emb.weight") == "normal(std=1)");
  CHECK(text("ln.weight") == "ones");
  CHECK(text("conv.bias") == "uniform(±0.118)");
}

TEST_CASE("init: E-PARAM-INIT at the declaration, errors of init code there too", "[models][nn]") {
  {
    Lab lab;
    lab.eval("(defparam fine 3)\n(defparam bad '(2 3) :init (lambda (s) (zeros '(3 2))))");
    std::optional<Diagnostic> d = init_error(lab);
    REQUIRE(d);
    CHECK(d->code == "E-PARAM-INIT");
    CHECK(d->span.line == 2);
    CHECK(d->message.find("f32[3,2]") != std::string::npos);
    CHECK(lab.st().module().find("init") == nullptr);  // abandoned
  }
  {
    Lab lab;
    lab.eval("(defparam bad 3 :init (lambda (s) 0.5))");
    std::optional<Diagnostic> d = init_error(lab);
    REQUIRE(d);
    CHECK(d->code == "E-PARAM-INIT");
  }
  {
    Lab lab;
    lab.eval("(require \"sexpgpu/nn\")\n(defparam v 5 :init (nn:xavier-uniform))");
    std::optional<Diagnostic> d = init_error(lab);
    REQUIRE(d);
    CHECK(d->code == "E-SHAPE");  // a 1-D shape has no fans: raised inside nn
    CHECK(d->span.line == 2);
  }
}

TEST_CASE("GPT-2 small in examples/gpt2.lisp has 124,475,904 parameters", "[models][nn]") {
  Lab lab;
  const std::string path = std::string(SEXPGPU_SOURCE_DIR) + "/examples/gpt2.lisp";
  std::ifstream f(path);
  std::stringstream text;
  text << f.rdbuf();
  REQUIRE(!text.str().empty());
  lab.s.load_source(path, text.str());
  REQUIRE(lab.show("(fboundp 'gpt)") == "t");
  std::optional<Diagnostic> e =
      lab.trace("objective", "(lambda (idx) (gpt idx))", {i32({1, 1024})});
  INFO((e ? e->message : ""));
  REQUIRE_FALSE(e);
  int64_t count = 0, storage = 0;
  for (const runfile::ParamDecl& d : runfile::params_of(lab.in()).decls)
    if (d.tie.empty()) count += *d.type.shape.numel(), ++storage;
  CHECK(count == 124475904);
  CHECK(storage == 148);
  int64_t module_count = 0;
  for (const ir::ParamInfo& p : lab.st().module().params) module_count += *p.type.shape.numel();
  CHECK(module_count == 124475904);
  const ir::Function& fn = lab.fn("objective");
  CHECK(fn.type(fn.outputs[0].node).to_string() == "f32[1,1024,50304]");
  std::vector<std::string> nodes = param_nodes(fn);
  CHECK(nodes.size() == 148);  // (param "gpt.wte.weight") is the embedding's node
  CHECK(std::count(nodes.begin(), nodes.end(), "gpt.wte.weight") == 1);
  CHECK(runfile::params_of(lab.in()).find("gpt.h.11.attn.qkv.weight")->type.to_string() ==
        "f32[768,2304]");
  CHECK(runfile::params_of(lab.in()).find("gpt.h.0.mlp.proj.weight")->type.to_string() ==
        "f32[3072,768]");
}

TEST_CASE("nn layers compute what PyTorch computes", "[models][nn]") {
  Lab lab;
  lab.eval("(require \"sexpgpu/nn\")");
  SECTION("linear") {
    REQUIRE_FALSE(lab.trace("f", "(lambda (x) (nn:linear x 4 :name \"lin\"))", {f32({2, 3})}));
    check_close(run_numeric(lab, "f", {0}), {0.3195975, 0.08782308, -0.1558378, -0.3784068,
                                             0.7865292, 0.484713, 0.1172932, -0.2660018});
  }
  SECTION("layer-norm") {
    REQUIRE_FALSE(lab.trace("f", "(lambda (x) (nn:layer-norm x :name \"ln\"))", {f32({2, 5})}));
    check_close(run_numeric(lab, "f", {0}),
                {-0.2205682, 0.04797399, 0.3153933, 0.3806077, 0.1795516, 0.9665432, 0.7507986,
                 0.2771821, -0.2672039, -0.640212});
  }
  SECTION("rms-norm") {
    REQUIRE_FALSE(lab.trace("f", "(lambda (x) (nn:rms-norm x :name \"rms\"))", {f32({2, 6})}));
    check_close(run_numeric(lab, "f", {0}),
                {0, 0.2387726, 0.4478688, 0.5179181, 0.4122804, 0.1862107, 0.5957713, 0.456428,
                 0.1582271, -0.1428536, -0.28933, -0.2045858});
  }
  SECTION("conv2d") {
    REQUIRE_FALSE(lab.trace("f", "(lambda (x) (nn:conv2d x 3 3 :stride 2 :padding 1 :name \"c\"))",
                            {f32({1, 2, 5, 5})}));
    check_close(run_numeric(lab, "f", {0}),
                {-0.6937419, 0.5087265,  1.65681,    2.559354,   0.6594895,  -1.046835, -0.02904437,
                 1.731801,   2.286367,   -1.284048,  -0.6957835, 0.9188171,  2.988388,  1.590405,
                 -0.805917,  -0.6988765, 0.6249511,  1.761881,   -1.692448,  -1.80093,  0.05363152,
                 2.999833,   2.299893,   -0.4501817, -1.268911,  -0.5678564, 0.9919065});
  }
  SECTION("transformer-block, causal") {
    REQUIRE_FALSE(lab.trace("f", "(lambda (x) (nn:transformer-block x 2 :causal t :name \"blk\"))",
                            {f32({1, 4, 8})}));
    check_close(
        run_numeric(lab, "f", {0}),
        {-0.3479707, 0.3733527,   1.044145,   1.573616,   1.890107,   1.95078,    1.747424,
         1.307563,   -0.1250926,  -0.2177153, -0.2808713, -0.3060126, -0.2897366, -0.2342461,
         -0.1470514, -0.03995414, -0.6918524, 0.02482169, 0.7381363,  1.351548,   1.782033,
         1.971329,   1.893815,    1.559982,   0.1602258,  0.1022826,  0.03049599, -0.04541804,
         -0.115185,  -0.1693623,  -0.2006171, -0.2047193});
  }
  SECTION("cross-attention") {
    REQUIRE_FALSE(lab.trace("f", "(lambda (x kv) (nn:attention x 2 :kv kv :name \"xa\"))",
                            {f32({1, 3, 4}), f32({1, 5, 6})}));
    check_close(run_numeric(lab, "f", {0, 0.5}),
                {-0.01646988, 0.07446318, 0.155318, 0.2151513, -0.009290442, 0.07569396, 0.1504336,
                 0.2048127, -0.003264009, 0.07788246, 0.1484879, 0.1989963});
  }
}
