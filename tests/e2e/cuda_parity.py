"""The CUDA device trains as the CPU device does (issue: the CUDA device).

Runs the first 50 steps of examples/mlp.lisp and of examples/charlm.lisp
--variant tiny on both devices from the same seed and compares every step's
loss: f32 within 1e-4 relative, bf16 within 2e-2. Then --deterministic on
the GPU twice gives identical losses, a deterministic run stopped with
SIGTERM and resumed ends with the same bytes as one never stopped, and the
MLP trained on the GPU reaches its test-accuracy target.

Needs a GPU: exits 77 (a skip) when `sexpgpu doctor` says the cuda device
cannot serve, printing why. Needs the data of the examples (Fashion-MNIST,
fortunes): $SEXPGPU_DATA may point at a copy; the corpus of charlm is
overridden by $SEXPGPU_FORTUNES when set.

    cuda_parity.py SEXPGPU SOURCE_DIR
"""
import filecmp
import json
import math
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

binary, source = sys.argv[1], sys.argv[2]
failures = 0


def cuda_unavailable():
    r = subprocess.run([binary, "doctor", "--json"], capture_output=True, text=True)
    try:
        report = json.loads(r.stdout)
    except json.JSONDecodeError:
        return "doctor printed no JSON: " + r.stderr
    for d in report.get("devices", []):
        if d.get("plugin") == "cuda":
            if d.get("ok"):
                return ""
            return d.get("probe", {}).get("reason") or d.get("error", "unknown")
    for p in report.get("plugins", []):
        if p.get("name") == "cuda":
            return "the cuda plugin did not load: " + p.get("reason", "")
    return "no cuda plugin on the plugin path"


def variant_file(tmp, example, precision=None):
    """A copy of the example that logs every step (and, if asked, runs at
    another :precision)."""
    text = open(os.path.join(source, "examples", example)).read()
    text = re.sub(r":log-every \d+", ":log-every 1", text)
    if precision:
        text = text.replace("(defrun", "(defrun :precision :%s" % precision, 1)
    name = os.path.join(tmp, "%s-%s" % (precision or "f32", example))
    with open(name, "w") as f:
        f.write(text)
    return name


def corpus_flags():
    root = os.environ.get("SEXPGPU_FORTUNES")
    if not root:
        return []
    files = " ".join('"%s/%s"' % (root, n) for n in ("cookie", "computers", "definitions", "people"))
    return ["--set", "corpus=(%s)" % files]


def run(file, out, device, extra, env=None):
    args = [binary, "run", file, "--device", device, "--json", "--quiet", "--out", out, "--fresh"]
    r = subprocess.run(args + extra, capture_output=True, text=True,
                       env=dict(os.environ, **(env or {})))
    losses = {}
    for line in r.stdout.splitlines():
        try:
            e = json.loads(line)
        except json.JSONDecodeError:
            continue
        if e.get("kind") == "step" and "train/loss" in e.get("metrics", {}):
            losses[e["step"]] = e["metrics"]["train/loss"]
    return r.returncode, losses, r.stderr


def check(name, ok, detail):
    global failures
    print(("ok   " if ok else "FAIL ") + name + ": " + detail)
    if not ok:
        failures += 1


def parity(tmp, example, extra, precision, tolerance):
    file = variant_file(tmp, example, precision)
    label = "%s %s" % (example, precision or "f32")
    rc_cpu, cpu, err_cpu = run(file, os.path.join(tmp, "cpu-" + label), "cpu", extra)
    rc_gpu, gpu, err_gpu = run(file, os.path.join(tmp, "gpu-" + label), "cuda", extra)
    if rc_cpu != 0 or rc_gpu != 0 or len(cpu) < 50 or sorted(cpu) != sorted(gpu):
        check(label, False, "exit %d/%d, %d/%d steps\n%s\n%s" % (rc_cpu, rc_gpu, len(cpu), len(gpu),
                                                                err_cpu[-2000:], err_gpu[-2000:]))
        return
    worst, at = 0.0, min(cpu)
    for step in sorted(cpu):
        rel = abs(gpu[step] - cpu[step]) / max(abs(cpu[step]), 1e-12)
        if math.isnan(rel):  # a NaN loss on one side: the worst there is
            worst, at = math.inf, step
            break
        if rel > worst:
            worst, at = rel, step
    check(label + " losses against the CPU", worst <= tolerance,
          "worst relative difference %.2e at step %d (cpu %.6f, cuda %.6f; limit %.0e)" %
          (worst, at, cpu[at], gpu[at], tolerance))
    if not math.isfinite(gpu[at]):
        # Name the kernel: every step read back, the first non-finite
        # result from finite operands fails the run.
        steps = extra.index("--steps")
        flags = extra[:steps] + extra[steps + 2:] + ["--steps", str(at)]
        _, _, err = run(file, os.path.join(tmp, "check-" + label), "cuda", flags,
                        {"SEXPGPU_CUDA_CHECK": "1"})
        print("     with SEXPGPU_CUDA_CHECK=1: " + err.strip()[-1500:])


def main():
    why = cuda_unavailable()
    if why:
        print("skipped: the cuda device cannot serve here: " + why)
        return 77
    with tempfile.TemporaryDirectory() as tmp:
        steps = ["--steps", "50"]
        tiny = ["--variant", "tiny"] + corpus_flags() + steps
        if os.environ.get("CUDA_PARITY_QUICK"):  # the transformer's parity alone, for a short lease
            parity(tmp, "charlm.lisp", tiny, None, 1e-4)
            parity(tmp, "charlm.lisp", tiny, "bf16", 2e-2)
            return 1 if failures else 0
        parity(tmp, "mlp.lisp", steps, None, 1e-4)
        parity(tmp, "charlm.lisp", tiny, None, 1e-4)
        parity(tmp, "charlm.lisp", tiny, "bf16", 2e-2)

        # --deterministic: two runs, the same losses bit for bit.
        file = variant_file(tmp, "charlm.lisp")
        flags = tiny + ["--deterministic"]
        rc1, a, _ = run(file, os.path.join(tmp, "det1"), "cuda", flags)
        rc2, b, _ = run(file, os.path.join(tmp, "det2"), "cuda", flags)
        check("charlm --deterministic twice", rc1 == 0 and rc2 == 0 and a == b and len(a) >= 50,
              "%d and %d steps, %s" % (len(a), len(b), "identical" if a == b else "different"))

        # --deterministic --resume: SIGTERM after the first checkpoint, then
        # resume; the final parameters and optimizer state are the same bytes.
        resume_file = os.path.join(source, "tests/e2e/runs/resume.lisp")
        det = ["--device", "cuda", "--deterministic", "--quiet"]
        whole = os.path.join(tmp, "whole")
        subprocess.run([binary, "run", resume_file, "--out", whole] + det, capture_output=True)
        cut = os.path.join(tmp, "cut")
        p = subprocess.Popen([binary, "run", resume_file, "--out", cut] + det,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(3000):
            if os.path.exists(os.path.join(cut, "checkpoints", "latest")) or p.poll() is not None:
                break
            time.sleep(0.01)
        p.send_signal(signal.SIGTERM)
        stopped = p.wait()
        r = subprocess.run([binary, "run", resume_file, "--out", cut, "--resume", "latest"] + det,
                           capture_output=True, text=True)
        finals = [(os.path.join(whole, "checkpoints", "latest", f),
                   os.path.join(cut, "checkpoints", "latest", f))
                  for f in ("model.safetensors", "optimizer.safetensors")]
        same = all(os.path.exists(a) and os.path.exists(b) and filecmp.cmp(a, b, shallow=False)
                   for a, b in finals)
        check("--deterministic SIGTERM and --resume on cuda", stopped == 75 and r.returncode == 0 and same,
              "stopped with %d, resumed with %d, final bytes %s" %
              (stopped, r.returncode, "identical" if same else "different"))

        # The MLP's whole run on the GPU reaches its target.
        out = os.path.join(tmp, "mlp-full")
        r = subprocess.run([binary, "run", os.path.join(source, "examples/mlp.lisp"), "--device",
                            "cuda", "--quiet", "--out", out], capture_output=True, text=True)
        status = {}
        try:
            status = json.load(open(os.path.join(out, "status.json")))
        except (OSError, json.JSONDecodeError):
            pass
        acc = status.get("summary", {}).get("final", {}).get("test/acc")
        check("mlp on cuda reaches its target", r.returncode == 0 and acc is not None and acc >= 0.877,
              "exit %d, test/acc %s\n%s" % (r.returncode, acc, r.stderr[-1500:]))
    return 1 if failures else 0


sys.exit(main())
