"""The tensorboard sink read back by TensorBoard itself (PyPI's tensorboard:
its record reader and EventAccumulator, the code `tensorboard --logdir`
runs): a real run with an evaluation pass and a resume from an earlier
checkpoint, then every scalar TensorBoard shows against events.jsonl (the
same tags, steps, values to f32 precision and wall times, the steps the
resume repeated replaced by the resumed session's), the `open` metadata as a
text summary per session, a run still going seen by TensorBoard before it
ends, and a sink that cannot write, which the run reports and outlives.
Run by tensorboard_sink.sh, which skips where this cannot run.

Usage: tensorboard_sink.py SEXPGPU SOURCE_DIR
"""
import datetime
import glob
import json
import math
import os
import re
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time

from tensorboard.backend.event_processing import event_accumulator
from tensorboard.compat.proto import event_pb2
from tensorboard.compat.tensorflow_stub import errors, pywrap_tensorflow
from tensorboard.plugins.text import text_plugin
from tensorboard.util import tensor_util

binary, source = sys.argv[1], sys.argv[2]
run_file = os.path.join(source, "tests/e2e/runs/tensorboard.lisp")
passed = failed = 0


def check(name, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
        print(f"FAIL {name}" + (f": {detail}" if detail else ""))


def sexpgpu(*args, expect=0):
    r = subprocess.run([binary, *args], capture_output=True, text=True)
    if r.returncode != expect:
        print(r.stdout[-3000:], r.stderr[-3000:])
        sys.exit(f"sexpgpu {' '.join(args)} exited {r.returncode}, not {expect}")
    return r


def seconds(rfc3339):
    return datetime.datetime.fromisoformat(rfc3339.replace("Z", "+00:00")).timestamp()


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def event_files(run_dir):
    return sorted(glob.glob(os.path.join(run_dir, "events.out.tfevents.*")))


def raw_records(path):
    """Every Event of one file through TensorBoard's record reader, which
    checks both CRCs of every record (DataLossError) and its framing."""
    reader = pywrap_tensorflow.PyRecordReader_New(path)
    out = []
    while True:
        try:
            reader.GetNext()
        except errors.OutOfRangeError:
            return out
        out.append(event_pb2.Event.FromString(reader.record()))


def accumulate(run_dir):
    acc = event_accumulator.EventAccumulator(
        run_dir, size_guidance={event_accumulator.SCALARS: 0, event_accumulator.TENSORS: 0})
    acc.Reload()
    return acc


def expected_scalars(events):
    """tag -> {step: (value, wall_time)} as TensorBoard must show them: each
    resume (an open with resumed_from) forgets the steps after its
    checkpoint, which the resumed session reports again."""
    series = {}
    for e in events:
        if e["kind"] == "open" and "resumed_from" in e:
            after = e["resumed_from"]["step"]
            for points in series.values():
                for step in [s for s in points if s > after]:
                    del points[step]
        if e["kind"] in ("step", "eval"):
            for tag, value in e["metrics"].items():
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    series.setdefault(tag, {})[e["step"]] = (value, seconds(e["time"]))
    return {tag: points for tag, points in series.items() if points}


with tempfile.TemporaryDirectory() as tmp:
    run_dir = os.path.join(tmp, "runs", "tb")
    sexpgpu("run", run_file, "--out", run_dir, "--sink", "tensorboard")
    # TensorBoard orders a directory's files by name, whose time is in whole
    # seconds: the resume starts in a later second, as any real one does.
    with open(os.path.join(run_dir, "events.jsonl")) as f:
        first_open = seconds(json.loads(f.readline())["time"])
    time.sleep(max(0.0, math.floor(first_open) + 1.01 - time.time()))
    sexpgpu("run", run_file, "--out", run_dir, "--sink", "tensorboard",
            "--resume", os.path.join(run_dir, "checkpoints", "step-00000020"))
    with open(os.path.join(run_dir, "events.jsonl")) as f:
        events = [json.loads(line) for line in f]
    opens = [e for e in events if e["kind"] == "open"]
    check("two-sessions", len(opens) == 2 and opens[1]["resumed_from"]["step"] == 20, opens)

    # The files: one per session, named as TensorBoard expects, each read
    # whole by its record reader, "brain.Event:2" first.
    files = event_files(run_dir)
    check("one-file-per-session", len(files) == 2, files)
    names = [re.fullmatch(r"events\.out\.tfevents\.(\d+)\.(.+)\.(\d+)\.(\d+)",
                          os.path.basename(p)) for p in files]
    host = re.sub(r"[^A-Za-z0-9._-]", "_", socket.gethostname())
    check("file-names", all(m and m[2] == host and m[4] == "0" for m in names), files)
    for n, path in enumerate(files):
        records = raw_records(path)
        check(f"file-{n}-first-record", records and records[0].file_version == "brain.Event:2"
              and records[0].wall_time == seconds(opens[n]["time"]), records[:1])
        check(f"file-{n}-name-time",
              names[n] and names[n][1] == str(int(seconds(opens[n]["time"]))), path)
    resumed = raw_records(files[1])
    check("resume-session-start", resumed[1].session_log.status == event_pb2.SessionLog.START
          and resumed[1].step == 21, resumed[1])

    # Every scalar, as TensorBoard's accumulator shows it.
    acc = accumulate(run_dir)
    check("file-version", acc.file_version == 2.0, acc.file_version)
    want = expected_scalars(events)
    tags = acc.Tags()["scalars"]
    check("scalar-tags", sorted(tags) == sorted(want), (sorted(tags), sorted(want)))
    for tag in ("train/loss", "train/acc", "lr/default", "grad-norm", "step-ms",
                "examples-per-s", "memory-bytes", "epoch", "held-out/loss", "held-out/acc"):
        check(f"series-{tag}", tag in want, sorted(want))
    compared = 0
    for tag in sorted(set(tags) & set(want)):
        got = [(s.step, s.value, s.wall_time) for s in acc.Scalars(tag)]
        exp = [(step, f32(v), t) for step, (v, t) in sorted(want[tag].items())]
        same = [g[0] == e[0] and g[1] == e[1] and abs(g[2] - e[2]) < 1e-6
                for g, e in zip(got, exp)]
        check(f"scalars-{tag}", len(got) == len(exp) and all(same),
              f"TensorBoard {got} events.jsonl {exp}")
        compared += len(got)
    steps_logged = [e["step"] for e in events if e["kind"] == "step"]
    check("resume-replaced-steps", sorted(want["train/loss"]) == sorted(set(steps_logged)),
          sorted(want["train/loss"]))
    check("resumed-wall-times", want["train/loss"][40][1] >= seconds(opens[1]["time"]))

    # The open metadata: a text summary per session, the text plugin's
    # format, holding the open event's JSON.
    check("text-tag", acc.Tags()["tensors"] == ["open"], acc.Tags()["tensors"])
    meta = acc.SummaryMetadata("open")
    check("text-plugin", meta.plugin_data.plugin_name == "text", meta)
    texts = acc.Tensors("open")
    check("text-per-session", [t.step for t in texts] == [0, 20], [t.step for t in texts])
    for n, t in enumerate(texts):
        value = tensor_util.make_ndarray(t.tensor_proto)
        text = value.item().decode() if value.shape == () else ""
        body = text.removeprefix("```json\n").removesuffix("\n```\n")
        check(f"text-{n}-fenced", text.startswith("```json\n") and text.endswith("\n```\n"), text)
        check(f"text-{n}-open-event", json.loads(body) == opens[n], body[:300])
        check(f"text-{n}-wall-time", abs(t.wall_time - seconds(opens[n]["time"])) < 1e-6)
        # As the text plugin renders it: a code block.
        html = text_plugin.text_array_to_html(value, True)
        check(f"text-{n}-html", html.startswith("<pre><code") and opens[n]["slug"] in html,
              html[:200])

    # A run still going: TensorBoard sees its steps before it ends.
    live_dir = os.path.join(tmp, "runs", "live")
    proc = subprocess.Popen([binary, "run", run_file, "--out", live_dir, "--steps", "1000000",
                             "--sink", "tensorboard"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    seen = []
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.2)
        if event_files(live_dir):
            seen = [s.step for s in accumulate(live_dir).Scalars("train/loss")] \
                if "train/loss" in accumulate(live_dir).Tags()["scalars"] else []
            if len(seen) >= 3:
                break
    still_running = proc.poll() is None
    proc.send_signal(signal.SIGINT)
    code = proc.wait(timeout=60)
    check("live-scalars-seen", len(seen) >= 3 and still_running, (seen, still_running))
    check("live-stopped", code == 75, code)
    with open(os.path.join(live_dir, "events.jsonl")) as f:
        live_events = [json.loads(line) for line in f]
    final = accumulate(live_dir)
    check("live-all-steps", [s.step for s in final.Scalars("train/loss")]
          == sorted(expected_scalars(live_events)["train/loss"]))

    # A sink that cannot write never fails the run: reported, dropped.
    blocker = os.path.join(tmp, "blocker")
    open(blocker, "w").close()
    r = sexpgpu("run", run_file, "--out", os.path.join(tmp, "runs", "blocked"),
                "--sink", f"tensorboard:{blocker}/tb")
    check("unwritable-reported", f"sink tensorboard: tensorboard: cannot create directory "
          f"{blocker}/tb: Not a directory" in r.stderr, r.stderr[-500:])
    with open(os.path.join(tmp, "runs", "blocked", "events.jsonl")) as f:
        last = json.loads(f.readlines()[-1])
    check("unwritable-run-finished", last["kind"] == "close" and last["state"] == "finished", last)

print(f"tensorboard-sink: {compared} scalars compared with events.jsonl")
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
