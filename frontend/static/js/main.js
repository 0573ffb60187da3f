// Entry module: reads the boot data, joins the page's session, and wires transport, state,
// rendering and input together. Everything else is a module that does one of those.

import { openLink } from "./transport/index.js";
import { fetchFormats, uploadTrace } from "./transport/upload.js";
import { fetchCatalog } from "./transport/catalog.js";
import { ExploreView } from "./ui/explore.js";
import { CompareView } from "./ui/compare.js";
import { changesEngines, configureMessage, joinPlan, paneLabels } from "./ui/compare_mode.js";
import { bindPlayback, drawControls, drivesSession, lockControls } from "./ui/controls.js";
import { bindTools } from "./ui/diagnosis.js";
import { bindOverview } from "./ui/overview.js";
import { actionForKey, sliderToSpeed } from "./ui/keys.js";
import { bindPanels, showWorkload, UPLOADED } from "./ui/panels.js";
import { fillCatalog, showEngineConfig, showServerError } from "./ui/config_form.js";
import { drawProvenance } from "./ui/provenance.js";
import { bindUploadOptions, readUploadOptions, showUploadError } from "./ui/upload_form.js";
import { forgetSizes } from "./render/size.js";
import { caption } from "./state/caption.js";
import { uploadStatus } from "./state/provenance.js";
import { applyKeyframe } from "./state/keyframe.js";
import { historyIndexAt } from "./state/select.js";
import { applyProgress, scrubMax } from "./state/progress.js";
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
let overview = null; // the whole-run strip and its percentile panel (ui/overview.js)

function setText(id, text) {
  const el = $(id);
  if (el && el.textContent !== text) el.textContent = text;
}

function showError(message) {
  const el = $("error");
  el.hidden = !message;
  el.textContent = message ?? "";
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
  else if (msg.type === "progress") {
    applyProgress(store.panes, msg);
    markDirty(store, "controls");
  }
  else if (msg.type === "done") {
    const pane = store.panes[i];
    if (pane) Object.assign(pane, { status: "done", summary: msg.summary ?? null });
    if (pane && msg.num_records != null) pane.init = { ...pane.init, num_records: msg.num_records };
    markDirty(store, "controls");
  } else if (msg.type === "error") {
    store.panes.forEach((p) => { p.error = msg.message; });
    showError(showServerError(doc, msg));
  }
}

function onInit(msg) {
  const engines = msg.engines?.length ? msg.engines : [msg];
  const labels = paneLabels(scenario, engines);
  store.panes.length = engines.length;
  engines.forEach((e, i) => {
    const pane = resetPane(store, i, { ...msg, ...e, engines: undefined });
    pane.label = labels[i];
    pane.playing = !!msg.playing;
  });
  store.role = msg.role ?? "driver";
  lockControls(doc, store.role === "follower");
  if (msg.session_id) store.sessionId = msg.session_id;
  overview?.refresh();
  if (msg.speed) scenario.speed = clampSpeed(msg.speed);
  showError(null);
  store.formReadOnly = showWorkload(doc, msg, { presets: boot.presets ?? [], preset: scenario.preset,
    pageConfig: { ...(boot.config ?? {}), ...scenario.config }, readOnly: store.formReadOnly });
  showEngineConfig(doc, msg);
  const plan = joinPlan(msg, scenario, { first: !configured, bootPreset: boot.preset });
  if (plan.view) setView(plan.view, { reconfigure: false });
  const first = !configured;
  configured = true;
  if (first && plan.configure) return sendConfigure();
  if (Number.isInteger(scenario.step) && scenario.step > 0 && !store.seeked) {
    store.seeked = true;
    send({ type: "seek", step: scenario.step });
  }
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
  // the end of a run is no echo: a short run ends within ECHO_MS of its play
  if (!msg.done && performance.now() - (store.sentAt ?? -Infinity) < ECHO_MS) return;
  store.panes.forEach((p) => { p.playing = !!msg.playing; });
  if (msg.speed) scenario.speed = clampSpeed(msg.speed);
  markDirty(store, "controls");
}

function send(msg) {
  if (msg.type === "play" || msg.type === "pause" || msg.type === "step") store.sentAt = performance.now();
  link?.send(msg);
}

function sendConfigure() {
  send(configureMessage(scenario, workloadSpec()));
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
  if (index >= p.history.length) return send({ type: "seek", iter: index }); // simulated, not yet seen
  const step = p.history.cols.step[index] ?? index;
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
  if (reconfigure && changesEngines(old, view) && link && store.role !== "follower") sendConfigure();
  markDirty(store, "all");
}

function onKey(ev) {
  if (ev.target.closest?.("input[type=text], select, textarea")) return;
  const a = actionForKey(ev);
  if (!a || (store.role === "follower" && drivesSession(a))) return;
  ev.preventDefault();
  if (a.type === "toggle") (store.panes.some((p) => p.playing) ? pause : play)();
  else if (a.type === "step") stepBy(a.n);
  else if (a.type === "seek") seekIndex(0);
  else if (a.type === "seek_end") seekIndex(lead() ? scrubMax(lead()) : 0);
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
  bindPlayback(doc, { toggle: () => (store.panes.some((p) => p.playing) ? pause : play)(),
    stepBy, seekIndex, setView, onKey, setSpeed: (v) => setSpeed(sliderToSpeed(v)) });
  window.addEventListener("resize", () => {
    forgetSizes();
    markDirty(store, "all");
  });
  bindPanels(doc, { ...boot, config: { ...(boot.config ?? {}), ...scenario.config } }, scenario.preset,
    { onApply, onUpload: upload });
  bindUploadOptions(doc, upload, fetchFormats(`${boot.upload_url ?? "/api/traces"}/formats`));
  overview = bindOverview(doc, { sessionId: () => store.sessionId ?? boot.session_id, send,
    cursorS: () => lead()?.run.record?.time_s ?? null });
  bindTools(doc, { sessionId: () => store.sessionId ?? boot.session_id,
    charts: () => explore?.charts?.charts ?? [] });
  fetchCatalog().then((c) => fillCatalog(doc, c), (err) => showError(`No model and GPU lists: ${err.message}`));
}

// Apply: the chosen workload (a preset, synthetic, or the uploaded trace) with the form's config.
// The form shows a replay's recorded config: leaving the replay keeps the page's own.
function onApply({ config, synthetic, choice }) {
  if (choice === UPLOADED && store.formReadOnly) return applyConfig({}); // a replay runs as recorded
  if (choice !== UPLOADED) Object.assign(scenario, { trace: null, preset: choice });
  scenario.synthetic = synthetic;
  applyConfig(store.formReadOnly ? scenario.config : config);
}

async function upload(file) {
  if (!file) return;
  showUploadError(doc, null);
  setText("upload-status", `uploading ${file.name}…`);
  try {
    const data = await uploadTrace(boot.upload_url ?? "/api/traces", file, readUploadOptions(doc));
    setText("upload-status", uploadStatus(file.name, data));
    scenario.trace = data.trace_id;
    applyConfig(data.report?.kind === "steps" ? {} : scenario.config); // a replay runs as recorded
  } catch (err) {
    setText("upload-status", "");
    showUploadError(doc, err);
  }
}

// --- drawing --------------------------------------------------------------------------------

function draw(dirty) {
  const now = performance.now();
  const p = lead();
  drawControls(doc, p, { playing: store.panes.some((x) => x.playing), speed: scenario.speed });
  if (p) {
    drawProvenance(doc, p, scenario.preset);
    setText("caption", caption(p.run, p.run.record));
  }
  let again = false;
  if (scenario.view === "compare") compare?.draw(dirty, store.panes, now);
  else if (lead()) again = explore.draw(dirty, lead(), now);
  if (again) markDirty(store, "anim");
  if (dirty.has("step") || dirty.has("all")) overview?.draw();
}

function onSelect(sel) {
  if (sel.request !== undefined) explore.selected = sel.request;
  if (sel.fromBlock !== undefined && lead()) {
    const owner = lead().run.owner[sel.fromBlock];
    explore.selected = owner >= 0 && !lead().run.reqs[owner].placeholder ? lead().run.ids[owner] : null;
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
