// Entry module: reads the boot data, joins the page's session, and wires transport, state,
// rendering and input together. Everything else is a module that does one of those.

import { openLink } from "./transport/index.js";
import { fetchFormats } from "./transport/upload.js";
import { fetchCatalog } from "./transport/catalog.js";
import { ExploreView } from "./ui/explore.js";
import { CompareView } from "./ui/compare.js";
import { changesEngines, configureMessage, joinPlan, paneLabels } from "./ui/compare_mode.js";
import { pickerEntries } from "./ui/compare_picker.js";
import { showJoined } from "./ui/joined.js";
import { bindPlayback, drawControls, drivesSession } from "./ui/controls.js";
import { bindTools } from "./ui/diagnosis.js";
import { bindOverview } from "./ui/overview.js";
import { actionForKey, sliderToSpeed } from "./ui/keys.js";
import { bindPanels } from "./ui/panels.js";
import { bindApply } from "./ui/apply.js";
import { fillCatalog } from "./ui/config_form.js";
import { createMessageHandler } from "./ui/messages.js";
import { createPlayback } from "./ui/playback.js";
import { drawProvenance } from "./ui/provenance.js";
import { bindShare } from "./ui/share.js";
import { ConnectionLine } from "./ui/connection.js";
import { applyProjection, drawModeLabel } from "./ui/projection.js";
import { Lesson } from "./ui/lesson.js";
import { bindLessonBar, drawLessonBar, drawTimelineMarks, eventMarksPlugin } from "./ui/lesson_bar.js";
import { drivePath } from "./state/share.js";
import { bindUploadOptions } from "./ui/upload_form.js";
import { forgetSizes } from "./render/size.js";
import { caption } from "./state/caption.js";
import { scrubMax } from "./state/progress.js";
import { createPane, createStore, markDirty, onFrame, resetPane } from "./state/store.js";
import { clampSpeed, nextSpeed, parseScenario } from "./state/url.js";

const doc = document;
const $ = (id) => doc.getElementById(id);
const boot = JSON.parse($("boot").textContent);
const scenario = parseScenario(location.search);
// A drive link to a session (`?session&token`) without a preset shows the session's own
// workload; the page's default preset is for a new session.
const presetAsked = Boolean(scenario.preset);
if (!scenario.preset) scenario.preset = boot.preset ?? boot.presets?.[0]?.name ?? "demo";
const store = createStore((cb) => requestAnimationFrame(cb));
let link = null;
let configured = false; // whether this page has sent its scenario's configure yet
let uPlot = null;
let explore = null;
let compare = null;
const lesson = new Lesson({ send: (m) => send(m), lead: () => store.panes[0],
  changed: () => markDirty(store, "controls"), ...(scenario.pace ? { stepMs: 1000 / scenario.pace } : {}) });
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

function onInit(msg) {
  lesson.reset();
  const engines = msg.engines?.length ? msg.engines : [msg];
  const choices = pickerEntries(boot.presets ?? [], scenario.preset);
  const labels = paneLabels(scenario, engines, choices);
  store.panes.length = engines.length;
  engines.forEach((e, i) => {
    const pane = resetPane(store, i, { ...msg, ...e, engines: undefined });
    pane.label = labels[i];
    pane.playing = !!msg.playing;
  });
  store.role = msg.role ?? "driver";
  if (msg.session_id) store.sessionId = msg.session_id;
  if (msg.token) boot.ws_path = drivePath(msg.session_id, msg.token); // a reconnect rejoins it
  overview?.refresh();
  explore?.timelineView.reset();
  if (msg.speed) scenario.speed = clampSpeed(msg.speed);
  showError(null);
  showJoined(doc, msg, { boot, scenario, store, choices, onCompare: (configs) => {
    Object.assign(scenario, { compare: configs, step: null });
    updateUrl();
    sendConfigure();
  } });
  const plan = joinPlan(msg, scenario, { first: !configured, bootPreset: boot.preset, presetAsked });
  if (!configured && !presetAsked && scenario.session && msg.preset) scenario.preset = msg.preset;
  if (plan.view) setView(plan.view, { reconfigure: false });
  const first = !configured;
  configured = true;
  if (first && plan.configure) return sendConfigure();
  if (Number.isInteger(scenario.step) && scenario.step > 0 && !store.seeked) {
    store.seeked = true;
    send({ type: "seek", step: scenario.step });
  }
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
  const line = new ConnectionLine(doc, { origin: location.origin, follow: boot.follow });
  link = openLink(boot, {
    onOpen: () => {
      line.opened();
      // a page of its own: the session is created on connect and runs what the page asks for
      // (again on a reconnect before its init came: that connection made another session)
      if (boot.ws_path === "/ws/sessions/new") {
        configured = true;
        sendConfigure();
      }
    },
    onMessage: handle,
    onClose: () => line.closed(),
  });
}

function workloadSpec() {
  if (scenario.preset === "synthetic") return { synthetic: scenario.synthetic ?? {} };
  if (scenario.trace) return { trace: scenario.trace };
  return { preset: scenario.preset };
}

// --- playback -------------------------------------------------------------------------------

const lead = () => store.panes[0];
const { play, pause, toggle, stepBy, seekIndex, setSpeed, updateUrl } = createPlayback({ store, scenario, send });
const handle = createMessageHandler({ doc, store, scenario, lesson, onInit, showError });

export const api = { play, pause, stepBy, seekIndex, setSpeed, send, store, scenario };

// --- views and input ------------------------------------------------------------------------

// Projection is a flag over the view (explore or compare): compare stays projected.
function setProjection(on) {
  scenario.projection = on;
  applyProjection(doc, on);
  forgetSizes();
  explore?.setDark(on);
  compare?.setDark(on);
  updateUrl();
  markDirty(store, "all");
}

function setView(view, { reconfigure = true } = {}) {
  if (view === "projection") return setProjection(!scenario.projection);
  const old = scenario.view;
  scenario.view = view;
  $("explore").hidden = view === "compare";
  $("compare").hidden = view !== "compare";
  for (const b of doc.querySelectorAll("[data-view]:not([data-view=projection])")) b.setAttribute("aria-pressed", String(b.dataset.view === view));
  forgetSizes();
  updateUrl();
  if (reconfigure && changesEngines(old, view) && link && store.role !== "follower") sendConfigure();
  markDirty(store, "all");
}

function onKey(ev) {
  if (ev.target.closest?.("input[type=text], select, textarea")) return;
  const a = actionForKey(ev);
  if (!a || (store.role === "follower" && drivesSession(a))) return;
  ev.preventDefault();
  if (a.type === "toggle" && (lesson.on || lesson.tour)) lesson.toggle(); // Space pauses or goes on
  else if (a.type === "toggle") toggle();
  else if (a.type === "pacing") lesson.toggle();
  else if (a.type === "tour") lesson.startTour();
  else if (a.type === "next_event") lesson.next(a.kind);
  else if (a.type === "step") stepBy(a.n);
  else if (a.type === "seek") seekIndex(0);
  else if (a.type === "seek_end") seekIndex(lead() ? scrubMax(lead()) : 0);
  else if (a.type === "speed") setSpeed(nextSpeed(scenario.speed, a.dir));
  else if (a.type === "projection") setProjection(!scenario.projection);
  else if (a.type === "view") {
    if (a.view === "explore" && !a.toggle) setProjection(false); // E / Esc: back to the plain explorer
    setView(a.toggle && scenario.view === a.view ? "explore" : a.view);
  }
  else if (a.type === "lesson") applyConfig({ ...scenario.config, ...a.mode.config });
}

function applyConfig(config) {
  Object.assign(scenario, { config, step: null });
  updateUrl();
  sendConfigure();
}

function bindControls() {
  bindPlayback(doc, { toggle, stepBy, seekIndex, setView, onKey, setSpeed: (v) => setSpeed(sliderToSpeed(v)) });
  window.addEventListener("resize", () => {
    forgetSizes();
    if (scenario.projection) setProjection(true); // projected charts are sized to the window
    markDirty(store, "all");
  });
  const { onApply, upload } = bindApply({ doc, boot, scenario, store, applyConfig });
  bindPanels(doc, { ...boot, config: { ...(boot.config ?? {}), ...scenario.config } }, scenario.preset,
    { onApply, onUpload: upload });
  bindShare(doc);
  bindUploadOptions(doc, upload, fetchFormats(`${boot.upload_url ?? "/api/traces"}/formats`));
  overview = bindOverview(doc, { sessionId: () => store.sessionId ?? boot.session_id, send,
    cursorS: () => lead()?.run.record?.time_s ?? null,
    onWindow: (w) => explore?.timelineView.setWindow(w) });
  bindTools(doc, { sessionId: () => store.sessionId ?? boot.session_id,
    charts: () => explore?.charts?.charts ?? [] });
  fetchCatalog().then((c) => fillCatalog(doc, c), (err) => showError(`No model and GPU lists: ${err.message}`));
}

// --- drawing --------------------------------------------------------------------------------

function draw(dirty) {
  const now = performance.now();
  const p = lead();
  drawControls(doc, p, { playing: store.panes.some((x) => x.playing), speed: scenario.speed });
  drawLessonBar(doc, lesson, p);
  if (p) {
    drawProvenance(doc, p, scenario.preset);
    drawModeLabel(doc, store.panes);
    setText("caption", lesson.caption(caption(p.run, p.run.record), now));
  }
  let again = false;
  if (scenario.view === "compare") compare?.draw(dirty, store.panes, now);
  else if (lead()) {
    again = explore.draw(dirty, lead(), now);
    drawTimelineMarks(doc, lesson.events, explore.timelineLayout?.xOf);
  }
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
  explore = new ExploreView(doc, uPlot, onSelect, [eventMarksPlugin(() => lesson.events)],
    () => store.sessionId ?? boot.session_id);
  bindLessonBar(doc, lesson, (act) => store.role !== "follower" && act());
  compare = new CompareView($("compare"), uPlot);
  onFrame(store, draw);
  bindControls();
  setView(scenario.view);
  setProjection(!!scenario.projection);
  connect();
  window.__servescope = { store, api, explore: () => explore, compare: () => compare };
}

start();
