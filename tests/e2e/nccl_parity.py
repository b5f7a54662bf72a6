#!/usr/bin/env python3
"""The nccl device at a world of one, on a GPU machine (bench/device-run.sh nccl).

1. Parity: examples/mlp.lisp trains through the nccl device (a communicator
   of one rank, the gradient buckets reduced by ncclAllReduce on a side
   stream) exactly as through the plain cuda device: every step's loss and
   grad-norm equal. A sum over one rank is exact, so equality is the
   tolerance.
2. Overlap: with several buckets (:bucket-bytes 65536) and
   SEXPGPU_NCCL_TRACE=1, the device logs when each bucket's reduction ran
   and when the step's stream reached the join (the end of the backward);
   at least one bucket must finish before the join on most steps, which is
   the reduction running while the backward runs.
3. The per-step cost of the nccl path over the plain one (median step-ms of
   examples/gpt2.lisp when its data is there, else the MLP's), printed for
   bench/RESULTS.md.

Usage: nccl_parity.py SEXPGPU SOURCE_DIR. Exit 0 all passed, 1 a check
failed, 77 no GPU or no nccl plugin.
"""
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

binary, source = sys.argv[1], sys.argv[2]
failures = 0


def check(what, ok, detail=""):
    global failures
    print(("ok   " if ok else "FAIL ") + what + (": " + detail if detail and not ok else ""))
    failures += 0 if ok else 1


def doctor_devices():
    r = subprocess.run([binary, "doctor", "--json"], capture_output=True, text=True)
    try:
        return {p["name"]: p for p in json.loads(r.stdout).get("plugins", [])}
    except json.JSONDecodeError:
        return {}


def events(file, out, device, extra, env=None, quiet=True):
    args = [binary, "run", file, "--device", device, "--json", "--out", out, "--fresh"]
    args += ["--quiet"] if quiet else []
    r = subprocess.run(args + extra, capture_output=True, text=True,
                       env=dict(os.environ, **(env or {})))
    lines = [json.loads(l) for l in r.stdout.splitlines() if l.startswith("{")]
    return r, lines


def steps(lines):
    return [e["metrics"] for e in lines if e.get("kind") == "step"]


plugins = doctor_devices()
if plugins.get("nccl", {}).get("status") != "loaded":
    print("SKIP: the nccl plugin did not load: " + plugins.get("nccl", {}).get("reason", "not built"))
    sys.exit(77)

with tempfile.TemporaryDirectory() as tmp:
    # Every step reported (:log-every 1), the rest as examples/mlp.lisp.
    text = open(os.path.join(source, "examples/mlp.lisp")).read().replace(":log-every 50",
                                                                          ":log-every 1")
    mlp = os.path.join(tmp, "mlp.lisp")
    with open(mlp, "w") as f:
        f.write(text)
    n = ["--steps", "60"]
    _, plain = events(mlp, os.path.join(tmp, "cuda"), "cuda", n)
    r, nccl = events(mlp, os.path.join(tmp, "nccl"), "nccl", n)
    check("mlp runs on the nccl device", r.returncode == 0, r.stderr[-600:])
    a = [(s["train/loss"], s["grad-norm"]) for s in steps(plain)]
    b = [(s["train/loss"], s["grad-norm"]) for s in steps(nccl)]
    check(f"mlp: nccl at a world of one gives the plain cuda device's losses and grad norms "
          f"({len(a)} steps, bit for bit)", len(a) == 60 and a == b, f"{a[:3]} vs {b[:3]}")

    # Several buckets: the same file with a small bucket size.
    small = os.path.join(tmp, "mlp_buckets.lisp")
    with open(small, "w") as f:
        f.write(text.replace("(defrun", "(defrun :bucket-bytes 65536", 1))
    r, traced = events(small, os.path.join(tmp, "trace"), "nccl", ["--steps", "20", "--log", "info"],
                       env={"SEXPGPU_NCCL_TRACE": "1", "SEXPGPU_CUDA_GRAPHS": "0"}, quiet=False)
    lines = [l for l in r.stderr.splitlines() if "nccl overlap:" in l]
    counts = [tuple(map(int, m.groups())) for m in
              (re.search(r"(\d+) of (\d+) buckets reduced before the join", l) for l in lines) if m]
    overlapped = sum(1 for k, total in counts if total >= 2 and k >= 1)
    print(f"     overlap trace: {len(counts)} steps, buckets per step "
          f"{sorted(set(t for _, t in counts))}, steps with a bucket reduced before the join "
          f"{overlapped}")
    if lines:
        print("     e.g. " + lines[len(lines) // 2].split("nccl overlap:")[-1][:300])
    check("buckets: several all_reduce ops per step", any(t >= 2 for _, t in counts),
          r.stderr[-600:])
    check("overlap: on most steps a bucket's reduction finished before the backward did",
          counts and overlapped >= len(counts) // 2, str(counts[:5]))

    # The per-step cost of the nccl path.
    gpt2 = os.path.join(source, "examples/gpt2.lisp")
    work, extra = (gpt2, ["--steps", "60"]) if os.environ.get("SEXPGPU_DATA") else (mlp, n)
    ms = {}
    for device in ("cuda", "nccl"):
        r, lines = events(work, os.path.join(tmp, "cost-" + device), device, extra)
        per = [s["step-ms"] for s in steps(lines) if "step-ms" in s][5:]
        ms[device] = statistics.median(per) if per else None
    if ms["cuda"] and ms["nccl"]:
        print(f"     {os.path.basename(work)} median step: cuda {ms['cuda']:.3f} ms, "
              f"nccl {ms['nccl']:.3f} ms, ratio {ms['nccl'] / ms['cuda']:.3f}")
    check("the cost of the nccl path was measured", bool(ms["cuda"] and ms["nccl"]), str(ms))

print("nccl_parity: " + ("all passed" if failures == 0 else f"{failures} failed"))
sys.exit(1 if failures else 0)
