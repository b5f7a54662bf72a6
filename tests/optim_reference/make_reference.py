#!/usr/bin/python3
"""Reference trajectories for the optimizers and schedules of sexpgpu/optim.

Writes reference.json beside this script: for each optimizer configuration
a fixed initial value of each parameter, a sequence of gradients, and the
parameter after each step, computed by PyTorch's own optimizer where PyTorch
has it (SGD, Adam, AdamW) and otherwise by a NumPy transcription of the
published algorithm (Lion, Muon, and Adafactor, which this PyTorch lacks);
and for each schedule its value at every step, from closed formulas written
here independently of optimizers/sexpgpu/optim.lisp (and, for StepLR and
ExponentialLR, checked against PyTorch's schedulers).

tests/unit/test_optimizers.cpp reads the JSON, so the C++ tests need no
Python. Everything is computed in float64; the tests run f32.

Run: /usr/bin/python3 tests/optim_reference/make_reference.py
"""
import json
import math
import os

import numpy as np
import torch

STEPS = 10


def gradients(rng, shape, steps=STEPS):
    return [rng.standard_normal(shape) for _ in range(steps)]


def problem(seed, shapes):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal(s), gradients(rng, s)) for s in shapes]


def run_torch(make, params, lr_at=None):
    """Steps a torch optimizer over the given (initial, grads) params."""
    tensors = [torch.tensor(p0, dtype=torch.float64, requires_grad=True) for p0, _ in params]
    opt = make(tensors)
    out = [[] for _ in params]
    for k in range(STEPS):
        if lr_at is not None:
            for group in opt.param_groups:
                group["lr"] = lr_at(k)
        for t, (_, grads) in zip(tensors, params):
            t.grad = torch.tensor(grads[k], dtype=torch.float64)
        opt.step()
        for i, t in enumerate(tensors):
            out[i].append(t.detach().numpy().copy())
    return out


def run_numpy(step, init_state, params):
    """Steps a NumPy update p, g, state, k -> p over each param."""
    out = []
    for p0, grads in params:
        p = p0.copy()
        state = init_state(p)
        traj = []
        for k in range(STEPS):
            p = step(p, grads[k], state, k + 1)
            traj.append(p.copy())
        out.append(traj)
    return out


# ---- Lion: Chen et al. 2023, "Symbolic Discovery of Optimization Algorithms", Algorithm 2.
def lion(lr, b1=0.9, b2=0.99, wd=0.0):
    def step(p, g, s, k):
        c = b1 * s["m"] + (1 - b1) * g
        assert np.min(np.abs(c)) > 1e-4, "sign(c) too close to 0 for an f32 comparison"
        p = p - lr * (np.sign(c) + wd * p)
        s["m"] = b2 * s["m"] + (1 - b2) * g
        return p

    return step, lambda p: {"m": np.zeros_like(p)}


# ---- Muon: github.com/KellerJordan/Muon, muon.py (zeropower_via_newtonschulz5, muon_update).
def newton_schulz5(G, steps):
    a, b, c = (3.4445, -4.7750, 2.0315)
    X = G.copy()
    tall = G.shape[0] > G.shape[1]
    if tall:
        X = X.T
    X = X / (np.linalg.norm(X) + 1e-7)
    for _ in range(steps):
        A = X @ X.T
        B = b * A + c * A @ A
        X = a * X + B @ X
    return X.T if tall else X


def muon(lr, momentum=0.95, nesterov=True, ns_steps=5, wd=0.0):
    def step(p, g, s, k):
        s["buf"] = s["buf"] + (1 - momentum) * (g - s["buf"])  # momentum.lerp_(grad, 1 - beta)
        u = g + momentum * (s["buf"] - g) if nesterov else s["buf"]  # grad.lerp_(momentum, beta)
        u = newton_schulz5(u, ns_steps) * max(1, p.shape[0] / p.shape[1]) ** 0.5
        return p * (1 - lr * wd) - lr * u

    return step, lambda p: {"buf": np.zeros_like(p)}


# ---- Adafactor: torch.optim.Adafactor of PyTorch 2.5 (_single_tensor_adafactor).
def adafactor(lr=1e-2, beta2_decay=-0.8, eps1=None, eps2=1e-3, d=1.0, wd=0.0):
    eps1 = np.finfo(np.float32).eps if eps1 is None else eps1  # the tests' parameters are f32

    def step(p, g, s, k):
        one_minus_beta2 = k**beta2_decay
        rho = min(lr, 1 / k**0.5)
        alpha = max(eps2, np.linalg.norm(p) / p.size**0.5) * rho
        p = p * (1 - lr * wd)
        if g.ndim > 1:
            row_mean = np.mean(g * g, axis=-1, keepdims=True)
            s["row"] = s["row"] + one_minus_beta2 * (row_mean - s["row"])
            col_mean = np.mean(g * g, axis=-2, keepdims=True)
            s["col"] = s["col"] + one_minus_beta2 * (col_mean - s["col"])
            var = s["row"] @ s["col"]
            var = var / np.maximum(np.mean(s["row"], axis=-2, keepdims=True), eps1)
        else:
            s["var"] = s["var"] + one_minus_beta2 * (g * g - s["var"])
            var = s["var"].copy()
        update = 1 / np.sqrt(np.maximum(var, eps1 * eps1)) * g
        denom = max(1.0, np.linalg.norm(update) / (update.size**0.5 * d))
        return p - alpha / denom * update

    def init(p):
        if p.ndim > 1:
            return {"row": np.zeros(p.shape[:-1] + (1,)), "col": np.zeros(p.shape[:-2] + (1, p.shape[-1]))}
        return {"var": np.zeros_like(p)}

    return step, init


# ---- schedules, as closed formulas ----------------------------------------------------
def warm(step, peak, warmup):
    return peak * step / warmup


def warmup_cosine(peak, warmup, total, final):
    def at(step):
        if step < warmup:
            return warm(step, peak, warmup)
        progress = min(1.0, (step - warmup) / max(1, total - warmup))
        return peak * (final + (1 - final) * 0.5 * (1 + math.cos(math.pi * progress)))

    return at


def warmup_linear(peak, warmup, total, final):
    def at(step):
        if step < warmup:
            return warm(step, peak, warmup)
        progress = min(1.0, (step - warmup) / max(1, total - warmup))
        return peak * (final + (1 - final) * (1 - progress))

    return at


def warmup_stable_decay(peak, warmup, decay, total, final):
    def at(step):
        if step < warmup:
            return warm(step, peak, warmup)
        if step < total - decay:
            return peak
        progress = min(1.0, (step - (total - decay)) / max(1, decay))
        return peak * (final + (1 - final) * (1 - progress))

    return at


def torch_scheduler_values(make, lr, steps):
    p = torch.zeros(1, requires_grad=True)
    opt = torch.optim.SGD([p], lr=lr)
    sched = make(opt)
    values = []
    for _ in range(steps):
        values.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    return values


def schedules():
    cases = []

    def add(lisp, steps, at):
        cases.append({"lisp": lisp, "steps": steps, "values": [at(k) for k in range(steps)]})

    add("(optim:constant 0.25)", 5, lambda k: 0.25)
    add("(optim:linear-warmup 1.0 :warmup 4)", 8, lambda k: min(1.0, k / 4))
    add("(optim:warmup-cosine 0.1 :warmup 3 :total 12 :final 0.1)", 15, warmup_cosine(0.1, 3, 12, 0.1))
    add("(optim:warmup-cosine 2.0)", 10, warmup_cosine(2.0, 0, 10, 0.0))
    add("(optim:warmup-linear 1.0 :warmup 2 :total 10 :final 0.2)", 12, warmup_linear(1.0, 2, 10, 0.2))
    add("(optim:warmup-linear 0.5 :warmup 5)", 20, warmup_linear(0.5, 5, 20, 0.0))
    add("(optim:warmup-stable-decay 1.0 :warmup 2 :decay 4 :total 12 :final 0.1)", 14,
        warmup_stable_decay(1.0, 2, 4, 12, 0.1))
    add("(optim:warmup-stable-decay 1.0 :warmup 2)", 20, warmup_stable_decay(1.0, 2, 4, 20, 0.0))
    add("(optim:step-decay 0.1 :every 3)", 10, lambda k: 0.1 * 0.1 ** (k // 3))
    add("(optim:step-decay 1.0 :every 4 :factor 0.5)", 12, lambda k: 0.5 ** (k // 4))
    add("(optim:exponential 0.1 :rate 0.9)", 10, lambda k: 0.1 * 0.9**k)

    # PyTorch's own schedulers agree with the formulas where it has them.
    def check(index, values):
        assert np.allclose(cases[index]["values"], values, rtol=1e-12), cases[index]["lisp"]

    check(8, torch_scheduler_values(lambda o: torch.optim.lr_scheduler.StepLR(o, 3, 0.1), 0.1, 10))
    check(9, torch_scheduler_values(lambda o: torch.optim.lr_scheduler.StepLR(o, 4, 0.5), 1.0, 12))
    check(10, torch_scheduler_values(lambda o: torch.optim.lr_scheduler.ExponentialLR(o, 0.9), 0.1, 10))
    return cases


# ---- optimizer cases --------------------------------------------------------------------
def optimizer_cases():
    cases = []
    matrix_and_vector = [(4, 3), (5,)]

    def add(name, lisp, reference, params, trajectories):
        cases.append({
            "name": name,
            "lisp": lisp,
            "reference": reference,
            "params": [{
                "shape": list(p0.shape),
                "initial": p0.ravel().tolist(),
                "grads": [g.ravel().tolist() for g in grads],
                "trajectory": [p.ravel().tolist() for p in traj],
            } for (p0, grads), traj in zip(params, trajectories)],
        })

    def torch_case(name, lisp, make, seed, lr_at=None):
        params = problem(seed, matrix_and_vector)
        add(name, lisp, "torch " + torch.__version__, params, run_torch(make, params, lr_at))

    def numpy_case(name, lisp, reference, update, seed, shapes=matrix_and_vector):
        params = problem(seed, shapes)
        add(name, lisp, reference, params, run_numpy(*update, params))

    SGD, Adam, AdamW = torch.optim.SGD, torch.optim.Adam, torch.optim.AdamW
    torch_case("sgd", "(optim:sgd :lr 0.1)", lambda ps: SGD(ps, lr=0.1), 1)
    torch_case("sgd-momentum", "(optim:sgd :lr 0.1 :momentum 0.9)",
               lambda ps: SGD(ps, lr=0.1, momentum=0.9), 2)
    torch_case("sgd-nesterov-decay", "(optim:sgd :lr 0.05 :momentum 0.9 :nesterov t :weight-decay 0.01)",
               lambda ps: SGD(ps, lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01), 3)
    torch_case("sgd-dampening", "(optim:sgd :lr 0.1 :momentum 0.8 :dampening 0.5 :weight-decay 0.1)",
               lambda ps: SGD(ps, lr=0.1, momentum=0.8, dampening=0.5, weight_decay=0.1), 4)
    torch_case("adam", "(optim:adam :lr 0.1)", lambda ps: Adam(ps, lr=0.1), 5)
    torch_case("adam-l2", "(optim:adam :lr 0.05 :betas '(0.8 0.99) :eps 1e-6 :weight-decay 0.1)",
               lambda ps: Adam(ps, lr=0.05, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1), 6)
    torch_case("adamw", "(optim:adamw :lr 0.1)", lambda ps: AdamW(ps, lr=0.1), 7)
    torch_case("adamw-decay", "(optim:adamw :lr 0.05 :betas '(0.9 0.95) :weight-decay 0.1)",
               lambda ps: AdamW(ps, lr=0.05, betas=(0.9, 0.95), weight_decay=0.1), 8)
    cosine = warmup_cosine(0.1, 3, 10, 0.1)
    torch_case("adamw-scheduled",
               "(optim:adamw :lr (optim:warmup-cosine 0.1 :warmup 3 :final 0.1) :weight-decay 0.1)",
               lambda ps: AdamW(ps, lr=cosine(0), weight_decay=0.1), 9, lr_at=cosine)
    numpy_case("lion", "(optim:lion :lr 0.01)", "numpy: Chen et al. 2023, Algorithm 2", lion(0.01), 10)
    numpy_case("lion-decay", "(optim:lion :lr 0.02 :betas '(0.95 0.98) :weight-decay 0.1)",
               "numpy: Chen et al. 2023, Algorithm 2", lion(0.02, 0.95, 0.98, 0.1), 11)
    muon_ref = "numpy: KellerJordan/Muon muon.py"
    numpy_case("muon", "(optim:muon :lr 0.02)", muon_ref, muon(0.02), 12, [(4, 3), (3, 5)])
    numpy_case("muon-plain", "(optim:muon :lr 0.05 :nesterov nil :ns-steps 3 :weight-decay 0.1 :momentum 0.9)",
               muon_ref, muon(0.05, 0.9, False, 3, 0.1), 13, [(4, 3), (3, 5)])
    ada_ref = "numpy: torch.optim.Adafactor (PyTorch 2.5)"
    numpy_case("adafactor", "(optim:adafactor)", ada_ref, adafactor(), 14, [(4, 3), (5,), (2, 3, 4)])
    numpy_case("adafactor-options",
               "(optim:adafactor :lr 0.1 :beta2-decay -0.5 :eps '(1e-6 1e-2) :clip-threshold 0.5 :weight-decay 0.1)",
               ada_ref, adafactor(0.1, -0.5, 1e-6, 1e-2, 0.5, 0.1), 15, [(4, 3), (5,)])
    return cases


def main():
    out = {
        "generator": "tests/optim_reference/make_reference.py",
        "torch_version": torch.__version__,
        "numpy_version": np.__version__,
        "steps": STEPS,
        "optimizers": optimizer_cases(),
        "schedules": schedules(),
    }
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "reference.json")
    # One case a line: diffs of a regenerated file stay readable.
    with open(path, "w") as f:
        f.write("{\n")
        for i, (key, value) in enumerate(out.items()):
            f.write(f" {json.dumps(key)}: ")
            if isinstance(value, list):
                f.write("[\n" + ",\n".join("  " + json.dumps(v) for v in value) + "\n ]")
            else:
                f.write(json.dumps(value))
            f.write(",\n" if i + 1 < len(out) else "\n")
        f.write("}\n")


if __name__ == "__main__":
    main()
