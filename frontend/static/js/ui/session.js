// The page's session: one WebSocket session (in compare mode 2-4 engines in lockstep, every
// message about one carrying its number, `engine`, which is also its pane's index). Joining it
// (each init resets the panes and says what the page shows and whether to send the page's own
// scenario), the control messages the page sends, and configuring it again.

import { drivePath } from "../state/share.js";
import { createPane, resetPane } from "../state/store.js";
import { sessionSpeed } from "../state/url.js";
import { configureMessage, joinPlan, paneLabels } from "./compare_mode.js";
import { pickerEntries } from "./compare_picker.js";
import { showJoined } from "./joined.js";

function workloadSpec(scenario) {
  if (scenario.preset === "synthetic") return { synthetic: scenario.synthetic ?? {} };
  if (scenario.trace) return { trace: scenario.trace, ...(scenario.upload_token ? { upload_token: scenario.upload_token } : {}) };
  return { preset: scenario.preset };
}

/** `presetAsked`: the URL named a preset; `connection`: ui/connection.js's ConnectionLine; `page`: {setText, showError, setView, updateUrl,
 * onJoined()} (the views' part of an init: forget the old run's overview and timeline). */
export function createSession({ doc, boot, scenario, store, lesson, presetAsked, connection, page }) {
  let link = null;
  let configured = false; // whether this page has sent its scenario's configure yet

  function send(msg) {
    if (msg.type === "play" || msg.type === "pause" || msg.type === "step") store.sentAt = performance.now();
    link?.send(msg);
  }

  const sendConfigure = () => send(configureMessage(scenario, workloadSpec(scenario),
    pickerEntries(boot.presets ?? [], scenario.preset)));

  /** The scenario with `changes` (a config, compare configs), from its first step, sent. */
  function reconfigure(changes) {
    Object.assign(scenario, { ...changes, step: null });
    page.updateUrl();
    sendConfigure();
  }

  /** A view with another number of engines: a driver that is connected asks for it. */
  function configureAgain() {
    if (link && store.role !== "follower") sendConfigure();
  }

  function resetPanes(msg, choices) {
    const engines = msg.engines?.length ? msg.engines : [msg];
    const labels = paneLabels(scenario, engines, choices, msg.role);
    store.panes.length = engines.length;
    engines.forEach((e, i) => {
      const pane = resetPane(store, i, { ...msg, ...e, engines: undefined });
      pane.label = labels[i];
      pane.playing = !!msg.playing;
    });
    store.role = msg.role ?? "driver";
    if (msg.session_id) store.sessionId = msg.session_id;
    if (msg.token) boot.ws_path = drivePath(msg.session_id, msg.token); // a reconnect rejoins it
  }

  function onInit(msg) {
    lesson.reset();
    const choices = pickerEntries(boot.presets ?? [], scenario.preset);
    resetPanes(msg, choices);
    page.onJoined();
    scenario.speed = sessionSpeed(scenario, store.role, msg.speed);
    page.showError(null);
    showJoined(doc, msg, { boot, scenario, store, choices, onCompare: (configs) => reconfigure({ compare: configs }) });
    const plan = joinPlan(msg, scenario, { first: !configured, bootPreset: boot.preset, presetAsked });
    if (!configured && !presetAsked && scenario.session && msg.preset) scenario.preset = msg.preset;
    if (plan.view) page.setView(plan.view, { reconfigure: false });
    const first = !configured;
    configured = true;
    if (first && plan.configure) return sendConfigure();
    if (Number.isInteger(scenario.step) && scenario.step > 0 && !store.seeked) {
      store.seeked = true;
      send({ type: "seek", step: scenario.step });
    }
  }

  function onOpen() {
    connection.opened();
    // a page of its own: the session is created on connect and runs what the page asks for
    // (again on a reconnect before its init came: that connection made another session)
    if (boot.ws_path === "/ws/sessions/new") {
      configured = true;
      sendConfigure();
    }
  }

  /** Connect: `open(handlers)` opens the link (transport/index.js's openLink); `onMessage`
   * takes every decoded message (ui/messages.js), inits included. */
  function connect(open, onMessage) {
    store.panes = [createPane({ num_gpu_blocks: 1, block_size: 16, requests: [] })];
    link = open({ onOpen, onMessage, onClose: (event) => connection.closed(event) });
  }

  return { send, sendConfigure, reconfigure, configureAgain, onInit, connect };
}
