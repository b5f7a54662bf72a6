#!/usr/bin/env python3
"""Training throughput on the CPU: the real `sexpgpu run` of two examples
next to the same model, optimizer and batches in PyTorch, with the ratio.

  /usr/bin/python3 bench/train_vs_torch.py [BINARY] [--threads 1 2] [--repeats 3]

BINARY defaults to build/core/sexpgpu; it must find the cpu plugin (it does
in its build tree). Work, the same on both sides:
  mlp     examples/mlp.lisp: 784-256-10 MLP, batch 128, Fashion-MNIST (u8
          pixels / 255 in the step, a fresh permutation every epoch, the
          last partial batch dropped), cross-entropy and the accuracy
          metric, AdamW (weight decay 0) with warm-up-cosine (100 steps);
  charlm  examples/charlm.lisp --variant tiny: pre-norm transformer, depth
          2, width 64, 2 heads, 64 tokens, batch 32, on the fortunes text
          (non-overlapping 64-byte windows, permuted), exact GELU, tied
          output head, AdamW groups (2-D parameters weight decay 0.1, the
          rest 0), warm-up-cosine, gradient clipping at norm 1.0.
What is timed: steady-state milliseconds per optimizer step (loading the
batch, forward, backward, update, reading the loss back), over steps
WARMUP+1..STEPS. Ours comes from the run's step events: each carries the
mean `step-ms` of the steps since the previous one, and the loop's clock
covers the step only (evaluations, checkpoints and logging run outside it).
PyTorch's loop is timed with perf_counter over the same steps.
ratio = PyTorch's ms per step over ours: above 1, SexpGPU is faster.

Each side runs in its own process with OPENBLAS_NUM_THREADS and
OMP_NUM_THREADS set to the thread count (torch.set_num_threads alone leaves
Debian's PyTorch two OpenBLAS threads); ours also gets --threads.
--ours-blas-threads and --torch-blas-threads set OPENBLAS_NUM_THREADS apart:
at 2 threads PyTorch is far faster with 1 OpenBLAS thread (its OpenMP and
OpenBLAS workers otherwise fight over the two cores), so a fair 2-thread
comparison reports that configuration too (bench/RESULTS.md).
Honest numbers need a quiet machine: before each run the script waits (up
to --max-wait seconds) until other processes use less than --max-busy cores
(from /proc/stat over two idle seconds), and it measures what they used
during the run (the machine's busy time less the run's own CPU time); a run
disturbed above --max-busy is run again (up to --attempts times), and one
kept anyway is reported as not honest (exit status 1).
"""
import argparse
import gzip
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
# The data both sides read: Debian's packages, or copies where $SEXPGPU_DATA
# (holding fashion-mnist/) and $SEXPGPU_FORTUNES say (the GPU machine has
# neither package: bench/device-deps.sh copies them).
FMNIST = os.path.join(os.environ.get("SEXPGPU_DATA", "/usr/share/datasets"), "fashion-mnist")
FORTUNES_DIR = os.environ.get("SEXPGPU_FORTUNES", "/usr/share/games/fortunes")
FORTUNES = [os.path.join(FORTUNES_DIR, name)
            for name in ("cookie", "computers", "definitions", "people")]
WARMUP_LR_STEPS = 100  # both examples: (optim:warmup-cosine lr :warmup 100)

# Per work: the run file and selection, the batch, tokens per example.
WORKS = {
    "mlp": {"file": "examples/mlp.lisp", "args": [], "batch": 128, "tokens": 0},
    "charlm": {"file": "examples/charlm.lisp", "args": ["--variant", "tiny"], "batch": 32,
               "tokens": 64},
}


# ---- the machine -------------------------------------------------------------------------

TICK = os.sysconf("SC_CLK_TCK")


def busy_seconds():
    """CPU seconds the whole machine has spent busy since boot (/proc/stat)."""
    with open("/proc/stat") as f:
        fields = [int(v) for v in f.readline().split()[1:]]
    return (sum(fields[:8]) - fields[3] - fields[4]) / TICK


def busy_cores(seconds=2.0):
    """Cores busy over `seconds` while this script runs nothing: other people's load."""
    before = busy_seconds()
    time.sleep(seconds)
    return (busy_seconds() - before) / seconds


def run_measured(cmd, env):
    """Runs cmd; returns (result, wall s, its user s, its sys s, cores the rest
    of the machine kept busy meanwhile: the interference it suffered)."""
    before, busy0 = resource.getrusage(resource.RUSAGE_CHILDREN), busy_seconds()
    start = time.perf_counter()
    res = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - start
    after, busy1 = resource.getrusage(resource.RUSAGE_CHILDREN), busy_seconds()
    user, sys_ = after.ru_utime - before.ru_utime, after.ru_stime - before.ru_stime
    others = max(0.0, (busy1 - busy0) - user - sys_) / wall
    return res, wall, user, sys_, others


def wait_until_quiet(max_busy, max_wait):
    """Waits until others use under max_busy cores; returns (busy, waited_s, quiet)."""
    start = time.time()
    while True:
        busy = busy_cores()
        waited = time.time() - start
        if busy < max_busy:
            return busy, waited, True
        if waited > max_wait:
            return busy, waited, False
        print(f"  (machine busy: {busy:.2f} cores in use by others; waiting)", file=sys.stderr)
        time.sleep(20)


def cpu_model():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return "unknown"


def thread_env(threads):
    return dict(os.environ, OPENBLAS_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads))


# ---- our side ----------------------------------------------------------------------------

def steady_ms(events, warmup):
    """Mean ms per step over the steps after `warmup`, from the step events:
    an event at step s carries the mean step-ms of the steps since the
    previous step event."""
    steps = sorted((e["step"], e["metrics"]) for e in events if e.get("kind") == "step")
    total_ms, counted, previous = 0.0, 0, 0
    for step, metrics in steps:
        if previous >= warmup:
            total_ms += metrics["step-ms"] * (step - previous)
            counted += step - previous
        previous = step
    if counted == 0:
        raise RuntimeError(f"no step events after step {warmup}")
    return total_ms / counted, counted, steps[-1][1].get("train/loss")


def ours(binary, work, threads, steps, warmup, blas_threads):
    spec = WORKS[work]
    with tempfile.TemporaryDirectory(prefix="train_vs_torch.") as tmp:
        corpus = ["--set", "corpus=(%s)" % " ".join('"%s"' % p for p in FORTUNES)]
        cmd = [binary, "run", os.path.join(ROOT, spec["file"]), *spec["args"],
               *(corpus if work == "charlm" else []), "--steps",
               str(steps), "--json", "--quiet", "--out", os.path.join(tmp, "run"), "--threads",
               str(threads), "--device", "cpu"]
        env = thread_env(threads)
        env["OPENBLAS_NUM_THREADS"] = str(blas_threads)
        res, wall, user, sys_, others = run_measured(cmd, env)
        if res.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} exited {res.returncode}:\n{res.stderr[-2000:]}")
        events = [json.loads(line) for line in res.stdout.splitlines() if line.startswith("{")]
    ms, counted, loss = steady_ms(events, warmup)
    return {"ms": ms, "steps": counted, "loss": loss, "wall_s": wall, "user_s": user,
            "sys_s": sys_, "others": others, "command": " ".join(cmd)}


# ---- PyTorch's side (runs in its own process: --peer) ----------------------------------------

def warmup_cosine(total):
    """optim:warmup-cosine's factor at step s (from 0), final 0."""
    def factor(s):
        warm = min(1.0, s / WARMUP_LR_STEPS)
        q = min(1.0, max(0.0, (s - WARMUP_LR_STEPS) / max(1.0, total - WARMUP_LR_STEPS)))
        return warm * 0.5 * (1 + math.cos(math.pi * q))
    return factor


def timed_loop(step, steps, warmup):
    """Runs steps 0..steps-1; the time of the steps after `warmup`, in ms per step."""
    loss = None
    for s in range(warmup):
        loss = step(s)
    start = time.perf_counter()
    for s in range(warmup, steps):
        loss = step(s)
    return (time.perf_counter() - start) * 1000 / (steps - warmup), loss


def epoch_batches(torch, n, batch, generator, drop_last):
    """Index tensors of successive batches, each epoch in a fresh permutation."""
    while True:
        perm = torch.randperm(n, generator=generator)
        end = n - n % batch if drop_last else n
        for i in range(0, end, batch):
            yield perm[i:i + batch]


def torch_mlp(torch, steps, warmup, foreach):
    import numpy as np
    F = torch.nn.functional
    with gzip.open(os.path.join(FMNIST, "train-images-idx3-ubyte.gz")) as f:
        pixels = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 784)
        images = torch.from_numpy(pixels.copy())
    with gzip.open(os.path.join(FMNIST, "train-labels-idx1-ubyte.gz")) as f:
        labels = torch.from_numpy(np.frombuffer(f.read(), np.uint8, offset=8).astype(np.int64))
    g = torch.Generator().manual_seed(0)

    def bound(fan_in, *shape):  # nn:linear's default, PyTorch's
        return ((torch.rand(*shape, generator=g) * 2 - 1) / math.sqrt(fan_in)).requires_grad_()

    w1, b1, w2, b2 = bound(784, 784, 256), bound(784, 256), bound(256, 256, 10), bound(256, 10)
    opt = torch.optim.AdamW([w1, b1, w2, b2], lr=1e-3, weight_decay=0.0, foreach=foreach)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, warmup_cosine(steps))
    batches = epoch_batches(torch, images.shape[0], 128, g, drop_last=True)

    def step(_):
        idx = next(batches)
        x, y = images[idx].float() / 255.0, labels[idx]
        logits = torch.relu(x @ w1 + b1) @ w2 + b2
        loss = F.cross_entropy(logits, y)
        acc = (logits.detach().argmax(-1) == y).float().mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        acc.item()
        return loss.item()

    return timed_loop(step, steps, warmup)


def torch_charlm(torch, steps, warmup, foreach):
    F = torch.nn.functional
    depth, width, heads, seq, batch = 2, 64, 2, 64, 32
    text = b"".join(open(p, "rb").read() for p in FORTUNES)
    tokens = torch.frombuffer(bytearray(text), dtype=torch.uint8).long()
    examples = (len(text) - 1) // seq
    train = int(math.floor(0.9 * examples))  # :split (0.0 0.9)
    g = torch.Generator().manual_seed(0)

    def param(*shape, std=None, fill=None, fan_in=None):
        if std is not None:
            t = torch.randn(*shape, generator=g) * std
        elif fan_in is not None:
            t = (torch.rand(*shape, generator=g) * 2 - 1) / math.sqrt(fan_in)
        else:
            t = torch.full(shape, float(fill))
        return t.requires_grad_()

    def linear_params(n_in, n_out):
        return param(n_in, n_out, fan_in=n_in), param(n_out, fan_in=n_in)

    embed, pos = param(256, width, std=1.0), param(seq, width, std=0.02)
    blocks = [{"ln1": (param(width, fill=1), param(width, fill=0)),
               "qkv": linear_params(width, 3 * width), "proj": linear_params(width, width),
               "ln2": (param(width, fill=1), param(width, fill=0)),
               "fc": linear_params(width, 4 * width), "out": linear_params(4 * width, width)}
              for _ in range(depth)]
    ln_f = (param(width, fill=1), param(width, fill=0))
    params = [embed, pos] + [t for b in blocks for pair in b.values() for t in pair] + list(ln_f)
    causal = torch.ones(seq, seq, dtype=torch.bool).tril()

    def linear(x, wb):
        return x @ wb[0] + wb[1]

    def split_heads(t):
        b, n, _ = t.shape
        return t.reshape(b, n, heads, width // heads).permute(0, 2, 1, 3)

    def attention(x, blk):
        q, k, v = linear(x, blk["qkv"]).split(width, -1)
        q, k, v = split_heads(q), split_heads(k), split_heads(v)
        s = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(width // heads))
        y = torch.softmax(s.masked_fill(~causal, float("-inf")), -1) @ v
        b, h, n, d = y.shape
        return linear(y.permute(0, 2, 1, 3).reshape(b, n, h * d), blk["proj"])

    def model(ids):
        x = F.embedding(ids, embed) + pos
        for blk in blocks:
            x = x + attention(F.layer_norm(x, (width,), *blk["ln1"]), blk)
            h = F.gelu(linear(F.layer_norm(x, (width,), *blk["ln2"]), blk["fc"]))  # exact GELU
            x = x + linear(h, blk["out"])
        return F.layer_norm(x, (width,), *ln_f) @ embed.t()

    decay = [p for p in params if p.dim() == 2]
    no_decay = [p for p in params if p.dim() != 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                             {"params": no_decay, "weight_decay": 0.0}], lr=1e-3, foreach=foreach)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, warmup_cosine(steps))
    batches = epoch_batches(torch, train, batch, g, drop_last=False)

    def step(_):
        starts = next(batches) * seq
        window = tokens[starts[:, None] + torch.arange(seq + 1)]
        x, y = window[:, :-1], window[:, 1:]
        loss = F.cross_entropy(model(x).reshape(-1, 256), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        sched.step()
        return loss.item()

    return timed_loop(step, steps, warmup)


def peer_main(args):
    try:
        import torch
    except ImportError as e:
        print(json.dumps({"error": f"PyTorch is not installed for {sys.executable}: {e}"}))
        return 2
    torch.set_num_threads(args.threads[0])
    fn = torch_mlp if args.peer == "mlp" else torch_charlm
    ms, loss = fn(torch, args.steps, args.warmup, args.foreach)
    print(json.dumps({"ms": ms, "loss": loss, "torch": torch.__version__,
                      "torch_threads": torch.get_num_threads()}))
    return 0


def theirs(work, threads, steps, warmup, foreach, blas_threads):
    cmd = [sys.executable, os.path.abspath(__file__), "--peer", work, "--threads", str(threads),
           "--steps", str(steps), "--warmup", str(warmup)]
    if foreach:
        cmd.append("--foreach")
    env = thread_env(threads)
    env["OPENBLAS_NUM_THREADS"] = str(blas_threads)
    res, wall, user, sys_, others = run_measured(cmd, env)
    lines = res.stdout.strip().splitlines()
    out = json.loads(lines[-1]) if lines else {"error": res.stderr[-2000:]}
    if res.returncode != 0 or "error" in out:
        raise RuntimeError(out.get("error") or res.stderr[-2000:])
    out.update(wall_s=wall, user_s=user, sys_s=sys_, others=others)
    return out


# ---- the comparison --------------------------------------------------------------------------

def torch_version():
    res = subprocess.run([sys.executable, "-c", "import torch; print(torch.__version__)"],
                         capture_output=True, text=True)
    return res.stdout.strip() if res.returncode == 0 else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("binary", nargs="?", default=os.path.join(ROOT, "build", "core", "sexpgpu"))
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--works", nargs="+", default=list(WORKS), choices=list(WORKS))
    ap.add_argument("--mlp-steps", type=int, default=2000)
    ap.add_argument("--charlm-steps", type=int, default=300,
                    help="at most 359: one epoch of full batches of the training split")
    ap.add_argument("--warmup", type=int, default=50,
                    help="steps left out of the timing (the first log interval of both files)")
    ap.add_argument("--ours-blas-threads", type=int,
                    help="OPENBLAS_NUM_THREADS for sexpgpu (no effect since sexpgpu sets it to 1 itself)")
    ap.add_argument("--torch-blas-threads", type=int,
                    help="OPENBLAS_NUM_THREADS for PyTorch (default: the thread count; 1 with "
                    "2 threads avoids OpenMP and OpenBLAS workers fighting over the cores)")
    ap.add_argument("--foreach", action="store_true",
                    help="PyTorch's AdamW with foreach=True (1.13's default on CPU is False)")
    ap.add_argument("--max-busy", type=float, default=0.3,
                    help="other processes' busy cores allowed before and during a run")
    ap.add_argument("--max-wait", type=float, default=1200,
                    help="seconds to wait for a quiet machine before each run")
    ap.add_argument("--attempts", type=int, default=4,
                    help="runs of one measurement before a disturbed one is kept")
    ap.add_argument("--peer", choices=list(WORKS), help=argparse.SUPPRESS)
    ap.add_argument("--steps", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.peer:
        return peer_main(args)

    version = torch_version()
    if version is None:
        print(f"PyTorch is not installed for {sys.executable}: nothing to compare with (Debian's "
              "python3-torch is for /usr/bin/python3)", file=sys.stderr)
        return 2
    if not os.access(args.binary, os.X_OK):
        print(f"{args.binary}: no such executable (give the sexpgpu binary)", file=sys.stderr)
        return 2
    steps = {"mlp": args.mlp_steps, "charlm": args.charlm_steps}
    print(f"torch {version}; {os.cpu_count()} cores, {cpu_model()}; load average at start "
          f"{' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    print(f"steps timed: {args.warmup + 1}..N, N = " +
          ", ".join(f"{w} {steps[w]}" for w in args.works) + f"; median of {args.repeats}")
    rows, log = [], {"unquiet": 0, "retried": 0, "before": [], "during": []}

    def measure(label, fn):
        """fn() on a quiet machine; a run that others disturbed is run again."""
        for attempt in range(args.attempts):
            busy, _, quiet = wait_until_quiet(args.max_busy, args.max_wait)
            result = fn()
            print(f"  {label}: {result['ms']:.3f} ms/step (others: {busy:.2f} cores before, "
                  f"{result['others']:.2f} during)", file=sys.stderr, flush=True)
            if quiet and result["others"] < args.max_busy:
                break
            log["retried"] += attempt + 1 < args.attempts
        else:
            log["unquiet"] += 1
        log["before"].append(busy)
        log["during"].append(result["others"])
        return result

    for work in args.works:
        spec = WORKS[work]
        for threads in args.threads:
            blas = args.ours_blas_threads or threads
            a_runs, b_runs = [], []
            for _ in range(args.repeats):
                a_runs.append(measure(f"{work} {threads}t sexpgpu", lambda: ours(
                    args.binary, work, threads, steps[work], args.warmup, blas)))
                b_runs.append(measure(f"{work} {threads}t torch", lambda: theirs(
                    work, threads, steps[work], args.warmup, args.foreach,
                    args.torch_blas_threads or threads)))
            a = statistics.median(r["ms"] for r in a_runs)
            b = statistics.median(r["ms"] for r in b_runs)
            rows.append((work, threads, spec, a, b, a_runs, b_runs))
    per = lambda spec: "tok/s" if spec["tokens"] else "ex/s"
    print(f"\n{'work':<8}{'thr':>4}{'sexpgpu ms':>12}{'torch ms':>10}{'ratio':>7}"
          f"{'sexpgpu/s':>12}{'torch/s':>10}  unit   {'steps/s ours':>12}{'torch':>8}")
    for work, threads, spec, a, b, _, _ in rows:
        unit = spec["batch"] * (spec["tokens"] or 1)
        print(f"{work:<8}{threads:>4}{a:>12.3f}{b:>10.3f}{b / a:>7.2f}"
              f"{unit * 1000 / a:>12.0f}{unit * 1000 / b:>10.0f}  {per(spec):<6}"
              f"{1000 / a:>12.1f}{1000 / b:>8.1f}")
    print("\nevery run (ms per step), final train loss, and CPU time of the whole process "
          "(user+sys s, sexpgpu's includes compiling and evaluations):")
    for work, threads, _, _, _, a_runs, b_runs in rows:
        print(f"  {work} {threads}t  sexpgpu " + " ".join(f"{r['ms']:.3f}" for r in a_runs) +
              f"  loss {a_runs[-1]['loss']:.3f}  cpu " +
              " ".join(f"{r['user_s']:.1f}+{r['sys_s']:.1f}" for r in a_runs))
        print(f"  {work} {threads}t  torch   " + " ".join(f"{r['ms']:.3f}" for r in b_runs) +
              f"  loss {b_runs[-1]['loss']:.3f}  cpu " +
              " ".join(f"{r['user_s']:.1f}+{r['sys_s']:.1f}" for r in b_runs))
    print(f"\nother processes' load: {min(log['before']):.2f}..{max(log['before']):.2f} busy "
          f"cores just before the kept runs, {min(log['during']):.2f}..{max(log['during']):.2f} "
          f"during them; {log['retried']} disturbed run(s) repeated; load average at end "
          f"{' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    if log["unquiet"]:
        print(f"WARNING: {log['unquiet']} measurement(s) kept although the machine was busy "
              f"(after {args.attempts} attempts or {args.max_wait:.0f} s of waiting): those "
              "numbers are not honest")
    print(f"sexpgpu command (first run): {rows[0][5][0]['command']}")
    return 1 if log["unquiet"] else 0


if __name__ == "__main__":
    sys.exit(main())
