"""One source for the config form: GET /api/config/fields serves EngineConfig's own field
metadata and the synthetic-workload fields, and the page's validation (state/fields.js, run in
node) follows a bound changed in EngineConfig, with the server's own words."""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
import types
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from servescope.api.routes.pages import config_fields
from servescope.core.config import ConfigError, EngineConfig
from servescope.scenarios.workloads import WorkloadError, synthetic_workload

FIELDS_JS = Path(__file__).resolve().parents[3] / "frontend/static/js/state/fields.js"
NODE = shutil.which("node")
SCRIPT = """
import { parseField, setFieldSchema, CONFIG_FIELDS } from "FIELDS_JS";
const { schema, values } = JSON.parse(await new Promise((ok) => {
  let text = "";
  process.stdin.on("data", (d) => (text += d));
  process.stdin.on("end", () => ok(text));
}));
setFieldSchema(schema);
const out = values.map(([name, raw]) => {
  try { return [name, "ok", parseField(CONFIG_FIELDS.find((f) => f.name === name), raw)]; }
  catch (err) { return [name, "error", `${name}: ${err.message}`]; }
});
console.log(JSON.stringify(out));
""".replace("FIELDS_JS", FIELDS_JS.as_uri())


def page_validates(schema: dict, values: list[tuple[str, str]]) -> list[list]:
    done = subprocess.run([NODE, "--input-type=module", "-e", SCRIPT],  # type: ignore[list-item]
                          input=json.dumps({"schema": schema, "values": values}),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def server_says(name: str, value: object) -> str:
    try:
        EngineConfig.from_dict({name: value})
    except ConfigError as err:
        return str(err)
    return "ok"


def test_the_route_serves_every_engine_config_field(client: TestClient) -> None:
    served = client.get("/api/config/fields").json()
    names = [f["name"] for f in served["config"]]
    # every field but those set from files and the cost model (hidden from the form)
    assert names == [f.name for f in dataclasses.fields(EngineConfig)
                     if not f.metadata.get("hidden")]
    assert "model_config" not in names and "frontend_overhead_ms" in names
    defaults = EngineConfig().to_dict()
    assert all(f["default"] == defaults[f["name"]] for f in served["config"])
    assert {f["name"] for f in served["synthetic"]} >= {"num_requests", "request_rate", "seed"}


@pytest.mark.skipif(NODE is None, reason="node not installed")
@pytest.mark.parametrize(("name", "raw"), [("max_num_seqs", "0"), ("block_size", "24"),
                                           ("gpu_memory_utilization", "1.5"),
                                           ("watermark", "1"), ("num_gpu_blocks", "1")])
def test_the_page_refuses_what_the_server_refuses_in_its_words(name: str, raw: str) -> None:
    [(_, verdict, message)] = page_validates(config_fields(), [(name, raw)])
    assert verdict == "error"
    assert message == server_says(name, json.loads(raw))


@pytest.mark.skipif(NODE is None, reason="node not installed")
def test_a_bound_changed_in_engine_config_moves_the_page(monkeypatch: pytest.MonkeyPatch) -> None:
    field = EngineConfig.__dataclass_fields__["max_num_seqs"]
    assert page_validates(config_fields(), [("max_num_seqs", "3")])[0][1] == "ok"
    monkeypatch.setattr(field, "metadata", types.MappingProxyType({**field.metadata, "min": 4}))
    [(_, verdict, message)] = page_validates(config_fields(), [("max_num_seqs", "3")])
    assert verdict == "error" and message == server_says("max_num_seqs", 3)
    assert message == "max_num_seqs: must be at least 4, got 3"


def test_synthetic_defaults_and_bounds_come_from_one_list() -> None:
    specs = synthetic_workload({}).specs
    defaults = {f["name"]: f["default"] for f in config_fields()["synthetic"]}
    assert len(specs) == defaults["num_requests"]
    assert all(defaults["prompt_len_min"] <= s.prompt_len <= defaults["prompt_len_max"]
               for s in specs)
    for bad, field in (({"request_rate": float("nan")}, "request_rate"),
                       ({"num_requests": 0}, "num_requests"),
                       ({"prompt_len_min": 50, "prompt_len_max": 40}, "prompt_len_max"),
                       ({"nope": 1}, "nope")):
        with pytest.raises(WorkloadError) as err:
            synthetic_workload(bad)
        assert err.value.field == field
