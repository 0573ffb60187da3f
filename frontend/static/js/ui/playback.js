// Playback: play, pause, step, seek and speed as control messages to the session, with the
// page's own state (playing flags, the scenario in the URL) updated at once. Compare sessions
// seek every engine to the simulated time of the lead's step.

import { historyIndexAt, historyIndexOfIter } from "../state/select.js";
import { markDirty } from "../state/store.js";
import { clampSpeed, formatScenario } from "../state/url.js";

/** `send(msg)`: the socket's; `store` and `scenario` are the page's. */
export function createPlayback({ store, scenario, send }) {
  const lead = () => store.panes[0];

  function updateUrl() {
    const url = formatScenario(scenario);
    if (url !== location.search) history.replaceState(null, "", location.pathname + url);
  }

  function play() {
    store.panes.forEach((p) => { p.playing = true; });
    send({ type: "play", speed: scenario.speed });
    markDirty(store, "controls");
  }

  function pause() {
    store.panes.forEach((p) => { p.playing = false; });
    send({ type: "pause" });
    markDirty(store, "controls");
  }

  // Forward: the server advances (every engine to the time engine 0 reaches). Back: a seek to
  // the record before the cursor, served from the nearest keyframe.
  function stepBy(n) {
    pause();
    if (n > 0) return send({ type: "step", n });
    const p = lead();
    if (!p) return;
    const idx = historyIndexAt(p.history, p.run.cursor);
    send({ type: "seek", step: p.history.cols.step[Math.max(0, idx + n)] ?? 0 });
  }

  /** A seek to record `iter` (the scrubber's value): by its step clock where it has been
   * received (the URL keeps the step), else by its index (simulated or leapt to, not seen). */
  function seekIndex(iter) {
    const p = lead();
    if (!p) return;
    const index = historyIndexOfIter(p.history, iter);
    if (index < 0) return send({ type: "seek", iter });
    const step = p.history.cols.step[index];
    send({ type: "seek", step });
    scenario.step = step;
    updateUrl();
  }

  function setSpeed(x) {
    scenario.speed = clampSpeed(x);
    if (store.panes.some((p) => p.playing)) send({ type: "play", speed: scenario.speed });
    updateUrl();
    markDirty(store, "controls");
  }

  const toggle = () => (store.panes.some((p) => p.playing) ? pause : play)();
  return { play, pause, toggle, stepBy, seekIndex, setSpeed, updateUrl };
}
