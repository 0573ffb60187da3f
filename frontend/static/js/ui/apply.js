// Applying the forms and uploads: the chosen workload (a preset, synthetic, or an uploaded trace)
// with the form's config as overrides over that workload's own (state/config_state.js).

import { baseConfig, configOverrides } from "../state/config_state.js";
import { uploadStatus } from "../state/provenance.js";
import { formConfig, UPLOADED } from "./panels.js";
import { readUploadOptions, showUploadError } from "./upload_form.js";

/** {onApply, upload} for the panels; `applyConfig(config)` configures the session with it;
 * `uploadTrace(url, file, options)` sends a trace (transport/upload.js). */
export function bindApply({ doc, boot, scenario, store, applyConfig, uploadTrace }) {
  const setText = (id, text) => { doc.getElementById(id).textContent = text; };

  // Apply: the chosen workload (a preset, synthetic, or the uploaded trace) with the form's config.
  // The form shows a replay's recorded config: leaving the replay keeps the page's own.
  function onApply({ config, synthetic, choice, blocksTyped, typed }) {
    if (choice === UPLOADED && store.formReadOnly) return applyConfig({}); // a replay runs as recorded
    if (choice !== UPLOADED) Object.assign(scenario, { trace: null, preset: choice });
    scenario.synthetic = synthetic;
    applyConfig(store.formReadOnly ? scenario.config
      : configOverrides(baseConfig(boot.presets ?? [], choice), config, { blocksTyped, typed }));
  }

  // An uploaded request trace runs on the form's config (model and GPU included), what the
  // user did not set resolved by the server as vLLM would (nothing of the demo's).
  function uploadConfig() {
    const { config, blocksTyped, typed, errors } = formConfig(doc);
    if (store.formReadOnly || Object.keys(errors).length) return scenario.config;
    return configOverrides(baseConfig(boot.presets ?? [], UPLOADED), config, { blocksTyped, typed });
  }

  async function upload(file) {
    if (!file) return;
    showUploadError(doc, null);
    const config = uploadConfig(); // read before the upload: the form is what the user sees now
    setText("upload-status", `uploading ${file.name}…`);
    try {
      const data = await uploadTrace(boot.upload_url ?? "/api/traces", file, readUploadOptions(doc));
      setText("upload-status", uploadStatus(file.name, data));
      scenario.trace = data.trace_id;
      scenario.upload_token = data.upload_token;
      applyConfig(data.report?.kind === "steps" ? {} : config); // a replay runs as recorded
    } catch (err) {
      setText("upload-status", "");
      showUploadError(doc, err);
    }
  }

  return { onApply, upload };
}
