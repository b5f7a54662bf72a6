#!/usr/bin/env python3
"""Prints numpy_expected.inc: ops of ops.def on fixed operands, with the
results NumPy and PyTorch compute in f64 (tensors.md's definitions), for the
conformance suite's independent check of the CPU device. The suite itself
does not need Python: run this after changing a case and paste its output.

    /usr/bin/python3 tests/conformance/numpy_reference.py > tests/conformance/numpy_expected.inc
"""
import math

import numpy as np
import torch
import torch.nn.functional as F

DT = {np.float64: "F64", np.float32: "F32", np.int32: "I32", np.int64: "I64",
      np.uint8: "U8", np.bool_: "Bool"}
entries = []


def num(v):
    v = float(v)
    if math.isnan(v):
        return "NAN"
    if math.isinf(v):
        return "INFINITY" if v > 0 else "-INFINITY"
    return repr(v)


def dims(shape):
    return "dims({" + ", ".join(str(d) for d in shape) + "})"


def tensor(a):
    a = np.asarray(a)
    vals = ", ".join(num(v) for v in a.reshape(-1))
    return "T{%s, %s, {%s}}" % (DT[a.dtype.type], dims(a.shape), vals)


def case(label, op, attrs, inputs, expected):
    e = np.asarray(expected)
    entries.append('{"%s", Op::%s, A()%s,\n {%s},\n %s,\n {%s}},' % (
        label, op, attrs, ", ".join(tensor(x) for x in inputs), dims(e.shape),
        ", ".join(num(v) for v in e.reshape(-1))))


def f64(*shape, seed):
    return np.random.default_rng(seed).uniform(-2, 2, size=shape)


def t(a):
    return torch.from_numpy(np.asarray(a))


# Elementwise: the points the definitions single out.
x = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.49999999999999994, 3.7])
case("round half to even", "Round", "", [x], np.round(x))
case("floor", "Floor", "", [x], np.floor(x))
x = np.array([-3.0, -0.0, 0.0, 2.5])
case("sign", "Sign", "", [x], np.sign(x))
a = np.array([5.5, -5.5, 5.5, -5.5, 7.0, -7.25])
b = np.array([2.0, 2.0, -2.0, -2.0, 3.5, 0.5])
case("mod floored f64", "Mod", "", [a, b], np.mod(a, b))
a = np.array([7, -7, 7, -7, 0], dtype=np.int32)
b = np.array([3, 3, -3, -3, 5], dtype=np.int32)
case("mod floored i32", "Mod", "", [a, b], np.mod(a, b))
case("div i32 gives floats", "Div", "", [a, b], a / b)
a = np.array([2, 3, -2, 0, 5], dtype=np.int32)
b = np.array([10, 3, 3, 0, 1], dtype=np.int32)
case("pow i32 exact", "Pow", "", [a, b], np.power(a, b))
a = np.array([250, 10, 128], dtype=np.uint8)
b = np.array([10, 250, 128], dtype=np.uint8)
case("add u8 wraps", "Add", "", [a, b], a + b)
x = np.linspace(-4, 4, 9)
case("gelu erf", "Gelu", "", [x], F.gelu(t(x)).numpy())
case("gelu tanh", "GeluTanh", "", [x], F.gelu(t(x), approximate="tanh").numpy())
case("silu", "Silu", "", [x], F.silu(t(x)).numpy())
case("sigmoid", "Sigmoid", "", [x], torch.sigmoid(t(x)).numpy())
x = np.array([-800.0, -30.0, -1.0, 0.0, 1.0, 30.0, 800.0])
case("softplus stable", "Softplus", "", [x], np.logaddexp(0.0, x))
x = np.array([1e-10, -1e-10, 0.5, -0.5])
case("log1p small", "Log1p", "", [x], np.log1p(x))
case("expm1 small", "Expm1", "", [x], np.expm1(x))
a = np.array([1.0, 1.0, -1.0, -1.0, 0.0])
b = np.array([1.0, -1.0, 1.0, -1.0, -2.0])
case("atan2 quadrants", "Atan2", "", [a, b], np.arctan2(a, b))
x = np.array([1.0, np.inf, -np.inf, np.nan, -0.0])
case("isfinite", "IsFinite", "", [x], np.isfinite(x))
x = np.array([-2.7, -0.5, 0.5, 2.7, 1e9 + 0.5])
case("cast f64 to i64 truncates", "Cast", ".dtype(DType::I64)", [x], np.trunc(x).astype(np.int64))
x = np.array([0.0, -0.0, 0.1, np.nan, np.inf])
case("cast f64 to bool", "Cast", ".dtype(Bool)", [x], x != 0)
x = np.array([-1, 256, 300, 255], dtype=np.int32)
case("cast i32 to u8 wraps", "Cast", ".dtype(U8)", [x], x.astype(np.uint8))
x = f64(3, 4, seed=1)
lo = np.array([-1.0, -0.5, 0.0, -2.0])
hi = np.array(0.75)
case("clamp broadcast", "Clamp", "", [x, lo, hi], np.minimum(np.maximum(x, lo), hi))
c = np.array([[True], [False], [True]])
y = f64(4, seed=2)
case("where broadcast", "Where", "", [c, x, y], np.where(c, x, y))

# Reductions.
x = f64(2, 3, 4, seed=3)
case("var axis 1", "Var", ".axes(dims({1}))", [x], np.var(x, axis=1, ddof=1))
case("var all correction 0", "Var", ".correction(0)", [x], np.var(x))
case("std axis 2 keepdims", "Std", ".axes(dims({2})).keepdims(true)", [x],
     np.std(x, axis=2, ddof=1, keepdims=True))
case("logsumexp axes 0 2", "LogSumExp", ".axes(dims({0, 2}))", [x],
     torch.logsumexp(t(x), dim=(0, 2)).numpy())
case("norm axis 1", "Norm", ".axes(dims({1}))", [x], np.linalg.norm(x, axis=1))
case("prod axis 2", "Prod", ".axes(dims({2}))", [x], np.prod(x, axis=2))
case("mean all", "Mean", "", [x], np.mean(x))
case("max axes 0 1", "Max", ".axes(dims({0, 1}))", [x], np.max(x, axis=(0, 1)))
g = np.array([[1, 3, 3, 0], [2, 2, 1, 2], [0, 0, 0, 0]], dtype=np.int32)
case("argmax first of ties", "ArgMax", ".axes(dims({1}))", [g], np.argmax(g, axis=1).astype(np.int32))
case("argmin flattened", "ArgMin", "", [g], np.argmin(g).astype(np.int32))
bits = np.array([[True, False, True], [True, True, True]])
case("sum of bool counts", "Sum", ".axes(dims({1}))", [bits], bits.sum(axis=1).astype(np.int32))
a, b = f64(2, 1, 2, 3, seed=4), f64(3, 3, 2, seed=5)
case("matmul batch broadcast", "MatMul", "", [a, b], np.matmul(a, b))
a, b = f64(3, seed=6), f64(2, 3, 4, seed=7)
case("matmul vector by batch", "MatMul", "", [a, b], np.matmul(a, b))

# Shape ops.
x = f64(3, 5, seed=8)
ids = np.array([[4, 0], [1, 1]], dtype=np.int32)
case("take axis 1", "Take", ".axis(1)", [x, ids], np.take(x, ids, axis=1))
gr = f64(4, 3, seed=9)
ids = np.array([1, 3, 1, 0], dtype=np.int64)
out = np.zeros((5, 3))
np.add.at(out, ids, gr)
case("index_add repeated ids", "IndexAdd", ".axis(0).shape(dims({5, 3}))", [gr, ids], out)
x = f64(2, 3, seed=10)
case("pad", "Pad", ".pads(dims({1, 0, 2, 1})).value(0.5)", [x],
     np.pad(x, ((1, 0), (2, 1)), constant_values=0.5))
x = f64(5, 7, seed=11)
case("slice steps", "Slice", ".slice(dims({1, 0}), dims({5, 7}), dims({2, 3}))", [x], x[1:5:2, 0:7:3])
x = f64(2, 3, 4, seed=12)
case("permute", "Permute", ".axes(dims({2, 0, 1}))", [x], np.transpose(x, (2, 0, 1)))
case("flip", "Flip", ".axes(dims({0, 2}))", [x], np.flip(x, axis=(0, 2)))
case("arange", "Arange", ".shape(dims({5})).start(0.5).step(-0.25).dtype(F64)", [],
     0.5 + np.arange(5) * -0.25)

# Neural.
x = f64(3, 5, seed=13)
case("softmax axis 0", "Softmax", ".axis(0)", [x], torch.softmax(t(x), 0).numpy())
case("log_softmax axis 1", "LogSoftmax", ".axis(1)", [x], torch.log_softmax(t(x), 1).numpy())
z = f64(4, 5, seed=14)
tg = np.array([1, -1, 4, 1], dtype=np.int32)
case("cross_entropy mean ignore -1", "CrossEntropy", '.reduction("mean").ignore_index(-1)',
     [z, tg], F.cross_entropy(t(z), t(tg).long(), ignore_index=-1).numpy())
tg = np.array([3, 0, 2, 2], dtype=np.int64)
case("cross_entropy none", "CrossEntropy", '.reduction("none")', [z, tg],
     F.cross_entropy(t(z), t(tg), reduction="none").numpy())
z3 = f64(2, 3, 4, seed=15)
tg = np.array([[2, 0, 1], [3, 2, 1]], dtype=np.int64)
case("cross_entropy 3-D sum ignore 2", "CrossEntropy", '.reduction("sum").ignore_index(2)',
     [z3, tg], F.cross_entropy(t(z3).permute(0, 2, 1), t(tg), ignore_index=2,
                               reduction="sum").numpy())
x, w, b = f64(3, 5, seed=16), f64(5, seed=17), f64(5, seed=18)
case("layer_norm", "LayerNorm", ".eps(1e-5)", [x, w, b],
     F.layer_norm(t(x), (5,), t(w), t(b), eps=1e-5).numpy())
x, w = f64(2, 3, 4, seed=19), f64(4, seed=20)
case("rms_norm", "RmsNorm", ".eps(1e-6)", [x, w],
     x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + 1e-6) * w)


def attention(q, k, v, scale, causal, mask=None):
    s = np.matmul(q, np.swapaxes(k, -1, -2)) * scale
    tq, tk = q.shape[-2], k.shape[-2]
    if mask is not None:
        s = np.where(mask, s, -np.inf) if mask.dtype == np.bool_ else s + mask
    if causal:  # query i sees keys j <= i + tk - tq
        keep = np.arange(tk)[None, :] <= np.arange(tq)[:, None] + tk - tq
        s = np.where(keep, s, -np.inf)
    s = s - s.max(axis=-1, keepdims=True)
    p = np.exp(s)
    return np.matmul(p / p.sum(axis=-1, keepdims=True), v)


q, k, v = f64(1, 2, 3, 4, seed=21), f64(1, 2, 5, 4, seed=22), f64(1, 2, 5, 4, seed=23)
case("attention causal Tq < Tk", "Attention", ".scale(0.5).causal(true)", [q, k, v],
     attention(q, k, v, 0.5, True))
m = f64(1, 1, 3, 5, seed=24)
case("attention float mask", "Attention", ".scale(0.5).causal(false)", [q, k, v, m],
     attention(q, k, v, 0.5, False, m))
bm = np.array([[True, False, True, True, False], [True, True, False, False, True],
               [False, True, True, True, True]])
case("attention bool mask and causal", "Attention", ".scale(0.5).causal(true)", [q, k, v, bm],
     attention(q, k, v, 0.5, True, bm))
x, w = f64(1, 4, 6, 7, seed=25), f64(6, 2, 3, 3, seed=26)
conv = dict(stride=(2, 1), padding=(1, 0), dilation=(1, 2), groups=2)
attrs = ".stride(dims({2, 1})).padding(dims({1, 0})).dilation(dims({1, 2})).groups(2)"
case("conv2d groups stride padding dilation", "Conv2d", attrs, [x, w],
     F.conv2d(t(x), t(w), **conv).numpy())
xt, wt = t(x).clone().requires_grad_(), t(w).clone().requires_grad_()
y = F.conv2d(xt, wt, **conv)
gy = f64(*y.shape, seed=27)
y.backward(t(gy))
case("conv2d_grad_input", "Conv2dGradInput", attrs + ".shape(dims({1, 4, 6, 7}))", [gy, w],
     xt.grad.numpy())
case("conv2d_grad_weight", "Conv2dGradWeight", attrs + ".shape(dims({6, 2, 3, 3}))", [x, gy],
     wt.grad.numpy())
x = f64(1, 2, 5, 5, seed=28)
pool = ".kernel(dims({3, 3})).stride(dims({2, 2})).padding(dims({1, 1}))"
case("max_pool2d padded", "MaxPool2d", pool, [x], F.max_pool2d(t(x), 3, 2, 1).numpy())
case("avg_pool2d counts padding", "AvgPool2d", pool, [x],
     F.avg_pool2d(t(x), 3, 2, 1, count_include_pad=True).numpy())
g = f64(1, 2, 3, 3, seed=29)
xt = t(x).clone().requires_grad_()
F.avg_pool2d(xt, 3, 2, 1, count_include_pad=True).backward(t(g))
case("avg_pool2d_grad", "AvgPool2dGrad", pool + ".shape(dims({1, 2, 5, 5}))", [g], xt.grad.numpy())
# Ties: the gradient goes to the first maximum of each window, row-major.
xg = np.round(f64(1, 2, 5, 5, seed=30))
dx = np.zeros_like(xg)
for n, ch, oi, oj in np.ndindex(1, 2, 3, 3):
    best, at = -np.inf, None
    for di, dj in np.ndindex(3, 3):
        i, j = oi * 2 - 1 + di, oj * 2 - 1 + dj
        if 0 <= i < 5 and 0 <= j < 5 and xg[n, ch, i, j] > best:
            best, at = xg[n, ch, i, j], (i, j)
    dx[n, ch][at] += g[n, ch, oi, oj]
case("max_pool2d_grad ties go first", "MaxPool2dGrad", pool + ".shape(dims({1, 2, 5, 5}))",
     [xg, g], dx)

print("// Generated by tests/conformance/numpy_reference.py (NumPy %s, PyTorch %s): do not edit."
      % (np.__version__, torch.__version__))
for e in entries:
    print(e)
