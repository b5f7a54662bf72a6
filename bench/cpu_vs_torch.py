#!/usr/bin/env python3
"""Forward and backward of the same functions on SexpGPU's CPU device and in
PyTorch, side by side, with the ratio (issue 3's benchmark).

  python3 bench/cpu_vs_torch.py BUILD_DIR [--threads 1 2] [--iters 300]

Work measured, identical on both sides:
  mlp    784-256-10 MLP at batch 128, cross-entropy, gradients of the four
         parameters (bench/mlp_step.lisp), cycling through 60 real
         Fashion-MNIST batches (pixels / 255);
  block  a pre-norm transformer block, batch 8 x 64 tokens, width 128, 4
         heads, causal attention, GELU MLP 512, mean-square loss
         (bench/block_step.lisp), on random inputs.
ratio = PyTorch's time over ours: above 1, SexpGPU is faster.
"""
import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
FMNIST = "/usr/share/datasets/fashion-mnist"
BATCH = 128


def fashion_mnist_batches(count):
    with gzip.open(os.path.join(FMNIST, "train-images-idx3-ubyte.gz")) as f:
        images = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 784)
    with gzip.open(os.path.join(FMNIST, "train-labels-idx1-ubyte.gz")) as f:
        labels = np.frombuffer(f.read(), np.uint8, offset=8)
    out = []
    for i in range(count):
        sl = slice(i * BATCH, (i + 1) * BATCH)
        out.append((images[sl].astype(np.float32) / 255.0, labels[sl].astype(np.int32)))
    return out


def ours(build, lisp, fn, threads, iters, data=None):
    cmd = [os.path.join(build, "bench", "step_bench"), os.path.join(HERE, lisp), fn,
           "--threads", str(threads), "--iters", str(iters)]
    if data:
        cmd += ["--data", data]
    res = subprocess.run(cmd, capture_output=True, text=True, env=thread_env(threads), check=True)
    return json.loads(res.stdout.strip().splitlines()[-1])["ms_per_step"]


def timed(step, iters):
    for i in range(10):
        step(i)
    start = time.perf_counter()
    for i in range(iters):
        step(i)
    return (time.perf_counter() - start) * 1000 / iters


def torch_mlp(batches, iters):
    g = torch.Generator().manual_seed(42)
    params = [torch.randn(784, 256, generator=g) * 0.05, torch.randn(256, generator=g) * 0.05,
              torch.randn(256, 10, generator=g) * 0.05, torch.randn(10, generator=g) * 0.05]
    for p in params:
        p.requires_grad_(True)
    data = [(torch.from_numpy(x), torch.from_numpy(y).long()) for x, y in batches]
    w1, b1, w2, b2 = params

    def step(i):
        x, y = data[i % len(data)]
        loss = F.cross_entropy(torch.relu(x @ w1 + b1) @ w2 + b2, y)
        for p in params:
            p.grad = None
        loss.backward()

    return timed(step, iters)


def torch_block(iters):
    g = torch.Generator().manual_seed(42)
    shapes = {"ln1_w": (128,), "ln1_b": (128,), "qkv_w": (128, 384), "proj_w": (128, 128),
              "ln2_w": (128,), "ln2_b": (128,), "fc_w": (128, 512), "out_w": (512, 128)}
    p = {k: (torch.randn(*s, generator=g) * 0.05).requires_grad_(True) for k, s in shapes.items()}
    x = torch.randn(8, 64, 128, generator=g)

    def heads(t):
        return t.reshape(8, 64, 4, 32).transpose(1, 2)

    causal = torch.ones(64, 64, dtype=torch.bool).tril()

    def attention(q, k, v):  # PyTorch 2's fused op where it exists (1.13 lacks it)
        if hasattr(F, "scaled_dot_product_attention"):
            return F.scaled_dot_product_attention(q, k, v, is_causal=True)
        s = (q @ k.transpose(-2, -1)) / 32 ** 0.5
        return torch.softmax(s.masked_fill(~causal, float("-inf")), -1) @ v

    def step(_):
        q, k, v = (F.layer_norm(x, (128,), p["ln1_w"], p["ln1_b"]) @ p["qkv_w"]).split(128, -1)
        att = attention(heads(q), heads(k), heads(v))
        h = x + att.transpose(1, 2).reshape(8, 64, 128) @ p["proj_w"]
        h = h + F.gelu(F.layer_norm(h, (128,), p["ln2_w"], p["ln2_b"]) @ p["fc_w"]) @ p["out_w"]
        loss = (h * h).mean()
        for t in p.values():
            t.grad = None
        loss.backward()

    return timed(step, iters)


def thread_env(threads):
    # Both sides get the same cores: OpenBLAS reads its thread count when it
    # loads, and torch.set_num_threads does not reach it (Debian's PyTorch
    # uses the system OpenBLAS), so each side runs in a process started with
    # these variables.
    return dict(os.environ, OPENBLAS_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads))


def peer(threads, iters):
    """The PyTorch side, in its own process with `threads` everywhere."""
    cmd = [sys.executable, os.path.abspath(__file__), "--peer", str(threads), "--iters", str(iters)]
    res = subprocess.run(cmd, capture_output=True, text=True, env=thread_env(threads), check=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build", nargs="?")
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--iters", type=int, default=300)
    ap.add_argument("--peer", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    batches = fashion_mnist_batches(60)
    if args.peer:
        torch.set_num_threads(args.peer)
        print(json.dumps({"mlp": torch_mlp(batches, args.iters),
                          "block": torch_block(args.iters // 3)}))
        return 0
    if not args.build:
        ap.error("give the build directory")
    with tempfile.NamedTemporaryFile(suffix=".bin", delete=False) as f:
        for x, y in batches:
            f.write(x.tobytes())
            f.write(y.tobytes())
        data = f.name
    print(f"torch {torch.__version__}; {os.cpu_count()} cores; times in ms per step")
    print(f"{'work':<8}{'threads':>8}{'sexpgpu ms':>12}{'torch ms':>10}{'ratio':>8}")
    for threads in args.threads:
        theirs = peer(threads, args.iters)
        rows = [("mlp", ours(args.build, "mlp_step.lisp", "mlp", threads, args.iters, data),
                 theirs["mlp"]),
                ("block", ours(args.build, "block_step.lisp", "block", threads, args.iters // 3),
                 theirs["block"])]
        for name, a, b in rows:
            print(f"{name:<8}{threads:>8}{a:>12.3f}{b:>10.3f}{b / a:>8.2f}")
    os.unlink(data)


if __name__ == "__main__":
    sys.exit(main())
