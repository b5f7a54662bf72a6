#!/usr/bin/env python3
"""PyTorch's side of bench/gpu_vs_torch.py: the training of examples/gpt2.lisp
(and of examples/mlp.lisp) written the way nanoGPT writes it, timed on one GPU.

  nanogpt_torch.py [--model gpt2|mlp] [--mode eager|compile] [--batch 16 --seq 1024]
                   [--steps N --warmup W] [--device cuda|cpu] [--tiny]

gpt2 mirrors what examples/gpt2.lisp builds, not nanoGPT's own choices where
they differ: the vocabulary is the example's 50304 (50257 padded to a multiple
of 128, as nanoGPT pads it too); token and position tables are drawn from
normal(0, 0.02), every linear layer (with its bias) and LayerNorm keeps
PyTorch's default initialisation, as sexpgpu/nn's layers do (nanoGPT's scaled
normal init is not used); 12 pre-LN blocks, attention through
scaled_dot_product_attention with is_causal (only the flash kernel enabled on
the GPU), GELU (tanh) MLP of 4x width, final LN, the head tied to the token
table, no dropout. bf16 autocast over f32 parameters (the example's
:precision :bf16 with f32 master weights), the loss in f32. One AdamW group
over every parameter (lr 6e-4, betas 0.9/0.95, weight decay 0.1, fused),
optim:warmup-cosine (10 steps up, a half cosine to 0 at the last step),
gradients clipped to global norm 1.0.

mlp mirrors examples/mlp.lisp: 784-256-10 with biases, ReLU, u8 pixels / 255
in the step, cross-entropy and the accuracy metric, f32 (no TF32), AdamW
(betas 0.9/0.999, weight decay 0, fused) with warm-up-cosine (100 steps to
1e-3).

The data are random tokens (random pixels and labels for mlp) made once on the
device: data loading is not what is measured here. --mode compile wraps the
model (forward and loss) in torch.compile, as nanoGPT does; the optimizer
step is not compiled. Nothing is read back to the host between timed steps.

Prints one JSON line. gpt2: step_ms is the median over the timed steps
(WARMUP+1..STEPS) of CUDA-event times, tokens_per_s = batch·seq / step time,
mfu against 989e12 FLOP/s (H100/H200 dense bf16). mlp: steps_per_s is the
median over windows of --window steps, each timed between two
synchronisations. Both: peak_memory_bytes (torch.cuda.max_memory_allocated),
time_to_first_step_s (from the start of this process to the end of the first
optimizer step, torch.compile included).
"""
import argparse
import contextlib
import json
import math
import os
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

PEAK_BF16_FLOPS = 989e12  # H100 and H200 SXM, dense bf16

GPT2_SIZES = {"vocab": 50304, "seq": 1024, "width": 768, "depth": 12, "heads": 12, "batch": 16}
# examples/gpt2.lisp's small-test variant: for a CPU check of the code.
GPT2_TINY = {"vocab": 512, "seq": 64, "width": 128, "depth": 2, "heads": 4, "batch": 4}
MLP_SIZES = {"width": 256, "batch": 128}

# Each example's optimizer, schedule and precision.
TRAINING = {
    "gpt2": {"lr": 6e-4, "lr_warmup": 10, "betas": (0.9, 0.95), "weight_decay": 0.1,
             "clip_norm": 1.0, "bf16": True},
    "mlp": {"lr": 1e-3, "lr_warmup": 100, "betas": (0.9, 0.999), "weight_decay": 0.0,
            "clip_norm": None, "bf16": False},
}


def seconds_since_process_start():
    """Seconds since the kernel started this process (/proc/self/stat's
    starttime, in clock ticks of the boot-time clock): the interpreter's own
    start-up and `import torch` count."""
    with open("/proc/self/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    start_ticks = int(fields[19])  # field 22 of proc(5); fields[0] is field 3
    return time.clock_gettime(time.CLOCK_BOOTTIME) - start_ticks / os.sysconf("SC_CLK_TCK")


def gpt2_flops_per_token(params, depth, seq, width):
    """nanoGPT's estimate_mfu (PaLM, appendix B): 6N + 12·L·T·d FLOPs per token
    for forward and backward, N the parameters less the position table
    (nanoGPT's get_num_params(); the token table counts, being the head), the
    second term the attention scores and their weighted sum over T positions."""
    return 6 * (params - seq * width) + 12 * depth * seq * width


def warmup_cosine(step, peak, warmup, total):
    """optim:warmup-cosine with final 0 at `step` steps done."""
    rise = 1.0 if warmup == 0 else min(1.0, step / warmup)
    progress = min(1.0, max(0.0, (step - warmup) / max(1.0, total - warmup)))
    return peak * rise * 0.5 * (1 + math.cos(math.pi * progress))


# ---- the models ------------------------------------------------------------------------------

def causal_attention(q, k, v):
    if hasattr(F, "scaled_dot_product_attention"):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)
    # PyTorch before 2.0 (the CPU check only): the same computation, unfused.
    t = q.shape[-2]
    mask = torch.ones(t, t, dtype=torch.bool, device=q.device).tril()
    scores = (q @ k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
    return torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1) @ v


class SelfAttention(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)

    def forward(self, x):
        b, t, w = x.shape
        q, k, v = (z.view(b, t, self.heads, w // self.heads).transpose(1, 2)
                   for z in self.qkv(x).split(w, dim=2))
        return self.proj(causal_attention(q, k, v).transpose(1, 2).reshape(b, t, w))


class Block(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.ln1 = nn.LayerNorm(width)
        self.attn = SelfAttention(width, heads)
        self.ln2 = nn.LayerNorm(width)
        self.fc = nn.Linear(width, 4 * width)
        self.proj = nn.Linear(4 * width, width)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.proj(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, vocab, seq, width, depth, heads):
        super().__init__()
        self.wte = nn.Embedding(vocab, width)
        nn.init.normal_(self.wte.weight, std=0.02)
        self.wpe = nn.Parameter(torch.randn(seq, width) * 0.02)
        self.blocks = nn.ModuleList(Block(width, heads) for _ in range(depth))
        self.ln_f = nn.LayerNorm(width)

    def forward(self, idx, targets):
        x = self.wte(idx) + self.wpe
        for block in self.blocks:
            x = block(x)
        logits = F.linear(self.ln_f(x), self.wte.weight)
        # The loss in f32, as the example's cross-entropy widens bf16 logits.
        return (F.cross_entropy(logits.float().view(-1, logits.shape[-1]), targets.view(-1)),)


class MLP(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.fc1 = nn.Linear(784, width)
        self.fc2 = nn.Linear(width, 10)

    def forward(self, pixels, labels):
        logits = self.fc2(torch.relu(self.fc1(pixels.flatten(1).float() / 255.0)))
        accuracy = (logits.argmax(-1) == labels).float().mean()
        return F.cross_entropy(logits, labels), accuracy


def gpt2_setup(args, device):
    model = GPT(args.vocab, args.seq, args.width, args.depth, args.heads).to(device)
    g = torch.Generator(device=device).manual_seed(1)

    def tokens():
        return torch.randint(0, args.vocab, (args.batch, args.seq), device=device, generator=g)

    return model, [(tokens(), tokens()) for _ in range(4)]


def mlp_setup(args, device):
    model = MLP(args.width).to(device)
    g = torch.Generator(device=device).manual_seed(1)
    batches = [(torch.randint(0, 256, (args.batch, 28, 28), dtype=torch.uint8, device=device,
                              generator=g),
                torch.randint(0, 10, (args.batch,), device=device, generator=g))
               for _ in range(8)]
    return model, batches


# ---- training --------------------------------------------------------------------------------

def make_optimizer(params, device, spec):
    fused = {"fused": True} if device.type == "cuda" else {}
    return torch.optim.AdamW(params, lr=spec["lr"], betas=spec["betas"], eps=1e-8,
                             weight_decay=spec["weight_decay"], **fused)


def make_step(model, batches, spec, device, total_steps):
    """The function that runs optimizer step number s (0 for the first)."""
    params = [p for p in model.parameters() if p.requires_grad]
    opt = make_optimizer(params, device, spec)
    forward = model
    if spec["compile"]:
        forward = torch.compile(model)
    autocast = (lambda: torch.autocast(device.type, dtype=torch.bfloat16)) if spec["bf16"] \
        else contextlib.nullcontext

    def step(s):
        x, y = batches[s % len(batches)]
        with autocast():
            loss = forward(x, y)[0]
        loss.backward()
        if spec["clip_norm"]:
            torch.nn.utils.clip_grad_norm_(params, spec["clip_norm"])
        lr = warmup_cosine(s, spec["lr"], spec["lr_warmup"], total_steps)
        for group in opt.param_groups:
            group["lr"] = lr
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss

    return step


def synchronize(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def first_step(step, device):
    """Runs step 0; seconds from process start to its end (compilation included)."""
    step(0)
    synchronize(device)
    return seconds_since_process_start()


def per_step_ms(step, device, first, last):
    """Runs steps first..last-1; each one's milliseconds (CUDA events on the
    GPU) and the last step's loss."""
    if device.type != "cuda":
        times = []
        for s in range(first, last):
            t0 = time.perf_counter()
            loss = step(s)
            times.append((time.perf_counter() - t0) * 1000)
        return times, loss.item()
    marks = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
             for _ in range(first, last)]
    for s, (start, end) in zip(range(first, last), marks):
        start.record()
        loss = step(s)
        end.record()
    synchronize(device)
    return [start.elapsed_time(end) for start, end in marks], loss.item()


def windows_per_s(step, device, first, last, window):
    """Steps per second over successive windows of `window` steps from `first`."""
    rates = []
    for begin in range(first, last - window + 1, window):
        synchronize(device)
        t0 = time.perf_counter()
        for s in range(begin, begin + window):
            step(s)
        synchronize(device)
        rates.append(window / (time.perf_counter() - t0))
    return rates


def write_profile(step, device, first, path):
    """Three more steps under torch.profiler: each GPU kernel's total time
    over them, largest first, into `path` (what the sexpgpu profile's
    per-kernel table is compared with)."""
    from torch.profiler import ProfilerActivity, profile
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    with profile(activities=activities) as prof:
        for s in range(first, first + 3):
            step(s)
        synchronize(device)
    with open(path, "w") as out:
        out.write(prof.key_averages().table(sort_by="self_device_time_total", row_limit=60,
                                            max_name_column_width=110))


def peak_memory(device):
    return torch.cuda.max_memory_allocated(device) if device.type == "cuda" else None


def run_gpt2(args, device, spec):
    model, batches = gpt2_setup(args, device)
    params = sum(p.numel() for p in model.parameters())
    step = make_step(model, batches, spec, device, args.steps)
    to_first = first_step(step, device)
    for s in range(1, args.warmup):
        step(s)
    times, loss = per_step_ms(step, device, args.warmup, args.steps)
    if args.profile:
        write_profile(step, device, args.steps, args.profile)
    step_ms = statistics.median(times)
    tokens_per_s = args.batch * args.seq / (step_ms / 1000)
    flops = gpt2_flops_per_token(params, args.depth, args.seq, args.width)
    return {"tokens_per_s": tokens_per_s, "step_ms": step_ms,
            "mfu": flops * tokens_per_s / PEAK_BF16_FLOPS, "flops_per_token": flops,
            "peak_memory_bytes": peak_memory(device), "time_to_first_step_s": to_first,
            "params": params, "timed_steps": len(times), "final_loss": loss,
            "batch": args.batch, "seq": args.seq, "vocab": args.vocab, "depth": args.depth,
            "width": args.width, "heads": args.heads,
            "attention": "flash" if device.type == "cuda" else "cpu"}


def run_mlp(args, device, spec):
    model, batches = mlp_setup(args, device)
    params = sum(p.numel() for p in model.parameters())
    step = make_step(model, batches, spec, device, args.steps)
    to_first = first_step(step, device)
    for s in range(1, args.warmup):
        step(s)
    rates = windows_per_s(step, device, args.warmup, args.steps, args.window)
    if not rates:
        raise SystemExit(f"--steps {args.steps} leaves no window of {args.window} steps after "
                         f"--warmup {args.warmup}")
    steps_per_s = statistics.median(rates)
    return {"steps_per_s": steps_per_s, "step_ms": 1000 / steps_per_s,
            "peak_memory_bytes": peak_memory(device), "time_to_first_step_s": to_first,
            "params": params, "windows": len(rates), "window": args.window,
            "batch": args.batch, "width": args.width}


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", choices=["gpt2", "mlp"], default="gpt2")
    ap.add_argument("--mode", choices=["eager", "compile"], default="eager")
    ap.add_argument("--device", default="cuda", help="cuda (the benchmark) or cpu (a check)")
    ap.add_argument("--tiny", action="store_true",
                    help="gpt2.lisp's small-test sizes, to check the code on a CPU")
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=10, help="untimed steps, compilation's too")
    ap.add_argument("--window", type=int, default=50, help="mlp: steps per timed window")
    ap.add_argument("--profile", metavar="FILE",
                    help="gpt2: after timing, profile 3 steps and write a per-kernel table here")
    for name in ("vocab", "seq", "width", "depth", "heads", "batch"):
        ap.add_argument("--" + name, type=int)
    args = ap.parse_args()
    sizes = MLP_SIZES if args.model == "mlp" else GPT2_TINY if args.tiny else GPT2_SIZES
    for name, value in sizes.items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    if not 1 <= args.warmup < args.steps:
        ap.error("need 1 <= --warmup < --steps: step 1 is always a warm-up step")
    return args


def main():
    args = parse_args()
    device = torch.device(args.device)
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise SystemExit("no CUDA device visible to PyTorch " + torch.__version__)
        # Only the flash kernel: an input it cannot take is an error, not a slower kernel.
        torch.backends.cuda.enable_math_sdp(False)
        torch.backends.cuda.enable_mem_efficient_sdp(False)
        if hasattr(torch.backends.cuda, "enable_cudnn_sdp"):
            torch.backends.cuda.enable_cudnn_sdp(False)
    if args.mode == "compile" and not hasattr(torch, "compile"):
        raise SystemExit(f"PyTorch {torch.__version__} has no torch.compile (2.0 or later has)")
    torch.manual_seed(0)
    spec = dict(TRAINING[args.model], compile=args.mode == "compile")
    result = (run_gpt2 if args.model == "gpt2" else run_mlp)(args, device, spec)
    gpu = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    print(json.dumps({"model": args.model, "mode": args.mode, **result, "steps": args.steps,
                      "warmup": args.warmup, "device": gpu, "torch": torch.__version__}))


if __name__ == "__main__":
    sys.exit(main())
