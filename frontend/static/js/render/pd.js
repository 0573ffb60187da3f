// The P/D view's canvas: the prefill pool's lanes at the left, the KV link in the middle, the
// decode pool's lanes at the right (each lane as the fleet view draws one: its pool strip and
// its words), and each KV transfer as a line from its prefill lane to its decode lane: dashed
// while queued (with the link's queue), a bar filling while its bytes move, faint once done.
// Laid out as data (pdLayout), drawn on demand (drawPD), hit-tested (pdHit).

import { cellShade } from "./fleet.js";
import { linkQueues, pdHeadline, poolLaneText, transferShare, transferState, transferText }
  from "../state/pd.js";

// Shares of the width: each pool's column and the link between them (the pool strip takes a
// third of its column); the words of a lane fit a 1280 px canvas at projection's 18 px type.
const POOL_SHARE = 0.39;
const STRIP_SHARE = 0.3;
const LINE = 1.5; // lane height in lines of text

/** Where everything goes: `info` is init's fleet info (its pools), `width` and `fontPx` in
 * device pixels. Lanes carry {pool, replica}. */
export function pdLayout(info, width, fontPx) {
  const laneH = Math.ceil(fontPx * LINE);
  const pad = Math.ceil(fontPx / 3);
  const top = laneH; // the headline's row
  const colW = Math.round(width * POOL_SHARE);
  const labelW = Math.ceil(fontPx * 2.2);
  const column = (pool, x0) => Array.from({ length: info.pools[pool].replicas }, (_, k) => {
    const stripX = x0 + labelW;
    const stripW = Math.round((colW - labelW) * STRIP_SHARE);
    return { pool, replica: k, x: x0, w: colW, y: top + k * laneH, h: laneH, labelX: x0 + pad,
      stripX, stripW, textX: stripX + stripW + pad };
  });
  const rows = Math.max(info.pools.prefill.replicas, info.pools.decode.replicas);
  const link = { x0: colW, x1: width - colW };
  const lanes = [...column("prefill", 0), ...column("decode", link.x1)];
  return { width, height: top + (rows + 1) * laneH + pad, fontPx, top, laneH, pad, link, lanes,
    footY: top + rows * laneH + laneH / 2 };
}

const laneAt = (layout, pool, replica) => layout.lanes.find((l) => l.pool === pool && l.replica === replica);

/** A transfer's line across the link: from its prefill lane's right edge to its decode lane's
 * left edge (null when a lane is not in the layout). */
export function transferLine(layout, tr) {
  const p = laneAt(layout, "prefill", tr.prefill_replica);
  const d = laneAt(layout, "decode", tr.decode_replica);
  if (!p || !d) return null;
  return { x0: layout.link.x0, y0: p.y + p.h / 2, x1: layout.link.x1, y1: d.y + d.h / 2 };
}

/** What is at (x, y): {pool, replica} on a lane, {transfer} (its index) near a transfer's line
 * in the link column, else null. */
export function pdHit(layout, fleet, x, y) {
  if (x < layout.link.x0 || x >= layout.link.x1) {
    const lane = layout.lanes.find((l) => x >= l.x && x < l.x + l.w && y >= l.y && y < l.y + l.h);
    return lane ? { pool: lane.pool, replica: lane.replica } : null;
  }
  let best = null;
  fleet.transfers.forEach((tr, k) => {
    const line = transferLine(layout, tr);
    if (!line) return;
    const s = (x - line.x0) / Math.max(1, line.x1 - line.x0);
    const d = Math.abs(y - (line.y0 + s * (line.y1 - line.y0)));
    if (d <= layout.fontPx / 2 && (!best || d < best.d)) best = { transfer: k, d };
  });
  return best ? { transfer: best.transfer } : null;
}

/** Draw `fleet` (a P/D fleet's state); `theme` as drawFleet's plus `kv` (waiting for KV). Returns
 * how many transfers it drew (the canvas says it: data-transfers). */
export function drawPD(ctx, layout, fleet, theme, hover = null) {
  ctx.fillStyle = theme.bg;
  ctx.fillRect(0, 0, layout.width, layout.height);
  ctx.font = `${layout.fontPx}px sans-serif`;
  ctx.textBaseline = "middle";
  ctx.fillStyle = theme.ink;
  ctx.fillText(pdHeadline(fleet), layout.pad, layout.top / 2);
  for (const lane of layout.lanes) drawLane(ctx, lane, fleet, theme, hover);
  const drawn = drawTransfers(ctx, layout, fleet, theme, hover);
  ctx.fillStyle = theme.muted;
  const legend = "dashed: queued for the link · bar: KV bytes moving · faint: done · ◆ waiting for remote KV";
  ctx.fillText(legend, layout.pad, layout.footY);
  return drawn;
}

function drawLane(ctx, lane, fleet, theme, hover) {
  const row = fleet.pools[lane.pool][lane.replica];
  const mid = lane.y + lane.h / 2;
  const viewed = fleet.info.pool === lane.pool && fleet.info.replica === lane.replica;
  if (viewed || (hover?.pool === lane.pool && hover.replica === lane.replica)) {
    ctx.fillStyle = theme.track;
    ctx.fillRect(lane.x, lane.y, lane.w, lane.h);
  }
  ctx.fillStyle = viewed ? theme.cursor : theme.ink;
  ctx.fillText(`${viewed ? "▶" : ""}${lane.pool === "prefill" ? "P" : "D"}${lane.replica}`, lane.labelX, mid);
  const cells = row.pool.length || 1;
  const cellW = lane.stripW / cells;
  row.pool.forEach((p, c) => {
    ctx.fillStyle = cellShade(p, theme);
    ctx.fillRect(lane.stripX + c * cellW, lane.y + 2, Math.max(1, cellW - 1), lane.h - 4);
  });
  const waits = row.num_waiting_for_kv ?? 0;
  ctx.save(); // the words stay in their pool's column, off the link's labels
  ctx.beginPath();
  ctx.rect(lane.x, lane.y, lane.w, lane.h);
  ctx.clip();
  ctx.fillStyle = waits ? theme.kv : theme.ink;
  ctx.fillText(`${waits ? `◆${waits} for KV · ` : ""}${poolLaneText(row)}`, lane.textX, mid);
  ctx.restore();
}

function drawTransfers(ctx, layout, fleet, theme, hover) {
  const t = fleet.time_s;
  const queues = linkQueues(fleet.transfers, t);
  let drawn = 0;
  fleet.transfers.forEach((tr, k) => {
    const line = transferLine(layout, tr);
    if (!line) return;
    const state = transferState(tr, t);
    ctx.globalAlpha = state === "done" ? 0.3 : 1;
    ctx.strokeStyle = state === "failed" ? theme.hot : hover?.transfer === k ? theme.cursor : theme.muted;
    ctx.lineWidth = state === "moving" ? 2 : 1;
    ctx.setLineDash(state === "queued" ? [layout.pad, layout.pad] : []);
    ctx.beginPath();
    ctx.moveTo(line.x0, line.y0);
    ctx.lineTo(line.x1, line.y1);
    ctx.stroke();
    ctx.setLineDash([]);
    if (state === "moving") {
      const s = transferShare(tr, t);
      ctx.fillStyle = theme.kv;
      ctx.beginPath();
      ctx.arc(line.x0 + s * (line.x1 - line.x0), line.y0 + s * (line.y1 - line.y0), layout.fontPx / 3, 0, 2 * Math.PI);
      ctx.fill();
    }
    drawn += 1;
  });
  ctx.globalAlpha = 1;
  ctx.fillStyle = theme.ink;
  const labelled = new Set();
  for (const tr of fleet.transfers) { // one label a link: its newest transfer, and its queue
    const key = `${tr.prefill_replica}->${tr.decode_replica}`;
    const line = transferLine(layout, tr);
    if (!line || labelled.has(key) || transferState(tr, t) === "done") continue;
    labelled.add(key);
    const queued = queues.get(key) ?? 0;
    const words = `${tr.request_id} · ${tr.num_blocks} blk${queued ? ` · queue ${queued}` : ""}`;
    ctx.fillText(words, line.x0 + layout.pad, (line.y0 + line.y1) / 2 - layout.fontPx / 2);
  }
  return drawn;
}

/** The hover's words: a transfer's (and, the run done, its request's TTFT parts), or a lane's. */
export function pdHoverText(fleet, hover, partsText) {
  if (!hover) return "";
  if (hover.transfer != null) {
    const tr = fleet.transfers[hover.transfer];
    const parts = partsText(tr.request_id);
    return transferText(tr, fleet.time_s) + (parts ? `. ${parts}` : "");
  }
  const waits = fleet.pools[hover.pool][hover.replica]?.waiting_for_kv ?? [];
  const open = `${hover.pool} replica ${hover.replica}: click to watch its blocks`;
  return waits.length ? `${open}. Waiting for remote KV: ${waits.join(", ")}` : open;
}
