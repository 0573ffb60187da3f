"""Issue 14's truthful state in a real Chromium: every preset picked in the page runs its own
config (checked against its file) and the form shows it; model and GPU size the pool unless
blocks are typed, and the page says which."""

from __future__ import annotations

import json

import pytest
from pagestate import wait_ready, wait_requests

from servescope.scenarios.presets import PRESET_DIR
from servescope.scenarios.workloads import DEMO

pytestmark = pytest.mark.e2e

RUNNING = "() => window.__servescope.store.panes[0].init"
FLEET = "() => window.__servescope.store.panes[0].fleet?.info ?? null"
FLEET_KEYS = {"replicas", "router"}


def preset_files():
    files = {p.stem: json.loads(p.read_text())["config"] for p in PRESET_DIR.glob("*.json")}
    return {"demo": DEMO["config"], **files}


def apply_and_wait(page, check_js, arg=None):
    before = page.evaluate("() => window.__servescope.store.panes[0].init")
    page.evaluate("() => { window.__before = window.__servescope.store.panes[0].init; }")
    page.click("#apply")
    page.wait_for_function(
        "(arg) => { const i = window.__servescope.store.panes[0].init;"
        f" return i !== window.__before && ({check_js}); }}", arg=arg, timeout=30000)
    return before


def form_value(page, name):
    return page.eval_on_selector(f'#config-form [name="{name}"]',
                                 "(el) => el.type === 'checkbox' ? el.checked : el.value")


def test_every_preset_runs_its_own_config_and_the_form_shows_it(page, server_url):
    errors = []
    # a report the page asked of a run the next preset has replaced is refused 409
    # (api/reports/runs.py), which the browser logs; on a busy machine the page may still ask
    replaced = "the server responded with a status of 409 (Conflict)"
    page.on("console", lambda m: errors.append(m.text)
            if m.type == "error" and replaced not in m.text else None)
    page.goto(server_url + "/")
    wait_ready(page)
    files = preset_files()
    assert len(files) >= 9
    for name, config in sorted(files.items(), key=lambda kv: kv[0] == "demo"):
        page.select_option("#preset", name)
        apply_and_wait(page, "i.preset === arg", name)
        running = page.evaluate(RUNNING)["config"]  # a fleet's: its viewed replica's config
        fleet = page.evaluate(FLEET)
        for key in FLEET_KEYS & config.keys():  # the fleet view shows them, not the form
            assert fleet is not None and fleet[key] == config[key], (name, key, fleet)
        for key, value in config.items():
            if key in FLEET_KEYS:
                continue
            assert running[key] == value, (name, key, running[key], value)
            if key == "speculative_config":  # one JSON object, shown as its parts
                for part in ("method", "num_speculative_tokens", "model"):
                    shown = form_value(page, f"{key}.{part}")
                    assert shown == str(value.get(part) or ""), (name, part, shown, value)
                continue
            shown = form_value(page, key)
            same = shown == value or str(shown) == str(value) or (
                isinstance(value, float) and float(shown) == value)  # 0.0 shows as "0"
            assert same, (name, key, shown, value)
        if "num_gpu_blocks" not in config:  # sized from model and GPU: shown, and said so
            init = page.evaluate(RUNNING)
            assert running["num_gpu_blocks"] == init["memory_breakdown"][
                "num_gpu_blocks"] > 1
            assert form_value(page, "num_gpu_blocks") == str(running["num_gpu_blocks"])
            assert "sized from the model and GPU" in page.text_content("#blocks-note")
    assert page.errors == [] and errors == []


def test_model_and_gpu_size_the_pool_unless_blocks_are_typed(page, server_url):
    page.goto(server_url + "/")
    wait_ready(page)
    assert page.evaluate(RUNNING)["num_gpu_blocks"] == 513
    page.wait_for_function("() => document.querySelectorAll("
                           "'#config-form [name=model] option').length > 2")
    page.select_option('#config-form [name="model"]', "meta-llama/Llama-3.1-8B-Instruct")
    page.select_option('#config-form [name="gpu"]', "H100")
    assert "sized from the model and GPU" in page.text_content("#blocks-note")
    apply_and_wait(page, "i.config.model !== null")
    sized = page.evaluate(RUNNING)
    assert sized["num_gpu_blocks"] > 1000 and sized["memory_breakdown"]
    assert sized["num_gpu_blocks"] == sized["memory_breakdown"]["num_gpu_blocks"]
    page.fill('#config-form [name="num_gpu_blocks"]', "777")
    assert "typed by you" in page.text_content("#blocks-note")
    apply_and_wait(page, "i.num_gpu_blocks === 777")
    assert form_value(page, "num_gpu_blocks") == "777"
    assert page.errors == []


def test_an_upload_runs_on_the_forms_config(page, server_url):
    page.goto(server_url + "/")
    wait_ready(page)
    page.wait_for_function("() => document.querySelectorAll("
                           "'#config-form [name=model] option').length > 2")
    page.select_option('#config-form [name="model"]', "meta-llama/Llama-3.1-8B-Instruct")
    page.select_option('#config-form [name="gpu"]', "H100")
    page.fill('#config-form [name="max_num_seqs"]', "7")
    rows = [{"id": f"u{i}", "arrival_s": 0.1 * i, "prompt_len": 100, "output_len": 20}
            for i in range(5)]
    page.evaluate("() => { window.__before = window.__servescope.store.panes[0].init; }")
    page.set_input_files("#upload", files=[{"name": "mine.json", "mimeType": "application/json",
                                            "buffer": json.dumps(rows).encode()}])
    page.wait_for_function("() => { const i = window.__servescope.store.panes[0].init;"
                           " return i !== window.__before && i.trace; }", timeout=30000)
    running = page.evaluate(RUNNING)
    assert running["config"]["model"] == "meta-llama/Llama-3.1-8B-Instruct"
    assert running["config"]["gpu"] == "H100" and running["config"]["max_num_seqs"] == 7
    assert running["num_gpu_blocks"] == running["memory_breakdown"]["num_gpu_blocks"]
    wait_requests(page)
    assert len(page.evaluate(RUNNING)["requests"]) == 5 and page.errors == []
