// The playback controls (buttons, speed, scrubber; the config and workload forms' buttons): a
// follower watches someone else's session read-only, so its controls are disabled (and its keys
// change only what its own page shows: drivesSession, ui/keys.js).

import { progressText, scrubMax, simulatedShare } from "../state/progress.js";
import { speedToSlider } from "./keys.js";

export { drivesSession } from "./keys.js";

export const DRIVING_CONTROLS = ["btn-play", "btn-back", "btn-fwd", "speed", "scrub", "apply", "upload"];
// ... and the lesson bar's (lesson playback, tour, next event) and the compare picker's
const DRIVING_GROUPS = "#lesson-bar button, #compare-picker input, #compare-picker button";
export const FOLLOWING = "following read-only: the session's driver controls playback and the lesson";

/** Disable (or enable) every control that drives the session; titles say why. */
export function lockControls(doc, locked) {
  const controls = [...DRIVING_CONTROLS.map((id) => doc.getElementById(id)), ...doc.querySelectorAll(DRIVING_GROUPS)];
  for (const el of controls) {
    if (!el || el.disabled === locked) continue;
    el.disabled = locked;
    if (locked) {
      el.dataset.title = el.title ?? "";
      el.title = FOLLOWING;
    } else if (el.dataset.title !== undefined) {
      el.title = el.dataset.title;
    }
  }
}

/** Buttons, sliders, view switches and keys to the page's actions. */
export function bindPlayback(doc, actions) {
  const $ = (id) => doc.getElementById(id);
  $("btn-play").addEventListener("click", () => actions.toggle());
  $("btn-fwd").addEventListener("click", () => actions.stepBy(1));
  $("btn-back").addEventListener("click", () => actions.stepBy(-1));
  $("speed").addEventListener("input", (ev) => actions.setSpeed(ev.target.value));
  const scrub = $("scrub");
  scrub.addEventListener("change", (ev) => actions.seekIndex(Number(ev.target.value)));
  // while a hand holds the thumb, drawing leaves it there (focus alone does not: a focused
  // scrubber still follows playback and seeks made by keys)
  scrub.addEventListener("pointerdown", () => { scrub.dataset.held = "1"; });
  for (const type of ["pointerup", "pointercancel", "change"]) {
    scrub.addEventListener(type, () => { delete scrub.dataset.held; });
  }
  for (const b of doc.querySelectorAll("[data-view]")) b.addEventListener("click", () => actions.setView(b.dataset.view));
  doc.addEventListener("keydown", actions.onKey);
}

/** The play button, speed, scrubber, step and clock for the lead pane. */
export function drawControls(doc, pane, { playing, speed }) {
  const $ = (id) => doc.getElementById(id);
  const setText = (id, text) => {
    if ($(id).textContent !== text) $(id).textContent = text;
  };
  setText("btn-play", playing ? "\u275a\u275a Pause" : "\u25b6 Play");
  setText("speed-out", `${speed}x`);
  const slider = $("speed");
  if (doc.activeElement !== slider) slider.value = String(speedToSlider(speed));
  if (!pane) return;
  const rec = pane.run.record;
  const scrub = $("scrub");
  scrub.max = String(scrubMax(pane));
  // the scrubber runs over record indices (a leap's records lie far past those received); its
  // thumb is drawn where the position is unless a hand holds it
  if (scrub.dataset.held !== "1") scrub.value = String(Math.max(0, rec?.iter ?? 0));
  // the part of the run simulated so far, shaded on the scrubber's track
  const share = `${(simulatedShare(pane) * 100).toFixed(1)}%`;
  if (scrub.style.getPropertyValue("--simulated") !== share) scrub.style.setProperty("--simulated", share);
  setText("sim-progress", progressText(pane));
  $("sim-progress").classList.toggle("error", !!pane.progress?.error);
  setText("step-out", rec ? `${rec.step}` : "-");
  setText("clock", rec ? `t = ${(rec.time_s + rec.step_time_ms / 1000).toFixed(3)} s` : "t = 0.000 s");
}
