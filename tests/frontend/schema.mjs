// The field schema the server serves (GET /api/config/fields), asked of the Python package, so
// the page's validation is tested against the rules EngineConfig really has.
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { dirname, join } from "node:path";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const PYTHON = process.env.SERVESCOPE_PYTHON ?? join(ROOT, ".venv", "bin", "python");
const CODE = "import json; from servescope.api.routes.pages import config_fields; " +
  "print(json.dumps(config_fields()))";

export function serverSchema() {
  return JSON.parse(execFileSync(PYTHON, ["-c", CODE], { encoding: "utf8" }));
}
