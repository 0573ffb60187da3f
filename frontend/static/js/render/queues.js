// The waiting, running and preempted lanes as rows of request chips (text only, never HTML),
// capped so a 512-request batch stays cheap to draw.

import { cssFor, inkFor } from "../state/palette.js";

const MAX_CHIPS = 60;

function chip(doc, id, index) {
  const el = doc.createElement("span");
  el.className = "chip";
  el.textContent = id;
  el.dataset.request = id;
  el.style.background = cssFor(index);
  el.style.color = inkFor(index);
  return el;
}

/** Replace the lane's chips when its membership changed. */
export function drawLane(el, ids, run) {
  const key = ids.length + ":" + ids.slice(0, MAX_CHIPS).join("\u0000");
  if (el.dataset.key === key) return;
  el.dataset.key = key;
  const doc = el.ownerDocument;
  const frag = doc.createDocumentFragment();
  for (const id of ids.slice(0, MAX_CHIPS)) frag.appendChild(chip(doc, id, run.index.get(id) ?? 0));
  if (ids.length > MAX_CHIPS) {
    const more = doc.createElement("span");
    more.className = "chip more";
    more.textContent = `+${ids.length - MAX_CHIPS} more`;
    frag.appendChild(more);
  }
  el.replaceChildren(frag);
}

/** Draw all three lanes; `els` = {waiting, running, preempted, counts}. */
export function drawQueues(els, laneLists, run) {
  for (const name of ["waiting", "running", "preempted"]) {
    drawLane(els[name], laneLists[name], run);
    const count = els[`${name}Count`];
    if (count) count.textContent = String(laneLists[name].length);
  }
}
