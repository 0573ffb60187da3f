"""Explorer frame time in headless Chromium: 16,384 KV blocks (--blocks), 512 running requests.

Serves the real page shell and modules, drives the real ExploreView with a synthetic stream
(512 decodes a step, new blocks as sequences grow, finishes and prefills as the pool fills) and
prints the p50/p95/max of per-frame work (reduce + draw + the microtasks and layout they cause,
wall time) and of requestAnimationFrame intervals, and from a trace the main thread's CPU time per
frame: the callback (the same work) and the browser's rendering update after it (paint,
compositing). On a shared machine the CPU time is the figure to compare with the target.
Usage: python bench/render.py [--frames 600] [--json out.json]
"""

from __future__ import annotations

import argparse
import functools
import http.server
import json
import sys
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
TARGET_P95_MS = 8.0

BENCH_JS = """
import uPlot from "uplot";
import { ExploreView } from "/static/js/ui/explore.js";
import { createPane } from "/static/js/state/store.js";
import { applyRecord } from "/static/js/state/reduce.js";
import { appendRecord } from "/static/js/state/history.js";

const params = new URLSearchParams(location.search);
const NUM_BLOCKS = Number(params.get("blocks") ?? 16384), BS = 16, RUNNING = 512, BUDGET = 8192;
const FRAMES = Number(params.get("frames") || 600);
const requests = [];
for (let i = 0; i < 4096; i++) requests.push({ id: `r${i}`, prompt_len: 256, output_len: 100000 });
const pane = createPane({ num_gpu_blocks: NUM_BLOCKS, block_size: BS, requests });
pane.playing = true;
const view = new ExploreView(document, uPlot, () => {});
const profile = {};
const free = [];
for (let b = NUM_BLOCKS - 1; b >= 1; b--) free.push(b);
const live = new Map(); // id -> {computed, blocks}
let nextId = 0, step = 0, t = 0, runningSum = 0;

function admit(scheduled, newBlocks) {
  const id = `r${nextId++}`;
  const blocks = free.splice(free.length - 16, 16);
  live.set(id, { computed: 256, blocks: blocks.length });
  newBlocks[id] = blocks;
  scheduled.push({ id, n: 256, start: 0, sampled: true, kind: "prefill" });
}

function record() {
  const scheduled = [], newBlocks = {}, finished = [], freed = [], arrivals = [];
  for (const [id, r] of live) {
    if (r.computed % BS === 0) {
      if (free.length === 0) continue;
      newBlocks[id] = [free.pop()];
      r.blocks += 1;
    }
    scheduled.push({ id, n: 1, start: r.computed, sampled: true, kind: "decode" });
    r.computed += 1;
  }
  // Finish the oldest (one every 8 steps, more when the pool runs low) and admit a 256-token
  // prefill in each place, so the batch stays at 512 with chunks among the decodes.
  let room = free.length;
  while (finished.length < 8 && (room < 600 || (step % 8 === 0 && finished.length === 0))) {
    const [id] = [...live.keys()].filter((x) => !finished.includes(x));
    finished.push(id);
    room += pane.run.tables.get(id)?.length ?? 0;
  }
  for (const id of finished) {
    live.delete(id);
    freed.push(...(pane.run.tables.get(id) ?? []));
  }
  while (live.size < RUNNING && free.length >= 16) {
    arrivals.push(`r${nextId}`);
    admit(scheduled, newBlocks);
  }
  const rec = {
    step, iter: step, time_s: t, step_time_ms: 25, arrivals, scheduled, new: arrivals, resumed: [],
    preempted: [], finished, rejected: [], new_blocks: newBlocks, freed_blocks: freed,
    kv_events: [],
    num_cached_tokens: {}, running: [...live.keys(), ...finished], waiting: [],
    num_free_blocks: free.length, num_usable_blocks: NUM_BLOCKS - 1,
    kv_usage: 1 - free.length / (NUM_BLOCKS - 1), token_budget: BUDGET,
    max_num_seqs: 1024, kv_waste: { token_states: 1, internal_fragmentation: 0 },
  };
  step += 1; t += 0.025;
  return rec;
}

function feed(rec) {
  applyRecord(pane.run, rec);
  appendRecord(pane.history, rec, pane.run);
  for (const b of rec.freed_blocks) free.push(b); // freed at the step's update, reusable next step
  runningSum += rec.scheduled.length;
}

// Warm up: fill the pool with 512 running requests.
while (live.size < RUNNING) { const s = [], nb = {}; admit(s, nb); }
for (let i = 0; i < 40; i++) feed(record());
view.draw(new Set(["all"]), pane, performance.now());
view.profile = profile;

const rafIds = [];
const work = [], intervals = [], parts = { js: [], microtasks: [], layout: [] };
let last = null, frame = 0, next = null;
// Frame work = reduce + draw (the renderers), then the microtasks they queued (uPlot commits its
// redraws in one), then style and layout of the DOM they touched (forced here by one read, work
// the browser would otherwise do right after this callback). The synthetic stream's own cost,
// building the next record, runs in a task of its own between frames, as the socket's decoder
// does in the real page.
const channel = new MessageChannel();
channel.port1.onmessage = () => {
  next = record();
  rafIds.push(requestAnimationFrame(tick));
};
function tick(now) {
  if (last !== null) intervals.push(now - last);
  last = now;
  const rec = next;
  const t0 = performance.now();
  feed(rec);
  profile.reduce = (profile.reduce ?? 0) + performance.now() - t0;
  view.draw(new Set(["step"]), pane, now);
  const t1 = performance.now();
  queueMicrotask(() => {
    const t2 = performance.now();
    void document.body.offsetHeight;
    const t3 = performance.now();
    parts.js.push(t1 - t0); parts.microtasks.push(t2 - t1); parts.layout.push(t3 - t2);
    work.push(t3 - t0);
    if (++frame < FRAMES) channel.port2.postMessage(0);
    else window.__bench = { work, intervals, parts, rafIds, running: Math.round(runningSum / step),
      blocks: NUM_BLOCKS,
      owned: Array.from(pane.run.owner).filter((x) => x >= 0).length,
      profile: Object.fromEntries(Object.entries(profile).map(([k, v]) => [k, v / FRAMES])) };
  });
}
channel.port2.postMessage(0);
"""


def page_html() -> str:
    from jinja2 import Environment, FileSystemLoader

    env = Environment(loader=FileSystemLoader(ROOT / "frontend" / "templates"), autoescape=True)
    html = env.get_template("index.html").render(boot={"static_url": "/static"})
    return html.replace('src="/static/js/main.js"', 'src="/bench.js"')


class Handler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # quiet
        pass

    def do_GET(self):  # noqa: N802 (http.server's name)
        path = self.path.split("?")[0]
        if path in ("/bench", "/bench.js"):
            body = (page_html() if path == "/bench" else BENCH_JS).encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html" if path == "/bench" else "text/javascript")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        if path.startswith("/static/"):
            self.path = "/frontend" + self.path
        elif path.startswith("/vendor/uplot/"):
            self.path = self.path.replace("/vendor/uplot/", "/node_modules/uplot/dist/", 1)
        else:
            self.send_error(404)
            return
        super().do_GET()

    def guess_type(self, path):
        return "text/javascript" if str(path).endswith(".js") else super().guess_type(path)


def frame_cpu_ms(trace: dict, ids: set[int]) -> dict[str, list[float]]:
    """Main-thread CPU time (not wall time) of each of the bench's frames: its
    requestAnimationFrame callback ("callback") and the rendering update after it ("render":
    style, layout, paint, compositing commit), and the two together ("frame")."""
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    main = [e for e in events if e.get("ph") == "X" and "tdur" in e and e.get("name") in
            ("FireAnimationFrame", "WebFrameWidgetImpl::UpdateLifecycle")]
    main.sort(key=lambda e: e["ts"])
    out: dict[str, list[float]] = {"callback": [], "render": [], "frame": []}
    pending = None
    for e in main:
        if e["name"] == "FireAnimationFrame":
            pending = e if e.get("args", {}).get("data", {}).get("id") in ids else None
        elif pending is not None and e["tid"] == pending["tid"]:
            cb, render = pending["tdur"] / 1000, e["tdur"] / 1000
            out["callback"].append(cb)
            out["render"].append(render)
            out["frame"].append(cb + render)
            pending = None
    return out


def print_hot(profile: dict, top: int = 25) -> None:
    """The functions with the most self time in a V8 CPU profile."""
    nodes = {n["id"]: n for n in profile["nodes"]}
    deltas = profile.get("timeDeltas", [])
    self_ms: dict[str, float] = {}
    for node_id, dt in zip(profile.get("samples", []), deltas, strict=True):
        f = nodes[node_id]["callFrame"]
        key = f"{f['functionName'] or '(anon)'} {f['url'].rsplit('/', 1)[-1]}:{f['lineNumber'] + 1}"
        self_ms[key] = self_ms.get(key, 0.0) + dt / 1000
    for key, ms in sorted(self_ms.items(), key=lambda kv: -kv[1])[:top]:
        print(f"{ms:9.1f} ms  {key}")


def percentile(xs: list[float], p: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, int(round(p / 100 * len(s) + 0.5)) - 1))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=600)
    parser.add_argument("--blocks", type=int, default=16384,
                        help="KV blocks in the pool (28027: issue 15's Llama 8B on H100 case)")
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--cpuprofile", type=Path, help="write a V8 CPU profile of the run here")
    args = parser.parse_args()
    if not (ROOT / "node_modules" / "uplot").exists():
        print("node_modules/uplot missing: run npm ci first", file=sys.stderr)
        return 2
    from playwright.sync_api import sync_playwright

    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(Handler, directory=str(ROOT)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/bench?frames={args.frames}&blocks={args.blocks}"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=args.chromium, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1500, "height": 1000})
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        cdp = page.context.new_cdp_session(page) if args.cpuprofile else None
        if cdp:
            cdp.send("Profiler.enable")
            cdp.send("Profiler.setSamplingInterval", {"interval": 100})
            cdp.send("Profiler.start")
        browser.start_tracing(page=page, categories=["devtools.timeline", "blink"])
        page.goto(url)
        page.wait_for_function("() => window.__bench || null", timeout=300_000)
        result = page.evaluate("() => window.__bench")
        trace = json.loads(browser.stop_tracing())
        result["cpu"] = frame_cpu_ms(trace, set(result["rafIds"]))
        if cdp:
            profile = cdp.send("Profiler.stop")["profile"]
            args.cpuprofile.write_text(json.dumps(profile))
            print_hot(profile)
        browser.close()
    server.shutdown()
    if errors:
        print("page errors:", *errors, sep="\n  ", file=sys.stderr)
        return 1
    work, intervals = result["work"], result["intervals"]
    report = {
        "blocks": result["blocks"], "running": result["running"], "owned_blocks": result["owned"],
        "frames": len(work),
        "work_ms": {"p50": percentile(work, 50), "p95": percentile(work, 95), "max": max(work)},
        "main_thread_cpu_ms": {
            k: {"p50": percentile(v, 50), "p95": percentile(v, 95), "frames": len(v)}
            for k, v in result["cpu"].items() if v},
        "raf_interval_ms": {"p50": percentile(intervals, 50), "p95": percentile(intervals, 95)},
        "target_p95_ms": TARGET_P95_MS,
        "mean_ms_by_part": {k: round(v, 3) for k, v in result["profile"].items()},
        "p50_ms_by_phase": {k: round(percentile(v, 50), 3) for k, v in result["parts"].items()},
        "p95_ms_by_phase": {k: round(percentile(v, 95), 3) for k, v in result["parts"].items()},
    }
    report["meets_target"] = report["work_ms"]["p95"] <= TARGET_P95_MS
    cpu = report["main_thread_cpu_ms"].get("callback")
    # Wall time counts every moment another process held the core; CPU time does not.
    report["meets_target_cpu"] = bool(cpu) and cpu["p95"] <= TARGET_P95_MS
    print(f"{report['blocks']} blocks, {report['running']} scheduled a step (mean), "
          f"{report['frames']} frames: "
          f"frame work p50 {report['work_ms']['p50']:.2f} ms, "
          f"p95 {report['work_ms']['p95']:.2f} ms "
          f"(target {TARGET_P95_MS} ms: {'met' if report['meets_target'] else 'MISSED'}); "
          f"rAF interval p95 {report['raf_interval_ms']['p95']:.2f} ms")
    for k, c in report["main_thread_cpu_ms"].items():
        met = f" (target {TARGET_P95_MS} ms: {'met' if report['meets_target_cpu'] else 'MISSED'})"
        print(f"main-thread CPU time, {k}: p50 {c['p50']:.2f} ms, p95 {c['p95']:.2f} ms "
              f"({c['frames']} frames){met if k == 'callback' else ''}")
    print("mean ms per frame by part:", report["mean_ms_by_part"])
    print("p50 ms by phase:", report["p50_ms_by_phase"])
    print("p95 ms by phase:", report["p95_ms_by_phase"])
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
