// The waiting, running and preempted lanes as rows of request chips (text only, never HTML),
// capped so a 512-request batch stays cheap to draw. Chips are kept by request id: a step that
// finishes one request and admits another removes one chip and adds one, nothing else.

import { cssFor, inkFor } from "../state/palette.js";
import { sizeGeneration } from "./size.js";

export const MAX_CHIPS = 60;
const NO_IDS = new Set();

/** How many chips of fixed size fit a lane box, leaving two chips' room for the "+N more" chip
 * when `total` does not fit (pure). */
export function chipCapacity({ laneW, laneH, chipW, chipH, gap = 2 }, total) {
  if (!(chipW > 0 && chipH > 0)) return MAX_CHIPS;
  const perRow = Math.max(1, Math.floor((laneW + gap) / (chipW + gap)));
  const rows = Math.max(1, Math.floor((laneH + gap) / (chipH + gap)));
  const fit = Math.min(MAX_CHIPS, perRow * rows);
  return total <= fit ? fit : Math.max(0, fit - 2);
}

const boxes = new WeakMap(); // lane -> its box and a probe chip's size, once per size generation

function laneBox(el) {
  let m = boxes.get(el);
  if (!m || m.generation !== sizeGeneration()) {
    const probe = chip(el.ownerDocument, "probe", 0);
    probe.style.visibility = "hidden";
    el.appendChild(probe);
    m = { generation: sizeGeneration(), laneW: el.clientWidth, laneH: el.clientHeight,
      chipW: probe.offsetWidth, chipH: probe.offsetHeight };
    probe.remove();
    boxes.set(el, m);
  }
  return m;
}

function chip(doc, id, index) {
  const el = doc.createElement("span");
  el.className = "chip";
  el.textContent = id;
  el.title = id;
  el.dataset.request = id;
  el.style.background = cssFor(index);
  el.style.color = inkFor(index);
  return el;
}

/** The DOM edits that turn chip list `old` into `ids`: ids to remove, then [id, beforeId|null]
 * insertions in order (pure, so it is tested without a DOM). */
export function chipEdits(old, ids) {
  const want = new Set(ids);
  const remove = old.filter((id) => !want.has(id));
  const kept = old.filter((id) => want.has(id));
  const stay = new Set(); // kept chips matched in order stay where they are; the rest move
  let k = 0;
  for (const id of ids) if (kept[k] === id) stay.add(kept[k++]);
  const insert = [];
  let before = null; // the next staying chip after this one
  for (let i = ids.length - 1; i >= 0; i--) {
    if (stay.has(ids[i])) before = ids[i];
    else insert.push([ids[i], before]);
  }
  return { remove, insert: insert.reverse() };
}

/** Bring the lane's chips to the first of `ids` that fit its box, plus a "+N more" chip; a chip
 * whose id is in `kv` (waiting for remote KV, P/D) says so in data-state. */
export function drawLane(el, ids, run, kv = NO_IDS) {
  const max = chipCapacity(laneBox(el), ids.length);
  const shown = ids.length > max ? ids.slice(0, max) : ids;
  const lane = el.__lane ?? (el.__lane = { ids: [], chips: new Map(), more: null });
  if (!sameList(lane.ids, shown)) {
    const doc = el.ownerDocument;
    const { remove, insert } = chipEdits(lane.ids, shown);
    for (const id of remove) {
      lane.chips.get(id).remove();
      lane.chips.delete(id);
    }
    for (const [id, before] of insert) {
      if (lane.chips.has(id)) lane.chips.get(id).remove(); // moved: reinsert at its place
      const c = lane.chips.get(id) ?? chip(doc, id, run.index.get(id) ?? 0);
      lane.chips.set(id, c);
      el.insertBefore(c, before === null ? lane.more : lane.chips.get(before));
    }
    lane.ids = shown.slice();
  }
  for (const [id, c] of lane.chips) {
    const state = kv.has(id) ? "waiting_for_kv" : "";
    if ((c.dataset.state ?? "") === state) continue;
    c.dataset.state = state;
    c.title = state ? `${id}: waiting for remote KV` : id;
  }
  const more = ids.length > max ? `+${ids.length - max} more` : "";
  if (more && !lane.more) {
    lane.more = el.ownerDocument.createElement("span");
    lane.more.className = "chip more";
    el.appendChild(lane.more);
  }
  if (lane.more && lane.more.textContent !== more) lane.more.textContent = more;
  if (lane.more) lane.more.hidden = !more;
}

function sameList(a, b) {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** Draw all three lanes; `els` = {waiting, running, preempted, counts}. */
export function drawQueues(els, laneLists, run) {
  for (const name of ["waiting", "running", "preempted"]) {
    drawLane(els[name], laneLists[name], run, laneLists.waiting_for_kv);
    const count = els[`${name}Count`];
    const text = String(laneLists[name].length);
    if (count && count.textContent !== text) count.textContent = text;
  }
}
