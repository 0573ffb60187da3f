// One key for every control: `actionForKey` maps a KeyboardEvent-like {key, shiftKey} to an
// action (pure); `keyHandler` routes a key press's action to the page's handlers. A follower
// watches someone else's session read-only: its keys change only what its own page shows.

import { kindForKey } from "../state/events.js";
import { scrubMax } from "../state/progress.js";
import { nextSpeed } from "../state/url.js";

export const LESSON_MODES = [
  { key: "1", label: "naive", config: { policy: "naive" } },
  { key: "2", label: "static batching", config: { policy: "static" } },
  { key: "3", label: "continuous batching, no chunking", config: { policy: "vllm-v0" } },
  { key: "4", label: "continuous batching + chunked prefill", config: { policy: "vllm-v1", enable_chunked_prefill: true } },
];

/** {type, ...} for a key press, or null when the key is not ours. */
export function actionForKey(ev) {
  const big = ev.shiftKey ? 10 : 1;
  switch (ev.key) {
    case " ": case "k": return { type: "toggle" };
    case "ArrowRight": case "l": return { type: "step", n: big };
    case "ArrowLeft": case "j": return { type: "step", n: -big };
    case "Home": return { type: "seek", step: 0 };
    case "End": return { type: "seek_end" };
    case "+": case "=": return { type: "speed", dir: 1 };
    case "-": case "_": return { type: "speed", dir: -1 };
    case "p": case "P": return { type: "projection" };
    case "c": case "C": return { type: "view", view: "compare", toggle: true };
    case "e": case "E": case "Escape": return { type: "view", view: "explore" };
    case "L": return { type: "pacing" }; // Shift+L: lesson playback (l alone steps)
    case "t": case "T": return { type: "tour" };
    default: break;
  }
  const kind = kindForKey(ev.key.toLowerCase?.() ?? ev.key);
  if (kind) return { type: "next_event", kind };
  const mode = LESSON_MODES.find((m) => m.key === ev.key);
  return mode ? { type: "lesson", mode } : null;
}

/** Speed slider position (log10) and back. */
export const speedToSlider = (s) => Math.log10(s);
export const sliderToSpeed = (v) => Math.round(10 ** Number(v) * 100) / 100;

const DRIVING_ACTIONS = new Set(["toggle", "step", "seek", "seek_end", "speed", "lesson", "pacing", "next_event", "tour"]);

/** Whether a key action would send the session a control message. */
export const drivesSession = (action) => DRIVING_ACTIONS.has(action.type);

// Each action type's handler. `playback`: ui/playback.js's; `views`: ui/views.js's.
function handlers({ store, scenario, lesson, playback: p, views, applyConfig }) {
  const lead = () => store.panes[0];
  return {
    // Space pauses or goes on: the lesson's paced playback while it runs, else the session's
    toggle: () => (lesson.on || lesson.tour ? lesson.toggle() : p.toggle()),
    pacing: () => lesson.toggle(),
    tour: () => lesson.startTour(),
    next_event: (a) => lesson.next(a.kind),
    step: (a) => p.stepBy(a.n),
    seek: () => p.seekIndex(0),
    seek_end: () => p.seekIndex(lead() ? scrubMax(lead()) : 0),
    speed: (a) => p.setSpeed(nextSpeed(scenario.speed, a.dir)),
    projection: () => views.setProjection(!scenario.projection),
    view: (a) => {
      if (a.view === "explore" && !a.toggle) views.setProjection(false); // E / Esc: back to the plain explorer
      views.setView(a.toggle && scenario.view === a.view ? "explore" : a.view);
    },
    lesson: (a) => applyConfig({ ...scenario.config, ...a.mode.config }),
  };
}

/** The page's keydown listener. Keys typed into a text field, select or textarea are theirs. */
export function keyHandler(page) {
  const on = handlers(page);
  return (ev) => {
    if (ev.target?.closest?.("input[type=text], select, textarea")) return;
    const a = actionForKey(ev);
    if (!a || (page.store.role === "follower" && drivesSession(a))) return;
    ev.preventDefault();
    on[a.type](a);
  };
}
