// Conformance cases of the shape ops (reshape .. flip and stop_gradient's
// copy, with integer ids in range for take and index_add) and the neural
// ops (softmax, cross_entropy and its gradient, the norms and layer_norm's
// gradients, attention and its gradient, conv2d and the pools, with their
// gradient helpers).
#include <algorithm>

#include "case_builder.h"

namespace conformance {

namespace {

Attrs axis_attr(int64_t axis) {
  Attrs a;
  a.axis = axis;
  return a;
}

// `n` ids in [0, bound), of an integer dtype.
NodeId ids(CaseBuilder& c, DType d, const Shape& shape, int64_t bound) {
  Values v(static_cast<size_t>(*shape.numel()));
  for (double& x : v) x = double(c.integer(0, bound - 1));
  return c.input(d, shape, v);
}

Case shape_op(std::string label, Op op, Shape in, Attrs attrs) {
  return {label, op, 1, [=](CaseBuilder& c) { return c.op(op, {c.input(in)}, attrs); }};
}

Case slice(Shape in, Dims starts, Dims ends, Dims steps) {
  Attrs a;
  a.starts = starts, a.ends = ends, a.steps = steps;
  return shape_op("", Op::Slice, in, a);
}

Case take(Shape table, DType id_dtype, Shape id_shape, int64_t axis) {
  return {"ids " + std::string(ir::ir_name(id_dtype)), Op::Take, 1, [=](CaseBuilder& c) {
            NodeId x = c.input(table);
            return c.op(Op::Take, {x, ids(c, id_dtype, id_shape, table[axis])}, axis_attr(axis));
          }};
}

Case index_add(Shape g, DType id_dtype, Shape x, int64_t axis) {
  return {"ids " + std::string(ir::ir_name(id_dtype)), Op::IndexAdd, double(g[axis]),
          [=](CaseBuilder& c) {
            NodeId gn = c.input(g);
            Attrs a = axis_attr(axis);
            a.shape = Dims(x.begin(), x.end());
            return c.op(Op::IndexAdd, {gn, ids(c, id_dtype, {g[axis]}, x[axis])}, a);
          }};
}

}  // namespace

std::vector<Case> shape_cases(Op op) {
  Attrs a;
  switch (op) {
    case Op::Reshape: a.shape = dims({4, 6}); return {shape_op("", op, {2, 3, 4}, a)};
    case Op::Permute: a.axes = dims({2, 0, 1}); return {shape_op("", op, {2, 3, 4}, a)};
    case Op::Expand:
      a.shape = dims({2, 3, 4});
      return {shape_op("", op, {3, 1}, a), shape_op("", op, {}, a)};
    case Op::Concat:
      return {{"axis 1", op, 1,
               [](CaseBuilder& c) {
                 NodeId x = c.input({2, 1}), y = c.input({2, 3}), z = c.input({2, 2});
                 return c.op(Op::Concat, {x, y, z}, axis_attr(1));
               }},
              {"one operand", op, 1, [](CaseBuilder& c) {
                 return c.op(Op::Concat, {c.input({2, 3})}, axis_attr(0));
               }}};
    case Op::Slice:
      return {slice({5, 7}, dims({1, 0}), dims({5, 7}), dims({2, 3})),
              slice({4, 7}, dims({0, 2}), dims({3, 6}), dims({1, 4}))};
    case Op::Take:
      return {take({5, 3}, DType::I32, {2, 3}, 0), take({3, 5}, DType::I64, {4}, 1),
              take({5, 3}, DType::U8, {}, 0)};
    case Op::IndexAdd:
      return {index_add({4, 3}, DType::I32, {5, 3}, 0), index_add({2, 4}, DType::I64, {2, 3}, 1)};
    case Op::Pad:
      a.pads = dims({1, 0, 2, 1});
      a.value = 1;
      return {shape_op("", op, {2, 3}, a)};
    case Op::Flip: a.axes = dims({0, 2}); return {shape_op("", op, {2, 3, 4}, a)};
    case Op::StopGradient:
      return {shape_op("", op, {3, 4}, a), shape_op("large", op, {67, 129}, a)};
    default: return {};
  }
}

namespace {

Case cross_entropy(std::string label, Shape logits, DType target_dtype, std::string reduction,
                   std::optional<int64_t> ignore = {}) {
  double terms = double(*logits.numel());
  return {label, Op::CrossEntropy, terms, [=](CaseBuilder& c) {
            Attrs a;
            a.reduction = reduction;
            a.ignore_index = ignore;
            int64_t classes = logits[logits.rank() - 1];
            Shape rows(Dims(logits.begin(), logits.end() - 1));
            Values t(static_cast<size_t>(*rows.numel()));
            for (double& x : t) x = double(c.integer(0, classes - 1));
            if (ignore) t[1] = double(*ignore);  // at least one ignored row
            NodeId z = c.input(logits);
            return c.op(Op::CrossEntropy, {z, c.input(target_dtype, rows, t)}, a);
          }};
}

// cross_entropy_grad of logits [rows..., C] with i64 targets, g drawn of the
// loss's shape; with has_ignore, ignore_index is -1 and the rows in
// `ignored` have that target (all of them: none counts, the mean divides by
// 1, and every output is 0).
Case cross_entropy_grad(std::string label, Shape logits, std::string reduction,
                        std::vector<size_t> ignored = {}, bool has_ignore = false) {
  return {label, Op::CrossEntropyGrad, double(logits[logits.rank() - 1]), [=](CaseBuilder& c) {
            Attrs a;
            a.reduction = reduction;
            if (has_ignore) a.ignore_index = -1;
            int64_t classes = logits[logits.rank() - 1];
            Shape rows(Dims(logits.begin(), logits.end() - 1));
            Values t(static_cast<size_t>(*rows.numel()));
            for (double& x : t) x = double(c.integer(0, classes - 1));
            for (size_t row : ignored) t[row] = -1;
            NodeId z = c.input(logits);
            NodeId g = c.input(reduction == "none" ? rows : Shape{}, Draw::NonZero);
            return c.op(Op::CrossEntropyGrad, {z, c.input(DType::I64, rows, t), g}, a);
          }};
}

// linear_cross_entropy of x [rows..., C] and w [C, V] with i64 targets and
// g drawn (f32, f64 for f64 operands); with has_ignore, ignore_index is -1
// and the rows in `ignored` have that target. Each output sums C or V
// products and a row of V exponentials.
Case linear_cross_entropy(std::string label, Shape x, int64_t classes,
                          std::vector<size_t> ignored = {}, bool has_ignore = false) {
  int64_t C = x[x.rank() - 1];
  return {label, Op::LinearCrossEntropy, double(C + classes), [=](CaseBuilder& c) {
            Attrs a;
            if (has_ignore) a.ignore_index = -1;
            Shape rows(Dims(x.begin(), x.end() - 1));
            Values t(static_cast<size_t>(*rows.numel()));
            for (double& v : t) v = double(c.integer(0, classes - 1));
            for (size_t row : ignored) t[row] = -1;
            DType gd = c.dt() == DType::F64 ? DType::F64 : DType::F32;
            NodeId g = c.input(gd, Shape{}, Draw::NonZero);
            return c.op(Op::LinearCrossEntropy,
                        {c.input(x), c.input({C, classes}), c.input(DType::I64, rows, t), g}, a);
          }};
}

// layer_norm_grad of x with a positive weight and g drawn, eps 1e-5; each
// output sums the row's terms (its two means).
Case layer_norm_grad(std::string label, Shape x) {
  int64_t dim = x[x.rank() - 1];
  return {label, Op::LayerNormGrad, double(dim), [=](CaseBuilder& c) {
            NodeId xs = c.input(x), w = c.input({dim}, Draw::Positive);
            Attrs a;
            a.eps = 1e-5;
            return c.op(Op::LayerNormGrad, {xs, w, c.input(x, Draw::Unit)}, a);
          }};
}

// layer_norm_param_grad of x and g drawn, eps 1e-5; each output sums one
// term a row, each term with the statistics of its row's dim elements.
Case layer_norm_param_grad(std::string label, Shape x) {
  int64_t dim = x[x.rank() - 1], rows = dim == 0 ? 0 : *x.numel() / dim;
  return {label, Op::LayerNormParamGrad, double(rows + dim), [=](CaseBuilder& c) {
            Attrs a;
            a.eps = 1e-5;
            return c.op(Op::LayerNormParamGrad, {c.input(x), c.input(x, Draw::Unit)}, a);
          }};
}

// attention of [1,2,tq,4] queries over [1,2,tk,4] keys and values; mask 0:
// none, 1: a float mask added, 2: a boolean mask [tq,tk].
Case attention(std::string label, int64_t tq, int64_t tk, bool causal, int mask) {
  return {label, Op::Attention, double(tk * 4), [=](CaseBuilder& c) {
            Attrs a;
            a.scale = 0.5;
            a.causal = causal;
            NodeId q = c.input({1, 2, tq, 4}, Draw::Unit), k = c.input({1, 2, tk, 4}, Draw::Unit);
            NodeId v = c.input({1, 2, tk, 4}, Draw::Unit);
            if (mask == 0) return c.op(Op::Attention, {q, k, v}, a);
            if (mask == 1) return c.op(Op::Attention, {q, k, v, c.input({1, 1, tq, tk})}, a);
            Values keep(static_cast<size_t>(tq * tk));  // every query keeps key 0
            for (size_t i = 0; i < keep.size(); ++i) keep[i] = i % size_t(tk) == 0 || i % 3 != 1;
            return c.op(Op::Attention, {q, k, v, c.input(DType::Bool, {tq, tk}, keep)}, a);
          }};
}

// attention_grad of [1,2,tq,4] queries over [1,2,tk,4] keys and values, o
// the attention's own result (as the gradient rule gives it) and g drawn;
// mask 0: none, 2: a boolean mask [tq,tk] under which query 1 sees no key.
Case attention_grad(std::string label, int64_t tq, int64_t tk, bool causal, int mask) {
  return {label, Op::AttentionGrad, double(std::max(tq, tk) * 4), [=](CaseBuilder& c) {
            Attrs a;
            a.scale = 0.5;
            a.causal = causal;
            NodeId q = c.input({1, 2, tq, 4}, Draw::Unit), k = c.input({1, 2, tk, 4}, Draw::Unit);
            NodeId v = c.input({1, 2, tk, 4}, Draw::Unit), g = c.input({1, 2, tq, 4}, Draw::Unit);
            if (mask == 0) {
              NodeId o = c.op(Op::Attention, {q, k, v}, a);
              return c.op(Op::AttentionGrad, {q, k, v, o, g}, a);
            }
            Values keep(static_cast<size_t>(tq * tk));
            for (size_t i = 0; i < keep.size(); ++i)
              keep[i] = i / size_t(tk) != 1 && (i % size_t(tk) == 0 || i % 3 != 1);
            NodeId m = c.input(DType::Bool, {tq, tk}, keep);
            NodeId o = c.op(Op::Attention, {q, k, v, m}, a);
            return c.op(Op::AttentionGrad, {q, k, v, o, g, m}, a);
          }};
}

Attrs window(Dims stride, Dims padding, Dims dilation, int64_t groups, Dims shape = {}) {
  Attrs a;
  a.stride = stride, a.padding = padding, a.dilation = dilation, a.groups = groups;
  if (!shape.empty()) a.shape = shape;
  return a;
}

Attrs pool(Dims kernel, Dims stride, Dims padding, Dims shape = {}) {
  Attrs a;
  a.kernel = kernel, a.stride = stride, a.padding = padding;
  if (!shape.empty()) a.shape = shape;
  return a;
}

Case two_operands(std::string label, Op op, double terms, Shape a, Shape b, Attrs attrs,
                  Draw draw_a = Draw::Unit) {
  return {label, op, terms, [=](CaseBuilder& c) {
            NodeId x = c.input(a, draw_a);
            return c.op(op, {x, c.input(b, Draw::Unit)}, attrs);
          }};
}

}  // namespace

std::vector<Case> neural_cases(Op op) {
  switch (op) {
    case Op::Softmax:
    case Op::LogSoftmax:
      return {shape_op("axis 1", op, {3, 5}, axis_attr(1)),
              shape_op("axis 0", op, {3, 5}, axis_attr(0)),
              shape_op("large", op, {37, 300}, axis_attr(1))};
    case Op::CrossEntropy:
      return {cross_entropy("mean", {4, 5}, DType::I32, "mean"),
              cross_entropy("sum", {4, 5}, DType::I64, "sum"),
              cross_entropy("none", {4, 5}, DType::I32, "none"),
              cross_entropy("mean, ignore -1", {4, 5}, DType::I32, "mean", -1),
              cross_entropy("3-D, ignore 2", {2, 3, 4}, DType::I64, "mean", 2)};
    case Op::CrossEntropyGrad:
      return {
          cross_entropy_grad("mean", {4, 5}, "mean"),
          cross_entropy_grad("sum", {2, 3, 5}, "sum"),
          cross_entropy_grad("none", {4, 5}, "none"),
          cross_entropy_grad("mean, rows 1 and 2 ignored", {4, 5}, "mean", {1, 2}, true),
          cross_entropy_grad("sum, row 0 ignored", {3, 5}, "sum", {0}, true),
          cross_entropy_grad("none, row 3 ignored", {4, 5}, "none", {3}, true),
          cross_entropy_grad("mean, ignore_index but none ignored", {3, 5}, "mean", {}, true),
          cross_entropy_grad("mean, every row ignored", {3, 5}, "mean", {0, 1, 2}, true),
          cross_entropy_grad("mean, 300 classes", {6, 300}, "mean", {4}, true),
          cross_entropy_grad("none, 1500 classes: more than a warp", {3, 1500}, "none", {1}, true)};
    case Op::LinearCrossEntropy:
      return {linear_cross_entropy("2-D", {6, 4}, 7),
              linear_cross_entropy("3-D, rows 1 and 4 ignored", {2, 3, 5}, 9, {1, 4}, true),
              linear_cross_entropy("300 classes", {5, 8}, 300),
              // Four blocks of 64 rows, the last of 8, on CUDA with
              // SEXPGPU_CUDA_CLASSIFIER_BLOCK_BYTES=4096 (bench/device-run.sh test).
              linear_cross_entropy("200 rows, 300 classes", {200, 8}, 300, {3, 130}, true)};
    case Op::LayerNorm:
      return {{"", op, 5, [](CaseBuilder& c) {
                 NodeId x = c.input({3, 5}), w = c.input({5}, Draw::Positive);
                 Attrs a;
                 a.eps = 1e-5;
                 return c.op(Op::LayerNorm, {x, w, c.input({5})}, a);
               }}};
    case Op::LayerNormGrad:
      return {layer_norm_grad("", {3, 5}), layer_norm_grad("3-D", {2, 3, 4}),
              layer_norm_grad("rows of 768, as GPT-2's", {3, 768}),
              layer_norm_grad("rows of 9000: a block per row", {2, 9000})};
    case Op::LayerNormParamGrad:
      return {layer_norm_param_grad("", {3, 5}),
              layer_norm_param_grad("3-D", {2, 3, 4}),
              layer_norm_param_grad("no rows: zeros", {0, 6}),
              layer_norm_param_grad("rows of 768, as GPT-2's", {64, 768}),
              layer_norm_param_grad("more rows than a GPU's warps", {2300, 33}),
              layer_norm_param_grad("rows of 1024: 32 a lane in f32", {5, 1024}),
              layer_norm_param_grad("rows of 1100: two passes", {4, 1100}),
              layer_norm_param_grad("two passes, 100 row splits", {300, 1100}),
              layer_norm_param_grad("rows of 9000", {3, 9000})};
    case Op::RmsNorm:
      return {{"", op, 4, [](CaseBuilder& c) {
                 NodeId x = c.input({2, 3, 4}), w = c.input({4}, Draw::Positive);
                 Attrs a;
                 a.eps = 1e-6;
                 return c.op(Op::RmsNorm, {x, w}, a);
               }}};
    case Op::Attention:
      return {attention("plain", 3, 3, false, 0), attention("causal, Tq < Tk", 3, 5, true, 0),
              attention("float mask", 3, 4, false, 1),
              attention("bool mask, causal", 3, 3, true, 2)};
    case Op::AttentionGrad:
      return {attention_grad("plain", 3, 3, false, 0),
              attention_grad("causal, Tq < Tk", 3, 5, true, 0),
              attention_grad("causal, Tq > Tk: queries 0, 1 see no key", 5, 3, true, 0),
              attention_grad("bool mask, Tq < Tk", 4, 6, false, 2),
              attention_grad("bool mask, causal", 3, 3, true, 2)};
    case Op::Conv2d:
      return {two_operands("groups 2, stride, dilation", op, 18, {1, 4, 6, 7}, {6, 2, 3, 3},
                           window(dims({2, 1}), dims({1, 0}), dims({1, 2}), 2)),
              two_operands("padded", op, 18, {2, 2, 4, 4}, {3, 2, 3, 3},
                           window(dims({1, 1}), dims({1, 1}), dims({1, 1}), 1))};
    case Op::Conv2dGradInput:
      return {
          two_operands("", op, 18, {1, 2, 3, 3}, {2, 2, 3, 3},
                       window(dims({2, 2}), dims({1, 1}), dims({1, 1}), 1, dims({1, 2, 6, 5})))};
    case Op::Conv2dGradWeight:
      return {
          two_operands("", op, 9, {1, 2, 5, 5}, {1, 2, 3, 3},
                       window(dims({2, 2}), dims({1, 1}), dims({1, 1}), 1, dims({2, 2, 3, 3})))};
    case Op::MaxPool2d:
      return {{"padded", op, 1,
               [](CaseBuilder& c) {
                 NodeId x = c.input({1, 2, 5, 5}, Draw::Grid);
                 return c.op(Op::MaxPool2d, {x}, pool(dims({2, 2}), dims({2, 2}), dims({1, 1})));
               }},
              shape_op("overlapping", op, {1, 2, 4, 5},
                       pool(dims({3, 2}), dims({1, 1}), dims({0, 0})))};
    case Op::AvgPool2d:
      return {shape_op("padded", op, {1, 2, 5, 5}, pool(dims({3, 3}), dims({2, 2}), dims({1, 1})))};
    case Op::MaxPool2dGrad:
      return {two_operands("ties", op, 4, {1, 2, 5, 5}, {1, 2, 3, 3},
                           pool(dims({3, 3}), dims({2, 2}), dims({1, 1}), dims({1, 2, 5, 5})),
                           Draw::Grid)};
    case Op::AvgPool2dGrad:
      return {shape_op("", op, {1, 2, 3, 3},
                       pool(dims({3, 3}), dims({2, 2}), dims({1, 1}), dims({1, 2, 5, 5})))};
    default: return {};
  }
}

}  // namespace conformance
