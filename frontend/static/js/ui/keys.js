// One key for every control. Pure: maps a KeyboardEvent-like {key, shiftKey} to an action.

import { kindForKey } from "../state/events.js";

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
