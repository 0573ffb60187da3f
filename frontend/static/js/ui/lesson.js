// Pacing for people: lesson playback steps the run a few records a second, holds each caption
// long enough to read and pauses by itself at the chosen events; "next event" jumps to the
// next record of one kind (found among the records seen, else by stepping the server ahead; when
// the run ends without one, it goes back to where it was and says so).

import { eventKinds, labelOf, nextEvent } from "../state/events.js";
import { TOUR_START, TOUR_STOPS } from "./tour.js";

export const STEP_MS = 400; // 2.5 steps a second unless the URL's `pace` says otherwise
export const HOLD_MS = 2500; // a caption stays at least this long, unless an event replaces it
const SEARCH_STEP = 16;

export class Lesson {
  /** `send(msg)` drives the session; `lead()` is the lead pane; `changed()` redraws. */
  constructor({ send, lead, changed, setTimer = (fn, ms) => setTimeout(fn, ms), stepMs = STEP_MS }) {
    Object.assign(this, { send, lead, changed, setTimer, stepMs });
    this.events = []; // [{iter, step, t, kind}] of the lead pane, by iter
    this.seen = -1; // the last iter looked at
    this.on = false;
    this.pauseAt = new Set(["preemption", "prefix_cache_hit", "static_waste"]);
    this.note = null; // why lesson playback stopped, or what "next" is looking for
    this.anchor = null; // the explainer (/explain#anchor) the note is about
    this.tour = null; // the tour's stops not reached yet (a Set of kinds), or null
    this.searching = null;
    this.searchFrom = null; // {iter, step} where a "next" search started
    this.following = null; // a follower's: {on, tour} of the driver's lesson
    this.shown = { text: "", at: -Infinity };
  }

  reset() {
    this.events = [];
    this.seen = -1;
    this.stop(null);
  }

  /** Records arrived for the lead pane: note their events; stop or land where asked. */
  onRecords(records, run) {
    const promptLen = (id) => run.reqs[run.index.get(id)]?.spec?.prompt_len;
    const found = [];
    for (const rec of records) {
      if (rec.iter <= this.seen) continue;
      this.seen = rec.iter;
      for (const kind of eventKinds(rec, promptLen)) {
        const e = { iter: rec.iter, step: rec.step, t: rec.time_s, kind };
        this.events.push(e);
        found.push(e);
      }
    }
    if (this.searching) return this.continueSearch(found);
    const pausing = this.tour ?? this.pauseAt;
    const stop = this.on && found.find((e) => pausing.has(e.kind));
    if (stop && this.tour) this.tourStop(stop, records.find((r) => r.iter === stop.iter), run);
    else if (stop) this.stop(`Paused at a ${labelOf(stop.kind)} (step ${stop.step}): L or Space to go on.`);
    else if (this.on) this.setTimer(() => this.tick(), this.stepMs);
  }

  /** The run reached its end (a status with done): nothing more will arrive to step or find. */
  onDone() {
    if (this.searching) this.notFound();
    else if (this.on) this.stop(this.tour ? "The run has ended; the tour is over." : "The run has ended.");
  }

  toggle() {
    if (this.on) return this.stop(null, this.tour ? TOUR_START.anchor : null);
    this.on = true;
    this.note = this.tour ? "Tour: playing to the next stop…"
      : `Lesson playback: ${+(1000 / this.stepMs).toFixed(1)} steps a second, pausing at ${[...this.pauseAt].map(labelOf).join(", ")}.`;
    this.changed();
    this.send({ type: "pause" });
    this.tick();
  }

  /** What the room should read: the note, its explainer, and whether playback or the tour runs
   * (a driver's page sends it to the session, which relays it to the followers). */
  shared() {
    return { note: this.note ?? null, anchor: this.anchor ?? null, on: this.on, tour: !!this.tour };
  }

  /** A follower's page shows the driver's note (a `lesson` message) instead of its own. */
  follow(msg) {
    this.note = msg.note ?? null;
    this.anchor = msg.anchor ?? null;
    this.following = { on: !!msg.on, tour: !!msg.tour };
    this.changed();
  }

  tick() {
    const p = this.lead();
    if (!this.on || !p) return;
    this.send({ type: "step", n: 1 });
  }

  stop(note, anchor = null) {
    this.on = false;
    this.searching = null;
    this.note = note;
    this.anchor = anchor;
    if (!anchor) this.tour = null; // a stop that is not a tour stop ends the tour
    this.changed();
  }

  /** The guided tour: from the start of the run, lesson playback that stops once at the first
   * record of each concept (ui/tour.js). */
  startTour() {
    this.send({ type: "seek", iter: -1 });
    this.events = [];
    this.seen = -1;
    this.tour = new Set(Object.keys(TOUR_STOPS));
    this.stop(TOUR_START.text, TOUR_START.anchor);
  }

  tourStop(e, rec, run) {
    this.tour.delete(e.kind);
    const { text, anchor } = TOUR_STOPS[e.kind](rec, run);
    const last = this.tour.size === 0 ? " That was the tour's last stop." : "";
    this.stop(`Step ${e.step}. ${text}${last}`, anchor);
    if (last) this.tour = null;
  }

  /** Jump to the next record of `kind` after the cursor. */
  next(kind) {
    const p = this.lead();
    if (!p) return;
    this.on = false;
    const at = p.run.record?.iter ?? -1;
    const e = nextEvent(this.events, kind, at);
    if (e) return this.land(e);
    this.searching = kind;
    this.searchFrom = { iter: at, step: p.run.record?.step ?? null };
    this.note = `Looking for the next ${labelOf(kind)}…`;
    this.changed();
    this.send({ type: "step", n: SEARCH_STEP });
  }

  continueSearch(found) {
    const e = found.find((x) => x.kind === this.searching);
    if (e) return this.land(e);
    this.send({ type: "step", n: SEARCH_STEP });
  }

  /** The search reached the end of the run: back to where it started, the teacher's place. */
  notFound() {
    const { iter, step } = this.searchFrom ?? { iter: -1, step: null };
    const kind = this.searching;
    this.send({ type: "seek", iter });
    const where = step == null ? "the start" : `step ${step}`;
    this.stop(`No ${labelOf(kind)} after this point in the run: staying at ${where}.`);
  }

  land(e) {
    this.searching = null;
    this.send({ type: "seek", iter: e.iter });
    this.stop(`Next ${labelOf(e.kind)}: step ${e.step}.`);
  }

  /** The caption to show now: while lesson playback runs, a caption stays HOLD_MS unless the
   * new step has an event it pauses at. */
  caption(text, now) {
    const iter = this.lead()?.run.record?.iter;
    const urgent = this.events.some((e) => e.iter === iter && this.pauseAt.has(e.kind));
    if (!this.on || urgent || now - this.shown.at >= HOLD_MS || !this.shown.text) {
      if (text !== this.shown.text) this.shown = { text, at: now };
    }
    return this.shown.text;
  }
}
