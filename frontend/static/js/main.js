// Entry module: reads the boot data and the URL's scenario, and wires transport, state,
// rendering and input together: the session (ui/session.js), playback, views, keys
// (ui/keys.js), the panels and the frame (ui/page.js). Everything else is a module that does
// one of those.

import { openLink } from "./transport/index.js";
import { fetchFormats, uploadToken, uploadTrace } from "./transport/upload.js";
import { fetchCatalog } from "./transport/catalog.js";
import { getJson } from "./transport/reports.js";
import { createStore, markDirty, onFrame } from "./state/store.js";
import { paceStepMs, parseScenario } from "./state/url.js";
import { ExploreView } from "./ui/explore.js";
import { CompareView } from "./ui/compare.js";
import { FleetView } from "./ui/fleet_view.js";
import { bindPlayback } from "./ui/controls.js";
import { bindTools } from "./ui/diagnosis.js";
import { bindOverview } from "./ui/overview.js";
import { keyHandler, sliderToSpeed } from "./ui/keys.js";
import { bindPanels } from "./ui/panels.js";
import { bindApply } from "./ui/apply.js";
import { fillCatalog } from "./ui/config_form.js";
import { createMessageHandler } from "./ui/messages.js";
import { createPage, setText, showError } from "./ui/page.js";
import { createPlayback } from "./ui/playback.js";
import { createSession } from "./ui/session.js";
import { bindShare } from "./ui/share.js";
import { ConnectionLine } from "./ui/connection.js";
import { checkOrigin } from "./transport/origin.js";
import { Lesson } from "./ui/lesson.js";
import { bindLessonBar, eventMarksPlugin } from "./ui/lesson_bar.js";
import { createLessonRelay } from "./ui/lesson_relay.js";
import { bindUploadOptions } from "./ui/upload_form.js";
import { createViews } from "./ui/views.js";

const doc = document;
const boot = JSON.parse(doc.getElementById("boot").textContent);
const scenario = parseScenario(location.search);
scenario.upload_token ??= uploadToken(); // a link's token, else this browser's own
// A drive link to a session (`?session&token`) without a preset shows the session's own
// workload; the page's default preset is for a new session.
const presetAsked = Boolean(scenario.preset);
if (!scenario.preset) scenario.preset = boot.preset ?? boot.presets?.[0]?.name ?? "demo";
const store = createStore((cb) => requestAnimationFrame(cb));
const built = { explore: null, compare: null, overview: null, fleet: null }; // the views, once built
const views = () => built;
const sessionId = () => store.sessionId ?? boot.session_id;
const error = (message) => showError(doc, message);

const relayLesson = createLessonRelay((m) => session.send(m), () => store.role === "driver");
const lesson = new Lesson({ send: (m) => session.send(m), lead: () => store.panes[0],
  changed: () => { markDirty(store, "controls"); relayLesson(lesson); },
  ...(scenario.pace ? { stepMs: paceStepMs(scenario.pace) } : {}) });
const { play, pause, toggle, stepBy, seekIndex, setSpeed, updateUrl } =
  createPlayback({ store, scenario, send: (m) => session.send(m) });
const { setView, setProjection, onResize } = createViews({ doc, scenario, store, views, updateUrl,
  onEngines: () => session.configureAgain() });
const connection = new ConnectionLine(doc, { origin: location.origin, follow: boot.follow, check: checkOrigin });
const session = createSession({ doc, boot, scenario, store, lesson, presetAsked, connection, page: {
  setText: (id, text) => setText(doc, id, text), showError: error, setView, updateUrl,
  onJoined: () => {
    built.overview?.refresh();
    built.explore?.timelineView.reset();
  } } });
const applyConfig = (config) => session.reconfigure({ config });
const handle = createMessageHandler({ doc, store, scenario, lesson, onInit: session.onInit, showError: error });
const page = createPage({ doc, store, scenario, lesson, views });
const onKey = keyHandler({ store, scenario, lesson, playback: { toggle, stepBy, seekIndex, setSpeed },
  views: { setView, setProjection }, applyConfig });

export const api = { play, pause, stepBy, seekIndex, setSpeed, send: session.send, store, scenario };

function bindControls() {
  bindPlayback(doc, { toggle, stepBy, seekIndex, setView, onKey, setSpeed: (v) => setSpeed(sliderToSpeed(v)) });
  window.addEventListener("resize", onResize);
  const { onApply, upload } = bindApply({ doc, boot, scenario, store, applyConfig, uploadTrace });
  bindPanels(doc, { ...boot, config: { ...(boot.config ?? {}), ...scenario.config } }, scenario.preset,
    { onApply, onUpload: upload });
  bindShare(doc);
  bindUploadOptions(doc, upload, fetchFormats(`${boot.upload_url ?? "/api/traces"}/formats`));
  built.overview = bindOverview(doc, { sessionId, send: session.send, getJson,
    cursorS: () => store.panes[0]?.run.record?.time_s ?? null,
    onWindow: (w) => built.explore?.timelineView.setWindow(w) });
  bindTools(doc, { sessionId, getJson, charts: () => built.explore?.charts?.charts ?? [] });
  fetchCatalog().then((c) => fillCatalog(doc, c), (err) => error(`No model and GPU lists: ${err.message}`));
}

async function start() {
  let uPlot = null;
  try {
    uPlot = (await import("uplot")).default;
  } catch (err) {
    error(`Charts unavailable: ${err.message}`);
  }
  built.explore = new ExploreView(doc, uPlot, page.onSelect,
    { plugins: [eventMarksPlugin(() => lesson.events)], sessionId, getJson });
  bindLessonBar(doc, lesson, (act) => store.role !== "follower" && act());
  built.compare = new CompareView(doc.getElementById("compare"), uPlot);
  built.fleet = new FleetView(doc, { send: session.send, changed: () => markDirty(store, "fleet") });
  onFrame(store, page.draw);
  bindControls();
  setView(scenario.view);
  setProjection(!!scenario.projection);
  session.connect((handlers) => openLink(boot, handlers), handle);
  window.__servescope = { store, api, explore: () => built.explore, compare: () => built.compare,
    fleet: () => built.fleet };
}

start();
