import assert from "node:assert/strict";
import test from "node:test";

import { drawPD, pdHit, pdHoverText, pdLayout, transferLine } from "../../frontend/static/js/render/pd.js";
import { applyFleetFrame, createFleet } from "../../frontend/static/js/state/fleet.js";

const theme = { ink: "ink", muted: "muted", bg: "bg", track: "track", used: "used", half: "half",
  low: "low", load: "load", hot: "hot", cursor: "cursor", kv: "kv" };
const info = { replicas: 3, router: "round-robin", scrape_interval_ms: 0, replica: 1, pool: "decode",
  pools: { prefill: { replicas: 1, router: "round-robin" }, decode: { replicas: 2, router: "round-robin" } },
  kv_link: { kind: "nvlink", gbps: 450, latency_ms: 0.005 }, pd_threshold: 0 };

function fakeContext() {
  const calls = [];
  const ctx = { calls, globalAlpha: 1 };
  for (const m of ["fillRect", "fillText", "beginPath", "moveTo", "lineTo", "stroke", "arc", "fill", "setLineDash",
    "save", "restore", "rect", "clip"]) {
    ctx[m] = (...args) => calls.push({ m, args, fillStyle: ctx.fillStyle, strokeStyle: ctx.strokeStyle });
  }
  return ctx;
}

function pdFleet() {
  const f = createFleet(info);
  const row = (replica, extra = {}) => ({ replica, num_running: 1, num_waiting: 0, kv_usage: 0.2,
    prefix_cache_hit_rate: null, p99_ttft_ms: null, pool: [50, 0], ...extra });
  const tr = (id, d, start, done) => ({ request_id: id, prefill_replica: 0, decode_replica: d, num_blocks: 4,
    num_bytes: 1e6, ready_s: 1.0, start_s: start, done_s: done, failed: false });
  applyFleetFrame(f, { type: "fleet", v: 1, engine: 0, time_s: 1.1, replicas: [], routed: [],
    pools: { prefill: [row(0)], decode: [row(0), row(1, { num_waiting_for_kv: 1, waiting_for_kv: ["b"] })] },
    transfers: [tr("a", 1, 1.0, 1.2), tr("b", 1, 1.2, 1.4)] });
  return f;
}

test("the prefill lanes are at the left, the decode lanes at the right, the link between", () => {
  const layout = pdLayout(info, 1000, 20);
  const p = layout.lanes.filter((l) => l.pool === "prefill");
  const d = layout.lanes.filter((l) => l.pool === "decode");
  assert.equal(p.length, 1);
  assert.equal(d.length, 2);
  assert.ok(p[0].x + p[0].w <= layout.link.x0 && layout.link.x1 <= d[0].x);
  assert.ok(d[1].y > d[0].y);
});

test("a transfer's line joins its prefill lane to its decode lane", () => {
  const layout = pdLayout(info, 1000, 20);
  const line = transferLine(layout, { prefill_replica: 0, decode_replica: 1 });
  const d1 = layout.lanes.find((l) => l.pool === "decode" && l.replica === 1);
  assert.equal(line.y1, d1.y + d1.h / 2);
  assert.equal(line.x0, layout.link.x0);
});

test("hit-testing finds a lane by pool and replica, and a transfer on the link", () => {
  const f = pdFleet();
  const layout = pdLayout(info, 1000, 20);
  const d1 = layout.lanes.find((l) => l.pool === "decode" && l.replica === 1);
  assert.deepEqual(pdHit(layout, f, d1.x + 5, d1.y + 2), { pool: "decode", replica: 1 });
  const line = transferLine(layout, f.transfers[0]);
  const mx = (line.x0 + line.x1) / 2;
  assert.equal(pdHit(layout, f, mx, (line.y0 + line.y1) / 2).transfer != null, true);
  assert.match(pdHoverText(f, { pool: "decode", replica: 1 }, () => ""), /Waiting for remote KV: b$/);
  assert.match(pdHoverText(f, { transfer: 0 }, () => "TTFT 1 ms"), /^a: P0 → D1, 4 blocks .*\. TTFT 1 ms$/);
});

test("drawing shows a moving transfer's bar, a queued one dashed with the link's queue, and the KV wait", () => {
  const f = pdFleet();
  const ctx = fakeContext();
  const drawn = drawPD(ctx, pdLayout(info, 1000, 20), f, theme);
  assert.equal(drawn, 2);
  assert.ok(ctx.calls.some((c) => c.m === "arc" && c.fillStyle === "kv")); // a's bytes moving
  assert.ok(ctx.calls.some((c) => c.m === "setLineDash" && c.args[0].length === 2)); // b queued
  const texts = ctx.calls.filter((c) => c.m === "fillText").map((c) => c.args[0]);
  assert.ok(texts.some((t) => t === "a · 4 blk · queue 1")); // one label a link: queue behind a
  assert.ok(texts.some((t) => t.startsWith("▶D1") === false && t.startsWith("◆1 for KV")));
  assert.ok(texts[0].startsWith("simulated P/D"));
});

test("a failed transfer's line is drawn in the hot (red) colour once it has failed, and only then", () => {
  const f = createFleet(info);
  const row = (replica) => ({ replica, num_running: 0, num_waiting: 0, kv_usage: 0, prefix_cache_hit_rate: null,
    p99_ttft_ms: null, pool: [] });
  // x's load to D1 fails at 1.2 s (vLLM's _handle_failed_recving, rule D5); y's to D0 succeeds at 1.3 s
  const x = { request_id: "x", prefill_replica: 0, decode_replica: 1, num_blocks: 4, num_bytes: 1e6, ready_s: 1.0,
    start_s: 1.0, done_s: 1.2, failed: true };
  const y = { ...x, request_id: "y", decode_replica: 0, done_s: 1.3, failed: false };
  const drawAt = (time_s) => {
    applyFleetFrame(f, { type: "fleet", v: 1, engine: 0, time_s, replicas: [], routed: [],
      pools: { prefill: [row(0)], decode: [row(0), row(1)] }, transfers: [x, y] });
    const ctx = fakeContext();
    drawPD(ctx, pdLayout(info, 1000, 20), f, theme);
    // each line: its stroke, with the colour and alpha it was drawn in, and where it ends
    const strokes = [];
    ctx.calls.forEach((c, k) => {
      if (c.m !== "stroke") return;
      const to = ctx.calls.slice(0, k).reverse().find((p) => p.m === "lineTo");
      strokes.push({ colour: c.strokeStyle, y1: to.args[1] });
    });
    return strokes;
  };
  const layout = pdLayout(info, 1000, 20);
  const toD1 = transferLine(layout, x).y1;
  const toD0 = transferLine(layout, y).y1;
  const after = drawAt(1.25); // x failed, y still moving
  assert.deepEqual(after.filter((s) => s.colour === "hot").map((s) => s.y1), [toD1]);
  assert.equal(after.find((s) => s.y1 === toD0).colour, "muted");
  const before = drawAt(1.1); // both moving: nothing failed yet
  assert.ok(before.every((s) => s.colour !== "hot"));
  const done = drawAt(1.5); // y done (faint, not red), x still red
  assert.deepEqual(done.filter((s) => s.colour === "hot").map((s) => s.y1), [toD1]);
});
