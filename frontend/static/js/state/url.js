// The scenario in the URL, so a link reproduces the view: the session joined (with its driver
// token, or only to follow it), preset or uploaded trace (with the upload token it needs), config overrides (vLLM flag names), view mode,
// compare configs, speed and step. Pure string <-> object functions.

export const VIEWS = ["explore", "compare"];

const NUMERIC = /^-?\d+(\.\d+)?$/;

function parseValue(raw) {
  if (raw === "true") return true;
  if (raw === "false") return false;
  if (raw === "null") return null;
  if (NUMERIC.test(raw)) return Number(raw);
  return raw;
}

/** {session, token, follow, preset, trace, upload_token, view, projection, pace (lesson steps a second), speed, step, config: {...}, compare: [{...}, ...]}
 * from a query string; `speedAsked` is set when the query gives a speed. */
export function parseScenario(search) {
  const params = new URLSearchParams(search);
  const scenario = { session: null, token: null, follow: false, preset: null, trace: null, upload_token: null, view: "explore", projection: false, pace: null,
    speed: 1, step: null, config: {}, compare: [] };
  for (const [key, raw] of params) {
    if (key === "session") scenario.session = raw;
    else if (key === "token") scenario.token = raw;
    else if (key === "follow") scenario.follow = raw === "1" || raw === "true";
    else if (key === "trace") scenario.trace = raw;
    else if (key === "upload_token") scenario.upload_token = raw;
    else if (key === "preset") scenario.preset = raw;
    else if (key === "view" && raw === "projection") scenario.projection = true; // older links
    else if (key === "view") scenario.view = VIEWS.includes(raw) ? raw : "explore";
    else if (key === "projection") scenario.projection = raw === "1" || raw === "true";
    else if (key === "pace") scenario.pace = clampPace(Number(raw));
    else if (key === "speed") Object.assign(scenario, { speed: clampSpeed(Number(raw)), speedAsked: true });
    else if (key === "step") scenario.step = Number.isInteger(Number(raw)) ? Number(raw) : null;
    else if (key === "compare") scenario.compare = parseCompare(raw);
    else scenario.config[key] = parseValue(raw);
  }
  return scenario;
}

function parseCompare(raw) {
  try {
    const list = JSON.parse(raw);
    if (!Array.isArray(list)) return [];
    return list.filter((c) => c && typeof c === "object" && !Array.isArray(c)).slice(0, 4);
  } catch {
    return [];
  }
}

/** The query string (with "?") for a scenario; defaults are left out. */
export function formatScenario(scenario) {
  const params = new URLSearchParams();
  if (scenario.session) params.set("session", scenario.session);
  if (scenario.token) params.set("token", scenario.token);
  if (scenario.follow) params.set("follow", "1");
  if (scenario.trace) params.set("trace", scenario.trace);
  if (scenario.trace && scenario.upload_token) params.set("upload_token", scenario.upload_token);
  if (scenario.preset) params.set("preset", scenario.preset);
  if (scenario.view && scenario.view !== "explore") params.set("view", scenario.view);
  if (scenario.projection) params.set("projection", "1");
  if (scenario.pace) params.set("pace", String(scenario.pace));
  if (scenario.speed && scenario.speed !== 1) params.set("speed", String(scenario.speed));
  if (Number.isInteger(scenario.step)) params.set("step", String(scenario.step));
  for (const [k, v] of Object.entries(scenario.config ?? {})) params.set(k, String(v));
  if (scenario.compare?.length) params.set("compare", JSON.stringify(scenario.compare));
  const s = params.toString();
  return s ? `?${s}` : "";
}

export const MIN_SPEED = 0.1;
export const MAX_SPEED = 100;
// Speeds the +/- keys move between.
export const SPEEDS = [0.1, 0.25, 0.5, 1, 2, 5, 10, 25, 50, 100];

/** Lesson playback's steps a second (null: the default). */
export const clampPace = (x) => (Number.isFinite(x) && x > 0 ? Math.min(30, Math.max(0.5, x)) : null);

export function clampSpeed(x) {
  if (!Number.isFinite(x)) return 1;
  return Math.min(MAX_SPEED, Math.max(MIN_SPEED, x));
}

/** The speed the page shows and plays at when the session reports `speed` (an init or a
 * status): a follower's is the session's (its driver's); a driver keeps the one its URL asked
 * for, which it sends with play, else takes the session's. */
export function sessionSpeed(scenario, role, speed) {
  if (!speed || (role !== "follower" && scenario.speedAsked)) return scenario.speed;
  return clampSpeed(speed);
}

/** Lesson playback's milliseconds a step for the URL's `pace` (null: the default). */
export const paceStepMs = (pace) => (pace ? 1000 / pace : null);

/** The next speed up (dir > 0) or down from `speed` on the SPEEDS ladder. */
export function nextSpeed(speed, dir) {
  if (dir > 0) return SPEEDS.find((s) => s > speed + 1e-9) ?? MAX_SPEED;
  return [...SPEEDS].reverse().find((s) => s < speed - 1e-9) ?? MIN_SPEED;
}
