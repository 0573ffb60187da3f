// The fleet view's canvas: the router at the left, a lane per replica (its pool as a strip of
// cells shaded by the share of blocks in use, a load bar, its words), and the recent arrivals
// drawn as lines from the router to their replica's lane, the newest boldest. The layout is
// data (fleetLayout), drawn on demand (drawFleet), and hit-tested (fleetHit) for hover and click.

import { arrivalWhy, fleetHeadline, imbalance, laneText, loadOf } from "../state/fleet.js";

// Pixel shares of the width: the router column, the pool strip, and the load bar (the rest is
// the lane's words); chosen so the words fit at 1280 px in projection's 18 px type.
const ROUTER_SHARE = 0.1;
const POOL_SHARE = 0.24;
const LOAD_SHARE = 0.1;
const LINE = 1.5; // lane height in lines of text

/** Where everything goes on a canvas `width` wide, text `fontPx` tall (device pixels). */
export function fleetLayout(numReplicas, width, fontPx) {
  const laneH = Math.ceil(fontPx * LINE);
  const top = laneH; // the headline's row
  const pad = Math.ceil(fontPx / 3);
  const routerW = Math.round(width * ROUTER_SHARE);
  const labelW = Math.ceil(fontPx * 2.6);
  const poolX = routerW + labelW;
  const poolW = Math.round(width * POOL_SHARE);
  const loadX = poolX + poolW + pad;
  const loadW = Math.round(width * LOAD_SHARE);
  const lanes = Array.from({ length: numReplicas }, (_, k) => ({
    replica: k, y: top + k * laneH, h: laneH, labelX: routerW + pad, poolX, poolW, loadX, loadW,
    textX: loadX + loadW + pad,
  }));
  const height = top + numReplicas * laneH + pad;
  return { width, height, fontPx, top, laneH, pad, routerW, router: { x: Math.round(routerW / 3), y: top + (numReplicas * laneH) / 2 }, lanes };
}

/** The point an arrival's line ends at: the left edge of its replica's lane, mid-height. */
export function laneEntry(layout, replica) {
  const lane = layout.lanes[replica];
  return { x: lane.labelX, y: lane.y + lane.h / 2 };
}

/** What is at canvas pixel (x, y): {replica} on a lane, {arrival} near an arrival's line in the
 * router column (its index in fleet.arrivals), else null. */
export function fleetHit(layout, fleet, x, y) {
  if (x >= layout.routerW) {
    const lane = layout.lanes.find((l) => y >= l.y && y < l.y + l.h);
    return lane ? { replica: lane.replica } : null;
  }
  let best = null;
  fleet.arrivals.forEach((a, k) => {
    const end = laneEntry(layout, a.replica);
    const { x: x0, y: y0 } = layout.router;
    const t = Math.max(0, Math.min(1, (x - x0) / Math.max(1, end.x - x0)));
    const d = Math.abs(y - (y0 + t * (end.y - y0)));
    if (d <= layout.fontPx / 2 && (!best || d <= best.d)) best = { arrival: k, d };
  });
  return best ? { arrival: best.arrival } : null;
}

/** Shading of a pool cell `percent` used: from the track colour to the used colour. */
export function cellShade(percent, theme) {
  return percent <= 0 ? theme.track : percent >= 67 ? theme.used : percent >= 34 ? theme.half : theme.low;
}

/** Draw `fleet` on a 2D context laid out by `layout`; `theme`: colours (ink, muted, bg, track,
 * used, half, low, load, hot, cursor); `hover`: fleetHit's answer or null. */
export function drawFleet(ctx, layout, fleet, theme, hover = null) {
  const { width, height, fontPx } = layout;
  ctx.fillStyle = theme.bg;
  ctx.fillRect(0, 0, width, height);
  ctx.font = `${fontPx}px sans-serif`;
  ctx.textBaseline = "middle";
  ctx.fillStyle = theme.ink;
  ctx.fillText(fleetHeadline(fleet), layout.pad, layout.top / 2);
  drawLanes(ctx, layout, fleet, theme, hover);
  drawArrivals(ctx, layout, fleet, theme, hover);
}

function drawLanes(ctx, layout, fleet, theme, hover) {
  const loads = fleet.replicas.map(loadOf);
  const top = Math.max(1, ...loads);
  const { busiest } = imbalance(fleet);
  for (const lane of layout.lanes) {
    const row = fleet.replicas[lane.replica];
    const mid = lane.y + lane.h / 2;
    const viewed = lane.replica === fleet.info.replica;
    if (viewed || hover?.replica === lane.replica) {
      ctx.fillStyle = theme.track;
      ctx.fillRect(layout.routerW, lane.y, layout.width - layout.routerW, lane.h);
    }
    ctx.fillStyle = viewed ? theme.cursor : theme.ink;
    ctx.fillText(`${viewed ? "▶" : ""}r${lane.replica}`, lane.labelX, mid);
    const cells = row.pool.length || 1;
    const cellW = lane.poolW / cells;
    row.pool.forEach((p, c) => {
      ctx.fillStyle = cellShade(p, theme);
      ctx.fillRect(lane.poolX + c * cellW, lane.y + 2, Math.max(1, cellW - 1), lane.h - 4);
    });
    ctx.fillStyle = lane.replica === busiest && loads[lane.replica] > 0 ? theme.hot : theme.load;
    ctx.fillRect(lane.loadX, lane.y + 3, (lane.loadW * loads[lane.replica]) / top, lane.h - 6);
    ctx.fillStyle = theme.ink;
    ctx.fillText(laneText(row), lane.textX, mid);
  }
}

function drawArrivals(ctx, layout, fleet, theme, hover) {
  const { x: x0, y: y0 } = layout.router;
  const n = fleet.arrivals.length;
  fleet.arrivals.forEach((a, k) => {
    const end = laneEntry(layout, a.replica);
    const newest = k === n - 1;
    ctx.strokeStyle = hover?.arrival === k || newest ? theme.cursor : theme.muted;
    ctx.globalAlpha = newest || hover?.arrival === k ? 1 : 0.25 + (0.6 * (k + 1)) / n;
    ctx.lineWidth = newest ? 3 : 1.5;
    ctx.beginPath();
    ctx.moveTo(x0, y0);
    ctx.lineTo(end.x, end.y);
    ctx.stroke();
  });
  ctx.globalAlpha = 1;
  ctx.fillStyle = theme.ink;
  ctx.beginPath();
  ctx.arc(x0, y0, layout.fontPx / 2, 0, 2 * Math.PI);
  ctx.fill();
}

/** The hover's words: why an arrival went where it did, or the newest arrival a lane got. */
export function hoverText(fleet, hover, lastTo) {
  if (!hover) return "";
  if (hover.arrival != null) return arrivalWhy(fleet.arrivals[hover.arrival], fleet.info.router);
  const a = lastTo(fleet, hover.replica);
  const open = `replica ${hover.replica}: click to watch its blocks`;
  return a ? `${open}. Last routed here: ${arrivalWhy(a, fleet.info.router)}` : open;
}
