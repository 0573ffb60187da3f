// The session's server messages applied to the page's panes. One WebSocket session; in compare
// mode it runs 2-4 engines in lockstep and every message about one of them carries its number
// (`engine`), which is also its pane's index. `init` is the page's to wire (ui/ entry).

import { applyFleetFrame } from "../state/fleet.js";
import { applyKeyframe } from "../state/keyframe.js";
import { appendRecord } from "../state/history.js";
import { applyProgress } from "../state/progress.js";
import { applyRecords, applyRequests, markDirty } from "../state/store.js";
import { sessionSpeed } from "../state/url.js";
import { showServerError } from "./config_form.js";

// A status echoes what some viewer asked for; right after this page asked for something, an
// older echo must not undo it (a quick "-" "-" would step down from a stale speed).
const ECHO_MS = 1500;

/** `onInit(msg)`: a (re)configured session; `showError(text)`: the page's error line. */
export function createMessageHandler({ doc, store, scenario, lesson, onInit, showError }) {
  function onKeyframe(i, msg) {
    const pane = store.panes[i];
    if (!pane) return;
    applyKeyframe(pane.run, msg);
    if (msg.record) appendRecord(pane.history, msg.record, pane.run);
    markDirty(store, "all");
  }

  function onStatus(msg) {
    if (msg.done) lesson.onDone();
    // the end of a run is no echo: a short run ends within ECHO_MS of its play
    if (!msg.done && performance.now() - (store.sentAt ?? -Infinity) < ECHO_MS) return;
    store.panes.forEach((p) => { p.playing = !!msg.playing; });
    scenario.speed = sessionSpeed(scenario, store.role, msg.speed);
    markDirty(store, "controls");
  }

  function onDone(i, msg) {
    const pane = store.panes[i];
    if (pane) Object.assign(pane, { status: "done", summary: msg.summary ?? null });
    if (pane && msg.num_records != null) pane.init = { ...pane.init, num_records: msg.num_records };
    markDirty(store, "controls");
  }

  return function handle(msg) {
    const i = msg.engine ?? 0;
    if (msg.type === "init") onInit(msg);
    else if (msg.type === "step") {
      applyRecords(store, i, msg.records ?? []);
      if (i === 0 && store.panes[0]) lesson.onRecords(msg.records ?? [], store.panes[0].run);
    } else if (msg.type === "keyframe") onKeyframe(i, msg);
    else if (msg.type === "requests") applyRequests(store, msg);
    else if (msg.type === "fleet" && store.panes[i]?.fleet) {
      applyFleetFrame(store.panes[i].fleet, msg);
      markDirty(store, "fleet");
    }
    else if (msg.type === "lesson" && store.role === "follower") lesson.follow(msg); // the driver's note
    else if (msg.type === "status") onStatus(msg);
    else if (msg.type === "progress") {
      applyProgress(store.panes, msg);
      markDirty(store, "controls");
    } else if (msg.type === "done") onDone(i, msg);
    else if (msg.type === "error") {
      store.panes.forEach((p) => { p.error = msg.message; });
      showError(showServerError(doc, msg));
    }
  };
}
