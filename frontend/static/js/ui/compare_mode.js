// Compare mode's wiring: the configs the page's panes run (the URL's list, else the lesson's
// four modes, over the page's config), their labels (plain names for the lesson's modes and a
// preset's variants), and what a session's init means for the view:
// a page that joins a compare session shows it as a compare, and one that asks for a compare
// (or another config) reconfigures the session it drives. A follower never reconfigures.

import { runnable } from "../state/config_state.js";
import { LESSON_MODES } from "./keys.js";

// The lesson's four modes: naive, static, continuous without chunking, continuous with it.
export const LESSON_FOUR = LESSON_MODES.map((m) => ({ name: m.label, config: m.config }));

/** The compare entries the page asks for: the URL's list, else the lesson's four modes. */
export const compareList = (scenario) =>
  (scenario.compare.length >= 2 ? scenario.compare : LESSON_FOUR.map((m) => m.config));

/** The engine configs to send: one in explore, 2-4 in compare. */
export function paneConfigs(scenario) {
  if (scenario.view !== "compare") return [scenario.config];
  return compareList(scenario).map((c) => runnable({ ...scenario.config, ...c }));
}

// A value as a label shows it; an object (a P/D config's `prefill`, `decode`) as its JSON.
const shown = (v) => (v !== null && typeof v === "object" ? JSON.stringify(v) : String(v));
const sameConfig = (a, b) => Object.keys(a).length === Object.keys(b).length
  && Object.entries(a).every(([k, v]) => k in b && shown(b[k]) === shown(v));

/** A config's plain name when it is one of `named` ([{name, config}]), else its flags. */
export function labelFor(config, named = LESSON_FOUR) {
  const known = named.find((n) => sameConfig(n.config, config));
  if (known) return known.name;
  const parts = Object.entries(config).map(([k, v]) => `${k}=${shown(v)}`);
  return parts.length ? parts.join(", ") : "defaults";
}

/** One label per engine: the page's own entries when they are what the session runs; a
 * follower's are the session's, which its driver's page named (`labels` of configure). */
export function paneLabels(scenario, engines, named = LESSON_FOUR, role = "driver") {
  const list = scenario.view === "compare" ? compareList(scenario) : [scenario.config];
  const own = role !== "follower" && list.length === engines.length;
  return engines.map((e, i) => (own ? labelFor(list[i], named) : e.label ?? ""));
}

/** The configure message for the page's scenario and workload; a compare's carries its panes'
 * names (`named`: the picker's entries), for the followers' panes. */
export function configureMessage(scenario, workload, named = LESSON_FOUR) {
  const configs = paneConfigs(scenario);
  if (configs.length === 1) return { type: "configure", config: configs[0], workload };
  const labels = compareList(scenario).map((c) => clip(labelFor(c, named), LABEL_CHARS));
  return { type: "configure", configs, workload, labels };
}

const LABEL_CHARS = 120; // the protocol's longest label
const clip = (text, n) => (text.length > n ? `${text.slice(0, n - 1)}\u2026` : text);

/** What an init asks of the page: {view: the view to switch to or null, configure: whether to
 * send the page's own scenario}. `first`: the page has not configured the session yet;
 * `presetAsked`: the URL named a preset (a drive link without one keeps the session's own). */
export function joinPlan(init, scenario, { first, bootPreset, presetAsked = true }) {
  const engines = init.engines?.length ?? 1;
  const compare = scenario.view === "compare";
  if (init.role === "follower") {
    if (engines > 1 && !compare) return { view: "compare", configure: false };
    if (engines === 1 && compare) return { view: "explore", configure: false };
    return { view: null, configure: false };
  }
  if (!first || init.source === "live") return { view: null, configure: false }; // live: the endpoint's engine
  if (compare) return { view: null, configure: scenario.compare.length >= 2 || engines === 1 };
  if (engines !== 1) {
    if (!scenario.session) return { view: null, configure: true }; // the demo page asked for one
    return { view: "compare", configure: false };
  }
  const otherPreset = (presetAsked || !scenario.session)
    && (init.preset ?? bootPreset ?? "demo") !== scenario.preset;
  const asks = Object.keys(scenario.config).length > 0 || !!scenario.trace
    || scenario.preset === "synthetic" || otherPreset;
  return { view: null, configure: asks };
}

/** Whether going from view `old` to `view` changes how many engines the page's session runs. */
export const changesEngines = (old, view) => (old === "compare") !== (view === "compare");
