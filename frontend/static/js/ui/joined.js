// What a session's init shows outside the views: the controls a follower may not use, the
// share dialog, the workload and config forms (the config that runs), the KV sizing and the
// compare picker.

import { compareList } from "./compare_mode.js";
import { showPicker } from "./compare_picker.js";
import { showEngineConfig } from "./config_form.js";
import { lockControls } from "./controls.js";
import { showRunningConfig, showWorkload } from "./panels.js";
import { showShare } from "./share.js";

/** `choices`: the compare picker's entries; `onCompare(configs)` when a driver picks 2-4. */
export function showJoined(doc, msg, { boot, scenario, store, choices, onCompare }) {
  const follower = store.role === "follower";
  showShare(doc, { origin: doc.defaultView.location.origin, publicUrl: boot.public_url,
    sessionId: store.sessionId, token: msg.token });
  store.formReadOnly = showWorkload(doc, msg, { presets: boot.presets ?? [], preset: scenario.preset,
    pageConfig: { ...(boot.config ?? {}), ...scenario.config }, readOnly: store.formReadOnly });
  showEngineConfig(doc, msg);
  const engines = msg.engines?.length ?? 1;
  showPicker(doc, choices, engines > 1 ? compareList(scenario) : [], (configs) => !follower && onCompare(configs));
  showRunningConfig(doc, msg, { typedBlocks: Number.isInteger(scenario.config.num_gpu_blocks) });
  lockControls(doc, follower); // after the picker is built: its boxes too
  const conn = doc.getElementById("conn");
  if (conn) conn.textContent = follower ? "following (read-only): the driver controls this run" : "connected";
}
