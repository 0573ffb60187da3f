// Entry module: reads the boot data, joins the page's session, and wires transport, state,
// rendering and input together. Everything else is a module that does one of those.

import { openLink } from "./transport/index.js";
import { ExploreView } from "./ui/explore.js";
import { CompareView } from "./ui/compare.js";
import { bindTools } from "./ui/diagnosis.js";
import { actionForKey, sliderToSpeed, speedToSlider } from "./ui/keys.js";
import { buildForm, collect, fillPresets, CONFIG_FIELDS, SYNTHETIC_FIELDS } from "./ui/panels.js";
import { forgetSizes } from "./render/size.js";
import { caption } from "./state/caption.js";
import { applyKeyframe } from "./state/keyframe.js";
import { historyIndexAt } from "./state/select.js";
import { appendRecord } from "./state/history.js";
import { applyRecords, createPane, createStore, markDirty, onFrame, resetPane } from "./state/store.js";
import { clampSpeed, formatScenario, nextSpeed, parseScenario } from "./state/url.js";

const doc = document;
const $ = (id) => doc.getElementById(id);
const boot = JSON.parse($("boot").textContent);
const scenario = parseScenario(location.search);
if (!scenario.preset) scenario.preset = boot.preset ?? boot.presets?.[0]?.name ?? "demo";
const store = createStore((cb) => requestAnimationFrame(cb));
let link = null;
let configured = false; // whether this page has sent its scenario's configure yet
let uPlot = null;
let explore = null;
let compare = null;

function setText(id, text) {
  const el = $(id);
  if (el && el.textContent !== text) el.textContent = text;
}

function showError(message) {
  const el = $("error");
  el.hidden = !message;
  el.textContent = message ?? "";
}

function paneConfigs() {
  if (scenario.view !== "compare") return [scenario.config];
  const list = scenario.compare.length >= 2 ? scenario.compare
    : [{ policy: "vllm-v1" }, { policy: "vllm-v0" }];
  return list.map((c) => ({ ...scenario.config, ...c }));
}

function labelFor(config) {
  const parts = Object.entries(config).map(([k, v]) => `${k}=${v}`);
  return parts.length ? parts.join(", ") : "defaults";
}

// --- the session ----------------------------------------------------------------------------
// One WebSocket session; in compare mode it runs 2-4 engines in lockstep and every message
// about one of them carries its number (`engine`), which is also its pane's index.

function handle(msg) {
  const i = msg.engine ?? 0;
  if (msg.type === "init") onInit(msg);
  else if (msg.type === "step") applyRecords(store, i, msg.records ?? []);
  else if (msg.type === "keyframe") onKeyframe(i, msg);
  else if (msg.type === "status") onStatus(msg);
  else if (msg.type === "done") {
    const pane = store.panes[i];
    if (pane) Object.assign(pane, { status: "done", summary: msg.summary ?? null });
    if (pane && msg.num_records != null) pane.init = { ...pane.init, num_records: msg.num_records };
    markDirty(store, "controls");
  } else if (msg.type === "error") {
    store.panes.forEach((p) => { p.error = msg.message; });
    showError(msg.field ? `${msg.field}: ${msg.message}` : msg.message);
  }
}

function onInit(msg) {
  const engines = msg.engines?.length ? msg.engines : [msg];
  const configs = paneConfigs();
  store.panes.length = engines.length;
  engines.forEach((e, i) => {
    const pane = resetPane(store, i, { ...msg, ...e, engines: undefined });
    pane.label = configs.length === engines.length ? labelFor(configs[i]) : (e.label ?? "");
    pane.playing = !!msg.playing;
  });
  store.role = msg.role ?? "driver";
  if (msg.session_id) store.sessionId = msg.session_id;
  if (msg.speed) scenario.speed = clampSpeed(msg.speed);
  showError(null);
  if (!configured && wantsConfigure(msg)) {
    configured = true;
    return sendConfigure();
  }
  configured = true;
  if (Number.isInteger(scenario.step) && scenario.step > 0 && !store.seeked) {
    store.seeked = true;
    send({ type: "seek", step: scenario.step });
  }
}

// The page joins the session the server named; it reconfigures it only when the URL asks for
// something else than what the session runs (a compare, other flags, another workload). A
// follower never does, and a page that joins someone's compare session shows it as a compare.
function wantsConfigure(init) {
  const engines = init.engines?.length ?? 1;
  if (init.role === "follower") {
    if (engines > 1 && scenario.view !== "compare") setView("compare", { reconfigure: false });
    return false;
  }
  if (scenario.view === "compare") return scenario.compare.length >= 2 || engines === 1;
  if (engines !== 1) {
    if (!scenario.session) return true; // the demo page asked for one engine
    setView("compare", { reconfigure: false });
    return false;
  }
  if (Object.keys(scenario.config).length) return true;
  if (scenario.trace || scenario.preset === "synthetic") return true;
  return (init.preset ?? boot.preset ?? "demo") !== scenario.preset;
}

function onKeyframe(i, msg) {
  const pane = store.panes[i];
  if (!pane) return;
  applyKeyframe(pane.run, msg);
  if (msg.record) appendRecord(pane.history, msg.record, pane.run);
  markDirty(store, "all");
}

// A status echoes what some viewer asked for; right after this page asked for something, an
// older echo must not undo it (a quick "-" "-" would step down from a stale speed).
const ECHO_MS = 1500;

function onStatus(msg) {
  if (performance.now() - (store.sentAt ?? -Infinity) < ECHO_MS) return;
  store.panes.forEach((p) => { p.playing = !!msg.playing; });
  if (msg.speed) scenario.speed = clampSpeed(msg.speed);
  markDirty(store, "controls");
}

function send(msg) {
  if (msg.type === "play" || msg.type === "pause" || msg.type === "step") store.sentAt = performance.now();
  link?.send(msg);
}

function sendConfigure() {
  const configs = paneConfigs();
  const msg = configs.length > 1 ? { type: "configure", configs, workload: workloadSpec() }
    : { type: "configure", config: configs[0], workload: workloadSpec() };
  send(msg);
}

function connect() {
  store.panes = [createPane({ num_gpu_blocks: 1, block_size: 16, requests: [] })];
  link = openLink(boot, {
    onOpen: () => setText("conn", store.role === "follower" ? "following" : "connected"),
    onMessage: handle,
    onClose: () => setText("conn", "disconnected"),
  });
}

function workloadSpec() {
  if (scenario.preset === "synthetic") return { synthetic: scenario.synthetic ?? {} };
  if (scenario.trace) return { trace: scenario.trace };
  return { preset: scenario.preset };
}

// --- playback -------------------------------------------------------------------------------

function lead() {
  return store.panes[0];
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

// Forward: the server advances (every engine to the time engine 0 reaches). Back: a seek to the
// record before the cursor, served from the nearest keyframe.
function stepBy(n) {
  pause();
  if (n > 0) return send({ type: "step", n });
  const p = lead();
  if (!p) return;
  const idx = historyIndexAt(p.history, p.run.cursor);
  send({ type: "seek", step: p.history.cols.step[Math.max(0, idx + n)] ?? 0 });
}

// Compare sessions seek every engine to the simulated time of the lead's step.
function seekIndex(index) {
  const p = lead();
  if (!p) return;
  const step = p.history.cols.step[Math.min(index, p.history.length - 1)] ?? index;
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

function updateUrl() {
  const url = formatScenario(scenario);
  if (url !== location.search) history.replaceState(null, "", location.pathname + url);
}

export const api = { play, pause, stepBy, seekIndex, setSpeed, send, store, scenario };

// --- views and input ------------------------------------------------------------------------

function setView(view, { reconfigure = true } = {}) {
  const old = scenario.view;
  scenario.view = view;
  doc.body.classList.toggle("projection", view === "projection");
  $("explore").hidden = view === "compare";
  $("compare").hidden = view !== "compare";
  $("keys").hidden = view !== "projection";
  for (const b of doc.querySelectorAll("[data-view]")) b.setAttribute("aria-pressed", String(b.dataset.view === view));
  explore?.setDark(view === "projection");
  updateUrl();
  if (reconfigure && (old === "compare") !== (view === "compare") && link) sendConfigure();
  markDirty(store, "all");
}

function onKey(ev) {
  if (ev.target.closest?.("input[type=text], select, textarea")) return;
  const a = actionForKey(ev);
  if (!a) return;
  ev.preventDefault();
  if (a.type === "toggle") (store.panes.some((p) => p.playing) ? pause : play)();
  else if (a.type === "step") stepBy(a.n);
  else if (a.type === "seek") seekIndex(0);
  else if (a.type === "seek_end") seekIndex((lead()?.history.length ?? 1) - 1);
  else if (a.type === "speed") setSpeed(nextSpeed(scenario.speed, a.dir));
  else if (a.type === "view") setView(a.toggle && scenario.view === a.view ? "explore" : a.view);
  else if (a.type === "lesson") applyConfig({ ...scenario.config, ...a.mode.config });
}

function applyConfig(config) {
  scenario.config = config;
  scenario.step = null;
  updateUrl();
  sendConfigure();
}

function bindControls() {
  $("btn-play").addEventListener("click", () => (store.panes.some((p) => p.playing) ? pause : play)());
  $("btn-fwd").addEventListener("click", () => stepBy(1));
  $("btn-back").addEventListener("click", () => stepBy(-1));
  $("speed").addEventListener("input", (ev) => setSpeed(sliderToSpeed(ev.target.value)));
  $("scrub").addEventListener("change", (ev) => seekIndex(Number(ev.target.value)));
  for (const b of doc.querySelectorAll("[data-view]")) b.addEventListener("click", () => setView(b.dataset.view));
  doc.addEventListener("keydown", onKey);
  window.addEventListener("resize", () => {
    forgetSizes();
    markDirty(store, "all");
  });
  bindPanels();
  bindTools(doc, { sessionId: () => store.sessionId ?? boot.session_id,
    charts: () => explore?.charts?.charts ?? [] });
}

function bindPanels() {
  buildForm($("config-form"), CONFIG_FIELDS, { ...(boot.config ?? {}), ...scenario.config });
  buildForm($("synthetic"), SYNTHETIC_FIELDS, boot.synthetic_defaults ?? {});
  fillPresets($("preset"), boot.presets ?? [], scenario.preset);
  $("preset").addEventListener("change", (ev) => {
    const p = (boot.presets ?? []).find((x) => x.name === ev.target.value);
    setText("preset-about", p?.description ?? "");
  });
  $("apply").addEventListener("click", (ev) => {
    ev.preventDefault();
    const { config, synthetic, errors } = collect($("config-form"), $("workload-form"));
    const messages = Object.values(errors);
    $("form-errors").hidden = messages.length === 0;
    $("form-errors").textContent = messages.join("\n");
    if (messages.length) return;
    scenario.preset = $("preset").value;
    scenario.synthetic = synthetic;
    applyConfig(config);
  });
  $("upload").addEventListener("change", (ev) => upload(ev.target.files[0]));
}

async function upload(file) {
  if (!file) return;
  setText("upload-status", `uploading ${file.name}…`);
  const body = new FormData();
  body.append("file", file);
  try {
    const res = await fetch(boot.upload_url ?? "/api/traces", { method: "POST", body });
    const data = await res.json().catch(() => ({}));
    if (!res.ok) throw new Error(data.detail?.message ?? data.detail ?? data.message ?? `HTTP ${res.status}`);
    setText("upload-status", `${file.name}: ${data.num_requests ?? "?"} requests`);
    scenario.trace = data.trace_id ?? data.id;
    applyConfig(scenario.config);
  } catch (err) {
    setText("upload-status", "");
    showError(`Upload failed: ${typeof err.message === "string" ? err.message : JSON.stringify(err.message)}`);
  }
}

// --- drawing --------------------------------------------------------------------------------

function drawControls() {
  const p = lead();
  const playing = store.panes.some((x) => x.playing);
  setText("btn-play", playing ? "\u275a\u275a Pause" : "\u25b6 Play");
  setText("speed-out", `${scenario.speed}x`);
  const slider = $("speed");
  if (doc.activeElement !== slider) slider.value = String(speedToSlider(scenario.speed));
  if (!p) return;
  const rec = p.run.record;
  const idx = historyIndexAt(p.history, p.run.cursor);
  const scrub = $("scrub");
  scrub.max = String(Math.max(0, p.history.length - 1, (p.init.num_records ?? 0) - 1));
  if (doc.activeElement !== scrub) scrub.value = String(Math.max(0, idx));
  setText("step-out", rec ? `${rec.step}` : "-");
  setText("clock", rec ? `t = ${(rec.time_s + rec.step_time_ms / 1000).toFixed(3)} s` : "t = 0.000 s");
  const source = p.run.source;
  setText("source-label", source);
  $("source-label").dataset.source = source;
  setText("scenario-name", `${scenario.preset}${p.status === "done" ? " · run complete" : ""}`);
  setText("caption", caption(p.run, rec));
}

function draw(dirty) {
  const now = performance.now();
  drawControls();
  let again = false;
  if (scenario.view === "compare") compare?.draw(dirty, store.panes, now);
  else if (lead()) again = explore.draw(dirty, lead(), now);
  if (again) markDirty(store, "anim");
}

function onSelect(sel) {
  if (sel.request !== undefined) explore.selected = sel.request;
  if (sel.fromBlock !== undefined && lead()) {
    const owner = lead().run.owner[sel.fromBlock];
    explore.selected = owner >= 0 ? lead().run.ids[owner] : null;
  }
  markDirty(store, sel.block !== undefined ? "hover" : "select");
}

async function start() {
  try {
    uPlot = (await import("uplot")).default;
  } catch (err) {
    showError(`Charts unavailable: ${err.message}`);
  }
  explore = new ExploreView(doc, uPlot, onSelect);
  compare = new CompareView($("compare"), uPlot);
  onFrame(store, draw);
  bindControls();
  setView(scenario.view);
  connect();
  window.__servescope = { store, api, explore: () => explore, compare: () => compare };
}

start();
