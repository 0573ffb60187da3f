// The store: panes (one run and its history per engine config), dirty flags, and one pending
// animation frame. State changes mark what they touched; the frame draws only what is dirty.

import { createFleet } from "./fleet.js";
import { appendRecord, createHistory } from "./history.js";
import { addRequests, applyRecord, createRun } from "./reduce.js";

/** `requestFrame` is window.requestAnimationFrame in the page, a fake in tests. */
export function createStore(requestFrame) {
  return { panes: [], dirty: new Set(), pending: false, draw: null, requestFrame, frames: 0 };
}

/** Register what to call, once per frame, with the set of dirty keys. */
export function onFrame(store, draw) {
  store.draw = draw;
}

export function markDirty(store, ...keys) {
  for (const k of keys) store.dirty.add(k);
  if (store.pending || !store.requestFrame) return;
  store.pending = true;
  store.requestFrame(() => flush(store));
}

function flush(store) {
  store.pending = false;
  const dirty = store.dirty;
  store.dirty = new Set();
  store.frames += 1;
  if (store.draw) store.draw(dirty);
}

/** A pane for one session: its init, live run, append-only history and status, and its
 * fleet when the engine is one (init's `fleet`). */
export function createPane(init, label = "") {
  return {
    label,
    init,
    run: createRun(init),
    history: createHistory(),
    fleet: init.fleet ? createFleet(init.fleet) : null,
    status: "ready",
    summary: null,
    error: null,
    playing: false,
    speed: 1,
  };
}

export function resetPane(store, i, init) {
  const pane = store.panes[i];
  const fresh = createPane(init, pane?.label ?? "");
  fresh.speed = pane?.speed ?? 1;
  store.panes[i] = fresh;
  markDirty(store, "all");
  return fresh;
}

/** Apply a batch of records to a pane and mark what they touched. */
export function applyRecords(store, i, records) {
  const pane = store.panes[i];
  if (!pane) return;
  for (const rec of records) {
    applyRecord(pane.run, rec);
    appendRecord(pane.history, rec, pane.run);
  }
  if (records.length) markDirty(store, "step");
}

/** A page of the session's request list (the transport's `requests` message): every pane's
 * init.requests and run grow by it; views read a list that may still be filling. */
export function applyRequests(store, msg) {
  for (const pane of store.panes) {
    const list = (pane.init.requests ??= []);
    if (list.length !== msg.offset) continue; // a page of an earlier list, or one already in
    for (const spec of msg.requests) list.push(spec);
    addRequests(pane.run, msg.requests);
  }
  markDirty(store, "all");
}
