#!/usr/bin/env python3
"""The reports of tests/e2e/report.sh in headless Chromium (Debian's chromium
and chromium-driver, through selenium): each page loads from disk without a
console error or an alert; every chart holds exactly the values of its series
in the runs' events.jsonl, read back from each Dygraph (numRows, getValue),
against the step and against the wall time; a screenshot is not blank; the
sweep's report has one line per point and a row per point in its table.

Usage: report.py TMP HOSTILE_TEXT (TMP as report.sh leaves it)
SEXPGPU_REPORT_SCREENSHOT=FILE keeps the sweep report's screenshot.
"""
import io
import json
import os
import shutil
import sys
from datetime import datetime, timezone

from PIL import Image
from selenium import webdriver
from selenium.common.exceptions import NoAlertPresentException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.support.ui import Select, WebDriverWait

TMP, HOSTILE = sys.argv[1], sys.argv[2]
failures = 0


def ok(name, cond, detail=""):
    global failures
    if cond:
        print("ok   " + name)
    else:
        failures += 1
        print("FAIL " + name + (": " + detail if detail else ""))


def events(run_dir):
    with open(os.path.join(run_dir, "events.jsonl")) as f:
        return [json.loads(line) for line in f if line.endswith("\n")]


def seconds(t):
    return datetime.strptime(t, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc).timestamp()


def expected_series(run_dir):
    """{series: [(step, wall_s, value)]} as events.jsonl has them."""
    out = {}
    evs = events(run_dir)
    t0 = seconds(evs[0]["time"])
    for i, e in enumerate(evs):
        if e["kind"] == "open" and i > 0 and "resumed_from" in e:
            # A resume goes back to its checkpoint: later points are reported again.
            back = e["resumed_from"]["step"]
            out = {k: [p for p in pts if p[0] <= back] for k, pts in out.items()}
        if e["kind"] in ("step", "eval"):
            for name, v in e["metrics"].items():
                if v is None or isinstance(v, (int, float)):
                    out.setdefault(name, []).append((e["step"], seconds(e["time"]) - t0, v))
    return out


READ_CHARTS = """
return window.sexpgpuReport.charts.map(function (c) {
  var g = c.graph, labels = g.getLabels(), lines = {};
  for (var k = 1; k < labels.length; k++) {
    var pts = [];
    for (var r = 0; r < g.numRows(); r++) {
      var v = g.getValue(r, k);
      if (v !== null) pts.push([g.getValue(r, 0), v]);
    }
    lines[labels[k]] = pts;
  }
  return {series: c.series, lines: lines};
});
"""


def browser():
    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium")
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--window-size=1200,900", "--hide-scrollbars",
                 "--user-data-dir=" + os.path.join(TMP, "chromium-profile")):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(executable_path=shutil.which("chromedriver")), options=options)


def open_page(driver, name, path):
    driver.get("file://" + os.path.abspath(path))
    try:
        WebDriverWait(driver, 20).until(
            lambda d: d.execute_script("return document.body.getAttribute('data-ready')") == "true")
        ready = True
    except Exception:
        ready = False
    ok(name + "-loads", ready)
    try:
        driver.switch_to.alert.dismiss()
        ok(name + "-no-alert", False, "the page raised an alert")
    except NoAlertPresentException:
        ok(name + "-no-alert", True)
    return ready


def console_errors(driver, name):
    errors = [e for e in driver.get_log("browser") if e["level"] in ("SEVERE", "ERROR")]
    ok(name + "-no-console-errors", not errors, json.dumps(errors)[:2000])


def compare(driver, name, runs, axis):
    """Every chart against the runs' events: its lines by label, each point's x and value."""
    charts = driver.execute_script(READ_CHARTS)
    want = {}
    for label, run_dir in runs:
        for series, pts in expected_series(run_dir).items():
            want.setdefault(series, {})[label] = pts
    ok("%s-%s-chart-per-series" % (name, axis), sorted(c["series"] for c in charts) == sorted(want),
       "charts %s, series %s" % (sorted(c["series"] for c in charts), sorted(want)))
    bad = []
    for c in charts:
        lines = c["lines"]
        expect = want.get(c["series"], {})
        if sorted(lines) != sorted(expect):
            bad.append("%s: lines %s, runs %s" % (c["series"], sorted(lines), sorted(expect)))
            continue
        for label, pts in expect.items():
            got = lines[label]
            values = [p[2] for p in pts if p[2] is not None]
            if [v for _, v in got] != values:
                bad.append("%s/%s: values %s, events %s" % (c["series"], label, [v for _, v in got][:5], values[:5]))
            elif axis == "step" and [x for x, _ in got] != [p[0] for p in pts if p[2] is not None]:
                bad.append("%s/%s: steps differ" % (c["series"], label))
            elif axis == "wall" and any(abs(x - p[1]) > 1e-6 for (x, _), p in
                                        zip(got, [p for p in pts if p[2] is not None])):
                bad.append("%s/%s: wall times differ" % (c["series"], label))
    ok("%s-%s-charts-hold-the-events" % (name, axis), not bad, "; ".join(bad[:5]))
    return charts


def not_blank(png, name):
    """Not one colour: many colours, and more than a sliver of pixels off the background."""
    img = Image.open(io.BytesIO(png)).convert("RGB")
    counts = img.getcolors(maxcolors=img.width * img.height)
    background = max(counts)[0]
    off = 1 - background / (img.width * img.height)
    ok(name + "-screenshot-not-blank", len(counts) > 20 and off > 0.005,
       "%d colours, %.4f off the background" % (len(counts), off))
    return img


def runs_of(report_json):
    with open(os.path.join(TMP, report_json)) as f:
        j = json.load(f)
    # Paths as report printed them, relative to where it ran: TMP, or absolute.
    return os.path.join(TMP, j["path"]), [(r["label"], os.path.join(TMP, r["dir"])) for r in j["runs"]]


driver = browser()
try:
    # One run, with the hostile annotation.
    path, runs = runs_of("small.json")
    if open_page(driver, "run", path):
        compare(driver, "run", runs, "step")
        texts = driver.execute_script(
            "return Array.from(document.querySelectorAll('tr.kind-annotation td.text')).map(e => e.textContent)")
        ok("run-annotation-as-text", len(texts) == 1 and texts[0].startswith(HOSTILE), repr(texts))
        kinds = driver.execute_script(
            "return Array.from(document.querySelectorAll('tr.moment')).map(e => e.className.slice(12))")
        ok("run-timeline", kinds == ["start", "warning", "checkpoint", "close", "resume", "checkpoint", "close",
                                     "annotation"],
           str(kinds))
        sessions = driver.execute_script(
            "return Array.from(document.querySelectorAll('.run table.facts th')).filter("
            "e => e.textContent == 'sessions').map(e => e.nextSibling.textContent)")
        ok("run-resumed-once", sessions == ["2 (resumed once)"], str(sessions))
        scripts = driver.execute_script("return document.scripts.length")
        ok("run-no-injected-script", scripts == 3, "%d scripts" % scripts)
        Select(driver.find_element("id", "x-axis")).select_by_value("wall")
        compare(driver, "run", runs, "wall")
        driver.find_element("id", "log-scale").click()
        driver.execute_script("var s = document.getElementById('smoothing'); s.value = 5;"
                              "s.dispatchEvent(new Event('input'));")
        compare(driver, "run-log-smoothed", runs, "wall")
        chart = driver.find_element("css selector", ".chart .plot")
        not_blank(chart.screenshot_as_png, "run-chart")
        console_errors(driver, "run")

    # A run still going when it was reported: its status instead of a summary.
    path, runs = runs_of("running.json")
    if open_page(driver, "running", path):
        status = driver.execute_script("return Array.from(document.querySelectorAll('.run h4')).map(e => e.textContent)")
        ok("running-status", "status (no close event yet)" in status, str(status))
        console_errors(driver, "running")

    # Three runs overlaid.
    path, runs = runs_of("overlay.json")
    if open_page(driver, "overlay", path):
        charts = compare(driver, "overlay", runs, "step")
        loss = [c for c in charts if c["series"] == "train/loss"]
        ok("overlay-three-lines", len(loss) == 1 and len(loss[0]["lines"]) == 3)
        # The run named "<img src=x onerror=alert(3)>" is text in the legends and its card.
        driver.execute_script("window.sexpgpuReport.charts[0].graph.setSelection(0)")
        images = driver.execute_script("return document.querySelectorAll('img').length")
        named = driver.execute_script(
            "return Array.from(document.querySelectorAll('.run h3')).map(e => e.textContent)")
        legend = driver.execute_script(
            "return document.querySelector('.chart[data-series=\"train/loss\"] .legend').textContent")
        ok("overlay-names-as-text", images == 0 and "<img src=x onerror=alert(3)>" in legend
           and any(n.startswith("<img src=x onerror=alert(3)>") for n in named),
           "%d images, legend %r, cards %s" % (images, legend, named))
        console_errors(driver, "overlay")

    # The sweep: a line per point in every chart, a row per point in its table.
    path, runs = runs_of("sweep.json")
    if open_page(driver, "sweep", path):
        charts = compare(driver, "sweep", runs, "step")
        ok("sweep-line-per-point", charts and all(len(c["lines"]) == 3 for c in charts),
           str([(c["series"], len(c["lines"])) for c in charts]))
        rows = driver.execute_script("return document.querySelectorAll('table.sweep-table tr.point').length")
        ok("sweep-table-rows", rows == 3, "%d rows" % rows)
        kinds = set(driver.execute_script(
            "return Array.from(document.querySelectorAll('tr.moment')).map(e => e.className)"))
        ok("sweep-timeline-kinds", {"moment kind-" + k for k in ("start", "checkpoint", "target", "close")} <= kinds,
           str(kinds))
        height = driver.execute_script("return document.body.scrollHeight")
        driver.set_window_size(1200, min(max(height, 900), 4000))
        img = not_blank(driver.get_screenshot_as_png(), "sweep")
        shot = os.environ.get("SEXPGPU_REPORT_SCREENSHOT")
        if shot:
            img.save(shot)
        console_errors(driver, "sweep")
finally:
    driver.quit()

print("report.py: %s" % ("all passed" if failures == 0 else "%d failed" % failures))
sys.exit(1 if failures else 0)
