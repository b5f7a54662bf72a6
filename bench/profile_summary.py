"""Where a step's time goes: reads the PREFIX.FUNCTION.json files that
SEXPGPU_CUDA_PROFILE=PREFIX makes the cuda device write (devices/cuda/
profile.h), or SEXPGPU_CPU_PROFILE=PREFIX the cpu device (devices/cpu/
program.cpp, no roofline), and prints, per function, the measured total
(against the roofline), the kernels that take longest, and the time by
kernel kind.

    python3 bench/profile_summary.py PREFIX [TOP]
"""
import collections
import glob
import json
import sys

prefix = sys.argv[1]
top = int(sys.argv[2]) if len(sys.argv) > 2 else 20
for path in sorted(glob.glob(prefix + ".*.json")):
    p = json.load(open(path))
    steps = p["steps"]
    print("%s: %d kernels, %.2f ms measured, %.2f ms roofline (%.0f%%), mean of %d runs" %
          (p["function"], len(steps), p["measured_us"] / 1000, p["roofline_us"] / 1000,
           100 * p["roofline_us"] / max(p["measured_us"], 1e-9), p["runs"]))
    print("  %-9s %-9s %s" % ("us", "roofline", "kernel"))
    for s in sorted(steps, key=lambda s: -s["measured_us"])[:top]:
        print("  %-9.1f %-9.1f %s" % (s["measured_us"], s["roofline_us"], s["kernel"][:100]))
    kinds = collections.defaultdict(lambda: [0, 0.0, 0.0])
    for s in steps:
        kind = s["kernel"].split(" ")[0].split("<")[0].split("[")[0]
        kinds[kind][0] += 1
        kinds[kind][1] += s["measured_us"]
        kinds[kind][2] += s["roofline_us"]
    print("  by kind: %-28s %6s %10s %10s" % ("", "count", "ms", "roofline"))
    for kind, (n, us, roof) in sorted(kinds.items(), key=lambda kv: -kv[1][1])[:top]:
        print("           %-28s %6d %10.2f %10.2f" % (kind[:28], n, us / 1000, roof / 1000))
