#!/usr/bin/env python3
"""The MLP's first 20 steps in SexpGPU and in PyTorch, from the same initial
parameters (exported with `sexpgpu checkpoint export`), on the same batches:
every step's loss must agree to 1e-5 relative. Skips (exit 77) when PyTorch,
NumPy or Fashion-MNIST are missing.

Usage: torch_parity.py SEXPGPU SOURCE_DIR
"""
import gzip
import json
import math
import os
import subprocess
import sys
import tempfile

SKIP = 77
try:
    import numpy as np
    import torch
except ImportError as e:
    print(f"skipped: {e}")
    sys.exit(SKIP)

DATA = "/usr/share/datasets/fashion-mnist"
if not os.path.exists(f"{DATA}/train-images-idx3-ubyte.gz"):
    print("skipped: Debian's dataset-fashion-mnist is not installed")
    sys.exit(SKIP)

binary, source = sys.argv[1], sys.argv[2]
run_file = os.path.join(source, "tests/e2e/runs/parity.lisp")
STEPS, BATCH, PEAK, WARMUP, TOTAL, WD = 20, 128, 1e-3, 10, 40, 0.01


def sexpgpu(*args):
    r = subprocess.run([binary, *args], capture_output=True, text=True)
    if r.returncode != 0:
        print(r.stdout, r.stderr)
        sys.exit(f"sexpgpu {' '.join(args)} exited {r.returncode}")
    return r.stdout


def idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    dims = data[3]
    shape = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def read_safetensors(path):
    """The f32 tensors of a safetensors file (the format is 8 bytes of header
    length, the JSON header, the data), without the safetensors package."""
    with open(path, "rb") as f:
        blob = f.read()
    n = int.from_bytes(blob[:8], "little")
    header = json.loads(blob[8:8 + n])
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        assert t["dtype"] == "F32", t
        a, b = t["data_offsets"]
        out[name] = np.frombuffer(blob[8 + n + a:8 + n + b], dtype=np.float32).reshape(t["shape"])
    return out


def lr_at(step):
    # optim:warmup-cosine as docs/optim.md defines it (final 0): step/warmup
    # during the warm-up (0 at step 0, as Hugging Face's schedule), then half
    # a cosine.
    if step < WARMUP:
        return PEAK * step / WARMUP
    progress = min(1.0, (step - WARMUP) / max(1, TOTAL - WARMUP))
    return PEAK * 0.5 * (1 + math.cos(math.pi * progress))


with tempfile.TemporaryDirectory() as tmp:
    # The initial parameters: `--steps` takes at least 1, and the schedule's
    # learning rate at step 0 is exactly 0, so AdamW's first update (and its
    # decoupled weight decay, lr * wd) leaves every parameter as initialised.
    assert lr_at(0) == 0.0
    sexpgpu("run", run_file, "--quiet", "--steps", "1", "--out", f"{tmp}/init")
    exported = f"{tmp}/init.safetensors"
    sexpgpu("checkpoint", "export", f"{tmp}/init/checkpoints/latest", "--format", "safetensors",
            "-o", exported)
    out = sexpgpu("run", run_file, "--quiet", "--json", "--out", f"{tmp}/run")
    ours = {e["step"]: e["metrics"]["train/loss"]
            for e in map(json.loads, out.splitlines()) if e["kind"] == "step"}

    params = {k: torch.from_numpy(v.copy()).requires_grad_(True)
              for k, v in read_safetensors(exported).items()}

images = torch.from_numpy(idx(f"{DATA}/train-images-idx3-ubyte.gz").astype(np.float32) / 255.0)
labels = torch.from_numpy(idx(f"{DATA}/train-labels-idx1-ubyte.gz").astype(np.int64))
torch.manual_seed(0)
order = ["mlp.fc1.weight", "mlp.fc1.bias", "mlp.fc2.weight", "mlp.fc2.bias"]
opt = torch.optim.AdamW([params[k] for k in order], lr=PEAK, weight_decay=WD)
worst = 0.0
for step in range(STEPS):
    for g in opt.param_groups:
        g["lr"] = lr_at(step)
    x = images[step * BATCH:(step + 1) * BATCH].reshape(BATCH, -1)
    y = labels[step * BATCH:(step + 1) * BATCH]
    h = torch.relu(x @ params["mlp.fc1.weight"] + params["mlp.fc1.bias"])
    loss = torch.nn.functional.cross_entropy(h @ params["mlp.fc2.weight"] + params["mlp.fc2.bias"], y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    # Step events are written after step N is done, as step N + 1.
    mine = ours.get(step + 1)
    rel = abs(mine - loss.item()) / abs(loss.item())
    worst = max(worst, rel)
    print(f"step {step:2d}  pytorch {loss.item():.7f}  sexpgpu {mine:.7f}  rel {rel:.2e}")
print(f"worst relative difference {worst:.2e} (limit 1e-5), torch {torch.__version__}")
sys.exit(0 if worst <= 1e-5 else 1)
