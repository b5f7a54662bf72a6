#!/usr/bin/env python3
"""How long `sexpgpu run` takes to start (issue 22, item 3): process start to
the first step event, and to the exit of a 2-step run that writes its final
checkpoint, first with an empty cache (a fresh $SEXPGPU_CACHE: no NVRTC
images, no autotuning choices), then with the cache that run left.

  startup.py SEXPGPU FILE [--device cuda] [--warm 3] [--logs DIR] [run flags...]

Each run is `run FILE --steps 2 --json --log info --fresh` in its own
directory; the first step event's arrival is timed here, on the clock of
this process, from just before the child is started. With --logs, each
run's standard error (the log, whose lines carry the seconds since the
process started) is kept as DIR/startup-cold.log, DIR/startup-warm-N.log.
A line `RESULT {json}` carries every number.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time


def one_run(binary, file, device, cache, out, extra):
    """(seconds to the first step event, seconds to exit, exit status, stderr)."""
    cmd = [binary, "run", file, "--device", device, "--steps", "2", "--json", "--log", "info",
           "--out", out, "--fresh"] + extra
    env = dict(os.environ, SEXPGPU_CACHE=cache, NCCL_NVLS_ENABLE="0")
    with tempfile.TemporaryFile(mode="w+") as err:
        start = time.monotonic()
        child = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True, env=env)
        first = None
        for line in child.stdout:
            if first is None and line.startswith("{"):
                try:
                    if json.loads(line).get("kind") == "step":
                        first = time.monotonic() - start
                except json.JSONDecodeError:
                    pass
        rc = child.wait()
        done = time.monotonic() - start
        err.seek(0)
        return first, done, rc, err.read()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("binary")
    ap.add_argument("file")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--warm", type=int, default=3, help="runs with the warm cache")
    ap.add_argument("--logs")
    args, extra = ap.parse_known_args()
    if args.warm < 1:
        ap.error("--warm must be at least 1")
    result = {"file": args.file, "device": args.device, "cold": None, "warm": []}
    with tempfile.TemporaryDirectory(prefix="startup.") as tmp:
        cache = os.path.join(tmp, "cache")
        for i in range(1 + args.warm):
            label = "cold" if i == 0 else f"warm-{i}"
            first, done, rc, log = one_run(args.binary, args.file, args.device, cache,
                                           os.path.join(tmp, label), extra)
            if args.logs:
                with open(os.path.join(args.logs, f"startup-{label}.log"), "w") as f:
                    f.write(log)
            if rc != 0 or first is None:
                print(f"{label}: exit {rc}, first step event {first}\n{log[-3000:]}")
                sys.exit(1)
            row = {"first_step_s": round(first, 3), "exit_s": round(done, 3)}
            print(f"{label:>7}: first step event {first:6.3f} s, exit {done:6.3f} s", flush=True)
            if i == 0:
                result["cold"] = row
            else:
                result["warm"].append(row)
    warm_first = statistics.median(r["first_step_s"] for r in result["warm"])
    warm_exit = statistics.median(r["exit_s"] for r in result["warm"])
    print(f"cold: first step {result['cold']['first_step_s']:.3f} s, exit "
          f"{result['cold']['exit_s']:.3f} s; warm (median of {args.warm}): first step "
          f"{warm_first:.3f} s, exit {warm_exit:.3f} s")
    print("RESULT " + json.dumps(result))


if __name__ == "__main__":
    main()
