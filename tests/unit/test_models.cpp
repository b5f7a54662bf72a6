// The model layer (core/runfile/model.h): parameter paths and scopes,
// defparam's keys, ties, call sites per trace, probes, errors inside
// sexpgpu/nn at the user's call, and every nn layer's shapes and
// parameters. test_models_nn.cpp has init, GPT-2's count and the numbers.
#include "test_models_util.h"

using namespace sexpgpu;
using namespace models_test;
using lisp::Value;

TEST_CASE("paths: defmodel, scope segments and defparam names", "[models]") {
  Lab lab;
  lab.eval(R"(
    (defmodel net (x)
      "A docstring leads the body."
      (let ((w (defparam weight (list (dim x -1) 4))))
        (scope '("blocks" 3)
          (defparam "gain" 4)
          (scope "a.b" (scope nil (defparam b 4))))
        (matmul x w))))");
  CHECK(lab.show("(shape (net (zeros '(2 3))))") == "(2 4)");
  CHECK(decl_paths(lab.in()) ==
        std::vector<std::string>{"net.weight", "net.blocks.3.gain", "net.blocks.3.a.b.b"});
  CHECK(lab.show("(list (current-scope) (scope \"x\" (scope 2 (current-scope))))") ==
        "(\"\" \"x.2\")");
  CHECK(lab.show("(scope :outer (current-scope))") == "\"outer\"");
  CHECK(lab.error_of("(scope \"a..b\" 1)").code == "E-TYPE");
  CHECK(lab.error_of("(scope \"a*\" 1)").code == "E-TYPE");
  CHECK(lab.error_of("(scope -1 1)").code == "E-TYPE");
  CHECK(lab.error_of("(scope '((\"nested\")) 1)").code == "E-TYPE");
  // The scope is popped however the body is left.
  CHECK(lab.show("(progn (ignore-errors (scope \"gone\" (error \"out\"))) (current-scope))") ==
        "\"\"");
  const runfile::ParamDecl& gain = *runfile::params_of(lab.in()).find("net.blocks.3.gain");
  CHECK(gain.type.to_string() == "f32[4]");
  CHECK(gain.init_text == "normal(std=0.02)");
  CHECK(gain.trainable);
}

TEST_CASE("defparam keys: dtype, trainable, tags and what param-info shows", "[models]") {
  Lab lab;
  lab.eval(R"(
    (defparam scale '(2 3) :dtype :bf16 :trainable nil :tags (:no-decay :Muon)
      :init (lambda (s) (ones s))))");
  const runfile::ParamDecl& d = *runfile::params_of(lab.in()).find("scale");
  CHECK(d.type.to_string() == "bf16[2,3]");
  CHECK_FALSE(d.trainable);
  CHECK(d.tags == std::vector<std::string>{"no-decay", "muon"});
  CHECK(d.init_text == "(lambda (s) (ones s))");
  CHECK(lab.show("(param-info \"scale\")") ==
        "(:path \"scale\" :shape (2 3) :dtype :bf16 :init \"(lambda (s) (ones s))\" "
        ":tags (:no-decay :muon) :trainable nil :tie nil)");
  const ir::Module& m = lab.st().module();
  REQUIRE(m.params.size() == 1);
  CHECK(m.params[0].path == "scale");
  CHECK_FALSE(m.params[0].trainable);
  CHECK(lab.error_of("(defparam bad 3 :dtype :f99)").code == "E-DTYPE");
  CHECK(lab.error_of("(defparam bad '(2 -1))").code == "E-SHAPE");
  CHECK(lab.error_of("(defparam bad 3 :init 7)").code == "E-TYPE");
  CHECK(lab.error_of("(defparam bad 3 :colour :red)").code == "E-ARITY");
  CHECK(lab.error_of("(defparam bad 3 :tags (1))").code == "E-TYPE");
}

TEST_CASE("redeclaring a path: another type, or two call sites in one trace", "[models]") {
  Lab lab;
  lab.eval("(defparam w '(2 2))");
  lab.eval("(defparam w '(2 2))");  // the same type again: the same parameter
  Diagnostic d = lab.error_of("\n(defparam w '(3 2))");
  CHECK(d.code == "E-PARAM-REDECLARED");
  CHECK(d.span.line == 2);
  CHECK(d.message.find("f32[3,2]") != std::string::npos);
  CHECK(d.message.find("f32[2,2]") != std::string::npos);
  REQUIRE(d.notes.size() == 1);
  CHECK(d.notes[0].span.line == 1);
  CHECK(lab.error_of("(defparam w '(2 2) :dtype :f64)").code == "E-PARAM-REDECLARED");

  lab.eval(R"(
    (require "sexpgpu/nn")
    (defmodel two (x)
      (+ (nn:linear x 4 :name "fc")
         (nn:linear x 4 :name "fc")))
    (defmodel loopy (x)
      (dotimes (i 3) (setq x (nn:linear x 3 :name "fc")))
      x))");
  // Outside a contract function a model call is a trace of its own.
  d = lab.error_of("(two (zeros '(2 3)))");
  CHECK(d.code == "E-PARAM-REDECLARED");
  CHECK(d.span.line == 5);  // the second (nn:linear ...)
  CHECK(d.span.col == 10);
  REQUIRE(d.notes.size() == 1);
  CHECK(d.notes[0].span.line == 4);
  CHECK(d.notes[0].span.col == 10);
  CHECK(d.message.find("run.lisp:4:10") != std::string::npos);

  // The same call site again (a loop) is the same parameter: one Param node.
  REQUIRE_FALSE(lab.trace("loop", "(lambda (x) (loopy x))", {f32({2, 3})}));
  CHECK(param_nodes(lab.fn("loop")) ==
        std::vector<std::string>{"loopy.fc.weight", "loopy.fc.bias"});
  // Another trace (evaluate after objective) gets the same parameters.
  REQUIRE_FALSE(lab.trace("again", "(lambda (x) (loopy x))", {f32({5, 3})}));
  CHECK(param_nodes(lab.fn("again")) == param_nodes(lab.fn("loop")));
  std::optional<Diagnostic> e = lab.trace("twice", "(lambda (x) (two x))", {f32({2, 3})});
  REQUIRE(e);
  CHECK(e->code == "E-PARAM-REDECLARED");
  CHECK(lab.st().module().find("twice") == nullptr);  // abandoned
}

TEST_CASE("ties: one storage, one Param node; param follows ties", "[models]") {
  Lab lab;
  lab.eval(R"(
    (defmodel tied (x)
      (let* ((a (defparam a '(3 3) :init (lambda (s) (full s 0.25))))
             (b (defparam b '(3 3) :tie "tied.a"))
             (c (defparam c '(3 3) :tie "tied.b")))
        (+ (matmul x a) (matmul x b) (matmul x c) (matmul x (param "tied.b"))))))");
  REQUIRE_FALSE(lab.trace("f", "(lambda (x) (tied x))", {f32({2, 3})}));
  CHECK(param_nodes(lab.fn("f")) == std::vector<std::string>{"tied.a"});
  const runfile::Params& ps = runfile::params_of(lab.in());
  CHECK(ps.find("tied.b")->tie == "tied.a");
  CHECK(ps.find("tied.c")->tie == "tied.a");  // a tie of a tie: the storage
  CHECK(ps.storage("tied.c") == ps.find("tied.a"));
  CHECK(ps.storage("tied.a") == ps.find("tied.a"));
  CHECK(ps.storage("nope") == nullptr);
  REQUIRE(lab.st().module().params.size() == 1);
  CHECK(lab.st().module().params[0].path == "tied.a");
  // x · (4 a) with x = 1 and a = 0.25 everywhere: 3 per element.
  std::vector<double> y =
      lab.run("f", {cpu::HostTensor::from_doubles(f32({2, 3}), std::vector<double>(6, 1.0)),
                    cpu::HostTensor::from_doubles(f32({3, 3}), std::vector<double>(9, 0.25))})
          .at(0)
          .to_doubles();
  CHECK(y == std::vector<double>(6, 3.0));

  CHECK(lab.error_of("(defparam d '(3 3) :tie \"tied.zz\")").code == "E-PARAM-UNKNOWN");
  CHECK(lab.error_of("(defparam d '(3 4) :tie \"tied.a\")").code == "E-SHAPE");
  CHECK(lab.error_of("(defparam d '(3 3) :dtype :f64 :tie \"tied.a\")").code == "E-DTYPE");
  CHECK(lab.error_of("(defparam d '(3 3) :init #'zeros :tie \"tied.a\")").code == "E-TYPE");
  CHECK(lab.error_of("(defparam tied.a '(3 3) :tie \"tied.b\")").code == "E-PARAM-REDECLARED");
}

TEST_CASE("param: declared paths, and E-PARAM-UNKNOWN naming close ones", "[models]") {
  Lab lab;
  Diagnostic d = lab.error_of("(param \"gpt.wte.weight\")");
  CHECK(d.code == "E-PARAM-UNKNOWN");
  CHECK(d.fix.find("no parameter is declared yet") != std::string::npos);
  lab.eval("(scope \"gpt.wte\" (defparam weight '(10 4)))");
  CHECK(lab.show("(param \"gpt.wte.weight\")") == "#<tensor f32[10,4]>");
  d = lab.error_of("(param \"gpt.wte.weigth\")");
  CHECK(d.code == "E-PARAM-UNKNOWN");
  CHECK(d.message.find("'gpt.wte.weigth'") != std::string::npos);
  CHECK(d.fix.find("'gpt.wte.weight'") != std::string::npos);
  CHECK(lab.error_of("(param 'gpt)").code == "E-TYPE");
  CHECK(lab.show("(param-paths)") == "(\"gpt.wte.weight\")");
}

TEST_CASE("probes: scoped names, numbered repeats, the node, x unchanged", "[models]") {
  Lab lab;
  lab.eval(R"(
    (defmodel probed (x)
      (let ((h (probe "h" (relu x))))
        (dotimes (i 2) (probe "again" h))
        (scope "blk" (eq (probe :out h) h)))))");
  REQUIRE_FALSE(lab.trace("f", "(lambda (x) (probed x) x)", {f32({2})}));
  const std::vector<runfile::Probe>& ps = runfile::probes_of(lab.in());
  REQUIRE(ps.size() == 4);
  CHECK(ps[0].name == "probed.h");
  CHECK(ps[1].name == "probed.again");
  CHECK(ps[2].name == "probed.again#2");
  CHECK(ps[3].name == "probed.blk.out");
  const ir::Function& f = lab.fn("f");
  CHECK(f.node(ps[0].node).op == ir::Op::Relu);
  CHECK(ps[1].node == ps[0].node);
  CHECK(ps[0].span.line == 3);
  CHECK(lab.show("(probed (zeros 2))") == "t");  // probe returns x itself
  runfile::begin_trace(lab.in());
  CHECK(runfile::probes_of(lab.in()).empty());
  runfile::end_trace(lab.in());
  CHECK(lab.error_of("(probe \"p\" 3)").code == "E-TYPE");
}

TEST_CASE("errors inside sexpgpu/nn point at the user's call", "[models]") {
  Lab lab;
  lab.eval("(require \"sexpgpu/nn\")");
  Diagnostic d = lab.error_of("(list 1\n  (nn:conv2d (zeros '(1 3 2 2)) 4 5 :name \"c\"))");
  CHECK(d.code == "E-SHAPE");  // from the conv2d builtin, inside nn.lisp
  CHECK(lab.s.sources.file(d.span.file).path == kFile);
  CHECK(d.span.line == 2);
  CHECK(d.span.col == 3);
  d = lab.error_of("(nn:layer-norm (zeros '()))");
  CHECK(d.code == "E-SHAPE");  // raised by nn's own check
  CHECK(lab.s.sources.file(d.span.file).path == kFile);
  d = lab.error_of("(nn:attention (zeros '(2 5 8)) 3)");
  CHECK(d.code == "E-SHAPE");
  CHECK(d.message.find("not a multiple of 3 heads") != std::string::npos);
  CHECK(lab.error_of("(nn:mlp (zeros '(2 8)) 4 :activation :swish)").code == "E-TYPE");
  // A parameter's position is the user's call of the layer.
  lab.eval("(progn\n  (nn:linear (zeros '(2 3)) 4 :name \"lin\"))");
  const runfile::ParamDecl& w = *runfile::params_of(lab.in()).find("lin.weight");
  CHECK(lab.s.sources.file(w.span.file).path == kFile);
  CHECK(w.span.line == 2);
}

TEST_CASE("every nn layer's shapes and parameters", "[models][nn]") {
  Lab lab;
  lab.eval("(require \"sexpgpu/nn\")");
  auto shape = [&](const std::string& form) { return lab.show("(shape " + form + ")"); };
  auto params = [&](const std::string& prefix) {
    std::vector<std::string> out;
    for (const runfile::ParamDecl& d : runfile::params_of(lab.in()).decls)
      if (d.path.rfind(prefix, 0) == 0) out.push_back(d.path + " " + d.type.to_string());
    return out;
  };
  using V = std::vector<std::string>;
  CHECK(shape("(nn:linear (zeros '(2 5 3)) 4 :name \"lin\")") == "(2 5 4)");
  CHECK(params("lin.") == V{"lin.weight f32[3,4]", "lin.bias f32[4]"});
  CHECK(shape("(nn:linear (zeros 3) 4 :bias nil :name \"nobias\")") == "(4)");
  CHECK(params("nobias.") == V{"nobias.weight f32[3,4]"});
  CHECK(shape("(nn:embedding (zeros '(2 5) :dtype :i32) 100 8 :name \"emb\")") == "(2 5 8)");
  CHECK(params("emb.") == V{"emb.weight f32[100,8]"});
  CHECK(shape("(nn:positional 5 8 :max 10 :name \"pos\")") == "(5 8)");
  CHECK(shape("(nn:positional 7 8 :name \"pos2\")") == "(7 8)");
  CHECK(params("pos") == V{"pos.weight f32[10,8]", "pos2.weight f32[7,8]"});
  CHECK(lab.error_of("(nn:positional 11 8 :max 10 :name \"pos3\")").code == "E-SHAPE");
  CHECK(shape("(nn:layer-norm (zeros '(2 5 8)) :name \"ln\")") == "(2 5 8)");
  CHECK(params("ln.") == V{"ln.weight f32[8]", "ln.bias f32[8]"});
  CHECK(shape("(nn:layer-norm (zeros '(2 8)) :affine nil :name \"plain\")") == "(2 8)");
  CHECK(params("plain").empty());
  CHECK(shape("(nn:rms-norm (zeros '(2 5 8)) :name \"rms\")") == "(2 5 8)");
  CHECK(params("rms.") == V{"rms.weight f32[8]"});
  CHECK(shape("(nn:mlp (zeros '(2 5 8)) 32 :name \"mlp\")") == "(2 5 8)");
  CHECK(shape("(nn:mlp (zeros '(2 8)) 32 :out 3 :activation :silu :name \"mlp2\")") == "(2 3)");
  CHECK(params("mlp.") == V{"mlp.fc.weight f32[8,32]", "mlp.fc.bias f32[32]",
                            "mlp.proj.weight f32[32,8]", "mlp.proj.bias f32[8]"});
  CHECK(shape("(nn:causal-self-attention (zeros '(2 5 8)) 2 :name \"csa\")") == "(2 5 8)");
  CHECK(params("csa.") == V{"csa.qkv.weight f32[8,24]", "csa.qkv.bias f32[24]",
                            "csa.proj.weight f32[8,8]", "csa.proj.bias f32[8]"});
  CHECK(shape("(nn:attention (zeros '(2 5 8)) 4 :kv (zeros '(2 7 6)) :name \"xa\")") == "(2 5 8)");
  CHECK(params("xa.") == V{"xa.q.weight f32[8,8]", "xa.q.bias f32[8]", "xa.kv.weight f32[6,16]",
                           "xa.kv.bias f32[16]", "xa.proj.weight f32[8,8]", "xa.proj.bias f32[8]"});
  CHECK(shape("(nn:transformer-block (zeros '(2 5 8)) 2 :causal t :mlp-ratio 2 :dropout 0.1 "
              ":name '(\"blocks\" 0))") == "(2 5 8)");
  CHECK(params("blocks.0.") ==
        V{"blocks.0.ln1.weight f32[8]", "blocks.0.ln1.bias f32[8]",
          "blocks.0.attn.qkv.weight f32[8,24]", "blocks.0.attn.qkv.bias f32[24]",
          "blocks.0.attn.proj.weight f32[8,8]", "blocks.0.attn.proj.bias f32[8]",
          "blocks.0.ln2.weight f32[8]", "blocks.0.ln2.bias f32[8]",
          "blocks.0.mlp.fc.weight f32[8,16]", "blocks.0.mlp.fc.bias f32[16]",
          "blocks.0.mlp.proj.weight f32[16,8]", "blocks.0.mlp.proj.bias f32[8]"});
  CHECK(shape("(nn:conv2d (zeros '(2 3 8 8)) 4 3 :padding 1 :name \"conv\")") == "(2 4 8 8)");
  CHECK(shape("(nn:conv2d (zeros '(2 3 8 8)) 4 '(3 1) :stride 2 :bias nil :name \"c2\")") ==
        "(2 4 3 4)");
  CHECK(params("conv.") == V{"conv.weight f32[4,3,3,3]", "conv.bias f32[4]"});
  CHECK(params("c2.") == V{"c2.weight f32[4,3,3,1]"});
  CHECK(lab.show("(nn:dropout (zeros 4) 0.5)") == "#<tensor f32[4]>");
  CHECK(lab.show("(let ((x (zeros 4))) (eq x (nn:dropout x nil)))") == "t");
  for (const char* act : {":relu", ":gelu", ":gelu-tanh", ":silu", ":tanh", "#'exp"})
    CHECK(shape(std::string("(nn:activate (zeros 3) ") + act + ")") == "(3)");
  CHECK(lab.show("(multiple-value-list (nn:fans '(64 32 3 3)))") == "(288 576)");
  CHECK(lab.show("(multiple-value-list (nn:fans '(784 256)))") == "(784 256)");
  CHECK(lab.error_of("(nn:fans '(5))").code == "E-SHAPE");
}

TEST_CASE("gelu :approximate :tanh stages the op gelu_tanh (IR version 2)", "[models][stage]") {
  Lab lab;
  auto op_of = [&](const std::string& name, const std::string& body) {
    REQUIRE_FALSE(lab.trace(name, "(lambda (x) " + body + ")", {f32({4})}));
    const ir::Function& f = lab.fn(name);
    return std::string(ir::info(f.node(f.outputs[0].node).op).ir_name);
  };
  CHECK(op_of("exact", "(gelu x)") == "gelu");
  CHECK(op_of("none", "(gelu x :approximate :none)") == "gelu");
  CHECK(op_of("tanh", "(gelu x :approximate :tanh)") == "gelu_tanh");
  CHECK(lab.error_of("(gelu (zeros 4) :approximate :fast)").code == "E-TYPE");
}

TEST_CASE("dropout in nn layers is the identity when not training", "[models][nn]") {
  Lab lab;
  lab.eval("(require \"sexpgpu/nn\")");
  lab.st().training = false;
  REQUIRE_FALSE(lab.trace("eval", "(lambda (x) (nn:dropout x 0.5))", {f32({4})}));
  const ir::Function& f = lab.fn("eval");
  CHECK(f.outputs[0].node == f.inputs[0]);
  lab.st().training = true;
  REQUIRE_FALSE(lab.trace("train", "(lambda (x) (nn:dropout x 0.5))", {f32({4})}));
  bool draws = false;
  for (const ir::Node& n : lab.fn("train").nodes) draws |= n.op == ir::Op::RandomBernoulli;
  CHECK(draws);
}
