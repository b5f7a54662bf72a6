#!/usr/bin/env python3
"""Training throughput on one GPU (issue: the CUDA device): `sexpgpu run` of
examples/gpt2.lisp and examples/mlp.lisp on the cuda device next to the same
training in PyTorch, eager and torch.compile (bench/nanogpt_torch.py), one
after the other on the same GPU, with the issue's bars.

  gpu_vs_torch.py SEXPGPU SOURCE_DIR [--gpt2-steps 40 --gpt2-warmup 10]
                  [--mlp-steps 1000 --mlp-warmup 100] [--timeout 300 --budget 540]
                  [--only gpt2 mlp] [--device cpu --tiny]

Workloads (bench/nanogpt_torch.py says how PyTorch's side mirrors each):
  gpt2  GPT-2 small, 124M parameters (vocabulary 50304), batch 16 x 1024
        random tokens, bf16 with f32 master weights, AdamW, clipping at 1.0.
        The example's knobs are passed explicitly (--set), so a change of its
        defaults cannot change what is measured.
  mlp   the 784-256-10 MLP of examples/mlp.lisp, batch 128, f32; ours reads
        Fashion-MNIST through its loader ($SEXPGPU_DATA), PyTorch's side uses
        random pixels on the GPU.
Ours: the step events of `run --json` (docs/events.md); each carries the mean
step-ms of the steps since the previous event (gpt2 logs every step, mlp
every 50). Events after step WARMUP count; step ms is their median,
tokens/s their median tokens-per-s, peak memory the largest memory-bytes
(the device allocator's peak in use). The first step's time runs from
starting the process to the arrival of the first step event. Ours reads the
loss and the gradient norm back to the host every step (its finite guard);
PyTorch's loop reads nothing back between timed steps.
MFU = FLOPs per token x tokens/s / 989e12 (H100/H200 dense bf16), with
nanoGPT's 6N + 12·L·T·d per token for both sides (bench/nanogpt_torch.py).
The ratios are ours over theirs in throughput: above 1, SexpGPU is faster.

Every child gets NCCL_NVLS_ENABLE=0 and this process's environment
($SEXPGPU_DATA for Fashion-MNIST). A side that fails is reported with the
end of its standard error and the others still run; the exit status is 0
only when every side ran (whether the bars are met is printed, not exited).
A line `RESULT {json}` carries every number, before the tables.

--also-ours NAME=VALUE runs our side once more with that environment
variable set (SEXPGPU_FUSE_CLASSIFIER=0, say): a before and after of one
switch in the same call, a row "sexpgpu NAME=VALUE" of the tables.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from nanogpt_torch import GPT2_SIZES, GPT2_TINY, PEAK_BF16_FLOPS, gpt2_flops_per_token  # noqa: E402

# nanogpt_torch's size names -> examples/gpt2.lisp's knobs.
GPT2_KNOBS = {"depth": "depth", "width": "width", "heads": "heads", "seq": "seq-len",
              "vocab": "vocab", "batch": "batch"}
BARS = [("gpt2", "compile", 1.0), ("mlp", "eager", 3.0)]


class Budget:
    """The time left for all the children: one call on the GPU machine is
    limited, and a hanging side must not take the others' time."""

    def __init__(self, total_s, per_child_s):
        self.deadline = time.monotonic() + total_s
        self.per_child_s = per_child_s

    def next_timeout(self):
        return min(self.per_child_s, self.deadline - time.monotonic())


def child_env():
    return dict(os.environ, NCCL_NVLS_ENABLE="0", PYTHONUNBUFFERED="1")


def failure(why, stderr=""):
    return {"ok": False, "error": why, "stderr_tail": stderr[-3000:]}


# ---- our side --------------------------------------------------------------------------------

def stream_lines(pipe, sink):
    """Appends (arrival time, line) for each line of pipe."""
    for line in pipe:
        sink.append((time.perf_counter(), line))


def run_ours(cmd, timeout, env=None):
    """Runs cmd; (exit status or None when it ran out of time, [(arrival s, event)], stderr)."""
    lines = []
    with tempfile.TemporaryFile(mode="w+") as err:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True,
                                env=dict(child_env(), **(env or {})))
        reader = threading.Thread(target=stream_lines, args=(proc.stdout, lines))
        reader.start()
        try:
            rc = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            rc = None
        reader.join()
        err.seek(0)
        stderr = err.read()
    events = []
    for arrived, line in lines:
        try:
            events.append((arrived - start, json.loads(line)))
        except json.JSONDecodeError:
            pass
    return rc, events, stderr


def summarise_ours(events, warmup):
    """Throughput of the step events after step `warmup` (module docstring)."""
    steps = [(t, e) for t, e in events if e.get("kind") == "step"]
    opened = next((e for _, e in events if e.get("kind") == "open"), {})
    if not steps:
        return failure("no step events")
    timed, previous = [], 0
    for _, e in steps:
        if previous >= warmup:
            timed.append(e["metrics"])
        previous = e["step"]
    if not timed:
        return failure(f"no step events after step {warmup} (the last was step {previous})")
    memory = [m["memory-bytes"] for _, e in steps for m in [e["metrics"]] if "memory-bytes" in m]
    out = {"ok": True, "step_ms": statistics.median(m["step-ms"] for m in timed),
           "time_to_first_step_s": steps[0][0], "peak_memory_bytes": max(memory, default=None),
           "params": opened.get("params"), "timed_events": len(timed),
           "final_loss": steps[-1][1]["metrics"].get("train/loss"),
           "device": "/".join(d.get("name", "?") for d in
                              opened.get("device", {}).get("devices", []))}
    tokens = [m["tokens-per-s"] for m in timed if "tokens-per-s" in m]
    if tokens:
        out["tokens_per_s"] = statistics.median(tokens)
    out["steps_per_s"] = 1000 / out["step_ms"]
    return out


def ours(binary, file, extra, steps, warmup, device, budget, tmp, label, env=None):
    cmd = [binary, "run", file, "--device", device, "--steps", str(steps), "--json", "--quiet",
           "--out", os.path.join(tmp, label), "--fresh"] + extra
    print("$ " + "".join(f"{k}={v} " for k, v in (env or {}).items()) + " ".join(cmd), flush=True)
    timeout = budget.next_timeout()
    if timeout <= 0:
        return failure("not run: the time budget is spent")
    rc, events, stderr = run_ours(cmd, timeout, env)
    if rc is None:
        return failure(f"ran out of time ({timeout:.0f} s)", stderr)
    if rc != 0:
        return failure(f"exit status {rc}", stderr)
    return summarise_ours(events, warmup)


# ---- PyTorch's side --------------------------------------------------------------------------

def theirs(source, model, mode, flags, budget):
    script = os.path.join(source, "bench", "nanogpt_torch.py")
    cmd = [sys.executable, script, "--model", model, "--mode", mode] + flags
    print("$ " + " ".join(cmd), flush=True)
    timeout = budget.next_timeout()
    if timeout <= 0:
        return failure("not run: the time budget is spent")
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=child_env())
    except subprocess.TimeoutExpired as e:
        stderr = e.stderr.decode(errors="replace") if isinstance(e.stderr, bytes) else e.stderr
        return failure(f"ran out of time ({timeout:.0f} s)", stderr or "")
    lines = r.stdout.strip().splitlines()
    if r.returncode != 0 or not lines:
        return failure(f"exit status {r.returncode}", r.stderr)
    try:
        out = json.loads(lines[-1])
    except json.JSONDecodeError:
        return failure("its last line is not JSON: " + lines[-1][:200], r.stderr)
    return dict(out, ok=True)


# ---- the workloads ---------------------------------------------------------------------------

def gpt2(args, budget, tmp):
    sizes = GPT2_TINY if args.tiny else GPT2_SIZES
    sets = [a for name, value in sizes.items() for a in ("--set", f"{GPT2_KNOBS[name]}={value}")]
    print(f"gpt2: examples/gpt2.lisp with {' '.join(sets)}", flush=True)
    results = {"ours": ours(args.sexpgpu, os.path.join(args.source, "examples", "gpt2.lisp"),
                            sets, args.gpt2_steps, args.gpt2_warmup, args.device, budget, tmp,
                            "gpt2")}
    flags = [f for name, value in sizes.items() for f in ("--" + name, str(value))]
    flags += ["--steps", str(args.gpt2_steps), "--warmup", str(args.gpt2_warmup),
              "--device", args.device]
    for spec in args.also_ours:
        name, value = spec.split("=", 1)
        results["ours " + spec] = ours(args.sexpgpu, os.path.join(args.source, "examples",
                                                                   "gpt2.lisp"),
                                       sets, args.gpt2_steps, args.gpt2_warmup, args.device,
                                       budget, tmp, "gpt2-" + name, {name: value})
    for mode in ("eager", "compile"):
        results[mode] = theirs(args.source, "gpt2", mode, flags, budget)
    for ours_side in (r for side, r in results.items() if side.startswith("ours")):
        if ours_side["ok"] and "tokens_per_s" not in ours_side:  # a loader that counts no tokens
            ours_side["tokens_per_s"] = sizes["batch"] * sizes["seq"] * 1000 / ours_side["step_ms"]
        if ours_side["ok"] and ours_side.get("params"):
            flops = gpt2_flops_per_token(ours_side["params"], sizes["depth"], sizes["seq"],
                                         sizes["width"])
            ours_side["mfu"] = flops * ours_side["tokens_per_s"] / PEAK_BF16_FLOPS
    counts = {side: r.get("params") for side, r in results.items() if r["ok"]}
    if len(set(counts.values())) > 1:
        print(f"WARNING: the models differ in size: {counts}", flush=True)
    title = (f"GPT-2 {sizes['depth']} layers x {sizes['width']}, batch {sizes['batch']} x "
             f"{sizes['seq']} tokens, bf16 (steps {args.gpt2_warmup + 1}..{args.gpt2_steps} "
             "timed)")
    return title, "tokens_per_s", results


def mlp(args, budget, tmp):
    print("mlp: examples/mlp.lisp", flush=True)
    results = {"ours": ours(args.sexpgpu, os.path.join(args.source, "examples", "mlp.lisp"), [],
                            args.mlp_steps, args.mlp_warmup, args.device, budget, tmp, "mlp")}
    flags = ["--steps", str(args.mlp_steps), "--warmup", str(args.mlp_warmup),
             "--window", "50", "--device", args.device]
    for spec in args.also_ours:
        name, value = spec.split("=", 1)
        results["ours " + spec] = ours(args.sexpgpu, os.path.join(args.source, "examples",
                                                                   "mlp.lisp"),
                                       [], args.mlp_steps, args.mlp_warmup, args.device, budget,
                                       tmp, "mlp-" + name, {name: value})
    for mode in ("eager", "compile"):
        results[mode] = theirs(args.source, "mlp", mode, flags, budget)
    title = (f"MLP 784-256-10, batch 128, f32 (steps {args.mlp_warmup + 1}..{args.mlp_steps} "
             "timed)")
    return title, "steps_per_s", results


# ---- the report ------------------------------------------------------------------------------

def fmt(value, spec, scale=1.0):
    """value*scale formatted by spec; a missing value as "-" in the same width."""
    if value is None:
        width = "".join(c for c in spec.split(".")[0] if c.isdigit())
        return format("-", ">" + width)
    return format(value * scale, spec)


def ratio(results, unit, theirs_side):
    a, b = results["ours"], results[theirs_side]
    if a["ok"] and b["ok"] and a.get(unit) and b.get(unit):
        return a[unit] / b[unit]
    return None


def times(r):
    return "-" if r is None else f"{r:.2f}x"


def print_table(title, unit, results):
    print(f"\n{title}")
    w = max([15] + [len(side) + 5 for side in results])  # "ours X" is printed "sexpgpu X"
    print(f"  {'side':<{w}}{unit.replace('_per_', '/'):>14}{'step ms':>11}{'MFU':>8}"
          f"{'peak GiB':>10}{'first step s':>14}{'final loss':>12}")
    for side in results:
        r = results[side]
        name = side.replace("ours", "sexpgpu", 1) if side.startswith("ours") else "torch " + side
        if not r["ok"]:
            print(f"  {name:<{w}}FAILED: {r['error']}")
            continue
        print(f"  {name:<{w}}{fmt(r.get(unit), '14,.1f')}{fmt(r.get('step_ms'), '11.3f')}"
              f"{fmt(r.get('mfu'), '8.1%')}{fmt(r.get('peak_memory_bytes'), '10.2f', 2**-30)}"
              f"{fmt(r.get('time_to_first_step_s'), '14.1f')}{fmt(r.get('final_loss'), '12.4f')}")
    print("  ours/eager " + times(ratio(results, unit, "eager")) + "   ours/compile " +
          times(ratio(results, unit, "compile")))


def print_failures(workload, results):
    for side, r in results.items():
        if not r["ok"] and r["stderr_tail"]:
            print(f"\n---- {workload} {side}: {r['error']}; the end of its standard error:")
            print(r["stderr_tail"].rstrip())


def bars(report):
    lines = []
    for workload, against, needed in BARS:
        if workload not in report:
            continue
        unit, results = report[workload]["unit"], report[workload]["sides"]
        got = ratio(results, unit, against)
        state = "unknown (a side failed)" if got is None else \
            f"{'met' if got >= needed else 'NOT met'} ({got:.2f})"
        lines.append(f"  {workload} ours/{against} >= {needed}: {state}")
    return lines


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("sexpgpu", help="the sexpgpu binary (finds the cuda plugin)")
    ap.add_argument("source", help="the source directory (examples/, bench/)")
    ap.add_argument("--gpt2-steps", type=int, default=40)
    ap.add_argument("--gpt2-warmup", type=int, default=10)
    ap.add_argument("--mlp-steps", type=int, default=1000)
    ap.add_argument("--mlp-warmup", type=int, default=100,
                    help="a multiple of 50: ours reports every 50 steps")
    ap.add_argument("--timeout", type=float, default=300, help="seconds for one side at most")
    ap.add_argument("--budget", type=float, default=540, help="seconds for all the sides")
    ap.add_argument("--only", nargs="+", choices=["gpt2", "mlp"], default=["gpt2", "mlp"])
    ap.add_argument("--device", default="cuda", help="cpu: a check of this script, not a result")
    ap.add_argument("--tiny", action="store_true", help="gpt2.lisp's small-test sizes")
    ap.add_argument("--also-ours", action="append", default=[], metavar="NAME=VALUE",
                    help="our side once more with this environment variable set")
    args = ap.parse_args()
    for spec in args.also_ours:
        if "=" not in spec or not spec.split("=", 1)[0]:
            ap.error(f"--also-ours {spec}: write NAME=VALUE")
    if args.mlp_warmup % 50:
        ap.error("--mlp-warmup must be a multiple of 50 (ours reports every 50 steps)")
    args.sexpgpu = os.path.abspath(args.sexpgpu)
    args.source = os.path.abspath(args.source)
    return args


def main():
    args = parse_args()
    budget = Budget(args.budget, args.timeout)
    report = {}
    data = os.environ.get("SEXPGPU_DATA", "(unset: mlp.lisp's data only in /usr/share/datasets)")
    print(f"SEXPGPU_DATA={data}; every child also gets NCCL_NVLS_ENABLE=0", flush=True)
    with tempfile.TemporaryDirectory(prefix="gpu_vs_torch.") as tmp:
        for workload in args.only:
            title, unit, results = (gpt2 if workload == "gpt2" else mlp)(args, budget, tmp)
            report[workload] = {"title": title, "unit": unit, "sides": results}
    for workload, r in report.items():
        print_failures(workload, r["sides"])
    # Before the tables, without the standard error tails: what a reader of
    # the output's end sees is the tables and the bars.
    print("\nRESULT " + json.dumps({w: {side: {k: v for k, v in res.items() if k != "stderr_tail"}
                                          for side, res in r["sides"].items()}
                                      for w, r in report.items()}))
    devices = {r.get("device") for w in report.values() for r in w["sides"].values() if r["ok"]}
    print(f"\ndevice: {', '.join(sorted(d for d in devices if d)) or 'none ran'}")
    for r in report.values():
        print_table(r["title"], r["unit"], r["sides"])
    print("\nthe issue's bars:")
    print("\n".join(bars(report)))
    every_side_ran = all(s["ok"] for r in report.values() for s in r["sides"].values())
    return 0 if every_side_ran else 1


if __name__ == "__main__":
    sys.exit(main())
