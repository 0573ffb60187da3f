import assert from "node:assert/strict";
import test from "node:test";

import { cellShade, drawFleet, fleetHit, fleetLayout, hoverText, laneEntry } from "../../frontend/static/js/render/fleet.js";
import { applyFleetFrame, createFleet, lastArrivalTo } from "../../frontend/static/js/state/fleet.js";

const theme = { ink: "ink", muted: "muted", bg: "bg", track: "track", used: "used", half: "half",
  low: "low", load: "load", hot: "hot", cursor: "cursor" };

// A 2D context that records what is drawn.
function fakeContext() {
  const calls = [];
  const ctx = { calls, globalAlpha: 1 };
  for (const m of ["fillRect", "fillText", "beginPath", "moveTo", "lineTo", "stroke", "arc", "fill"]) {
    ctx[m] = (...args) => calls.push({ m, args, fillStyle: ctx.fillStyle, strokeStyle: ctx.strokeStyle, lineWidth: ctx.lineWidth });
  }
  return ctx;
}

function fleet() {
  const f = createFleet({ replicas: 2, router: "round-robin", scrape_interval_ms: null, replica: 1 });
  const row = (replica, n, pool) => ({ replica, num_running: n, num_waiting: 0, kv_usage: 0.2,
    prefix_cache_hit_rate: 0.5, p99_ttft_ms: 80, pool });
  applyFleetFrame(f, { time_s: 1, replicas: [row(0, 4, [100, 0]), row(1, 1, [40, 10])],
    routed: [{ request_id: "x", arrival_s: 1, replica: 0, scores: [1, 0], reason: "its turn" }] });
  return f;
}

test("lanes stack under the headline, one text line and a half each, inside the width", () => {
  const l = fleetLayout(4, 1280, 18);
  assert.equal(l.lanes.length, 4);
  assert.equal(l.laneH, 27);
  assert.deepEqual(l.lanes.map((x) => x.y), [27, 54, 81, 108]);
  assert.equal(l.height, 27 + 4 * 27 + 6);
  for (const x of l.lanes) assert.ok(x.poolX > l.routerW && x.textX > x.loadX + x.loadW && x.textX < 1280);
});

test("a point on a lane hits its replica; a point on an arrival's line hits the arrival", () => {
  const f = fleet();
  const l = fleetLayout(2, 1000, 20);
  assert.deepEqual(fleetHit(l, f, 500, l.lanes[1].y + 2), { replica: 1 });
  assert.equal(fleetHit(l, f, 500, l.height + 50), null);
  const end = laneEntry(l, 0);
  const mid = { x: (l.router.x + end.x) / 2, y: (l.router.y + end.y) / 2 };
  assert.deepEqual(fleetHit(l, f, mid.x, mid.y), { arrival: 0 });
  assert.equal(fleetHit(l, f, mid.x, mid.y + 3 * l.fontPx), null);
});

test("hover words: an arrival's why, or a lane's invitation and its last arrival", () => {
  const f = fleet();
  assert.match(hoverText(f, { arrival: 0 }, lastArrivalTo), /^x → replica 0 \(round-robin\): its turn/);
  assert.match(hoverText(f, { replica: 0 }, lastArrivalTo), /^replica 0: click to watch its blocks\. Last routed here: x/);
  assert.equal(hoverText(f, { replica: 1 }, lastArrivalTo), "replica 1: click to watch its blocks");
  assert.equal(hoverText(f, null, lastArrivalTo), "");
});

test("drawing: the viewed lane is marked, cells shaded by use, the busiest load bar hot, the arrival drawn to its lane", () => {
  const f = fleet();
  const l = fleetLayout(2, 1000, 20);
  const ctx = fakeContext();
  drawFleet(ctx, l, f, theme);
  const texts = ctx.calls.filter((c) => c.m === "fillText").map((c) => c.args[0]);
  assert.ok(texts.includes("▶r1") && texts.includes("r0"));
  assert.ok(texts.some((t) => t.startsWith("run 4 · wait 0 · KV 20% · hit 50% · p99 TTFT 80 ms")));
  const cells = ctx.calls.filter((c) => c.m === "fillRect" && c.args[0] >= l.lanes[0].poolX && c.args[0] < l.lanes[0].poolX + l.lanes[0].poolW);
  assert.deepEqual(cells.map((c) => c.fillStyle), ["used", "track", "half", "low"]);
  const bars = ctx.calls.filter((c) => c.m === "fillRect" && c.args[0] === l.lanes[0].loadX);
  assert.deepEqual(bars.map((c) => [c.fillStyle, c.args[2]]), [["hot", l.lanes[0].loadW], ["load", l.lanes[0].loadW / 4]]);
  const line = ctx.calls.find((c) => c.m === "lineTo");
  assert.deepEqual(line.args, [laneEntry(l, 0).x, laneEntry(l, 0).y]);
  assert.equal(cellShade(0, theme), "track");
  assert.equal(cellShade(67, theme), "used");
});
