"""Issue 4 in a real Chromium: model and GPU picked from the server's catalogs size the KV pool,
the page says how, a model too big for the GPU is refused beside its field, the panel fits."""

from __future__ import annotations

import re

import pytest
from pagestate import pane, wait_history, wait_ready

pytestmark = pytest.mark.e2e

LLAMA_8B = "meta-llama/Llama-3.1-8B-Instruct"
LLAMA_70B = "meta-llama/Llama-3.3-70B-Instruct"

# Elements of the side panel that stick out of its padding box, and whether it scrolls sideways.
OVERFLOW = """() => {
  const side = document.querySelector(".side");
  if (!side.offsetParent) return document.documentElement.scrollWidth > innerWidth ? ["page"] : [];
  const box = side.getBoundingClientRect();
  const pad = parseFloat(getComputedStyle(side).paddingRight);
  const out = [...side.querySelectorAll("*")].filter((el) => {
    const r = el.getBoundingClientRect();
    return r.width > 0 && (r.right > box.right - pad + 0.5 || r.left < box.left);
  }).map((el) => el.id || el.name || el.tagName);
  if (side.scrollWidth > side.clientWidth) out.push("side scrolls sideways");
  return out;
}"""


def test_model_and_gpu_size_the_pool_and_a_model_too_big_is_refused(page, fresh_url):
    page.goto(fresh_url)
    wait_ready(page)
    assert pane(page)["num_blocks"] == 513  # the demo preset's own pool
    assert page.evaluate(OVERFLOW) == []
    page.wait_for_selector(f'#field-model option[value="{LLAMA_8B}"]', state="attached")
    assert not page.is_checked("#field-async_scheduling")  # the demo preset's own config
    page.select_option("#field-model", LLAMA_8B)
    page.select_option("#field-gpu", "H100")
    # vLLM's default for vllm serve on a GPU: the toggle follows it, and says so
    assert page.is_checked("#field-async_scheduling")
    assert "vLLM's default" in page.text_content("#async-note")
    page.fill("#field-num_gpu_blocks", "")  # let the memory size the pool
    page.click("#apply")
    page.wait_for_function("() => window.__servescope.store.panes[0].run.numBlocks > 1000")
    assert page.evaluate("() => window.__servescope.store.panes[0].init.config"
                         ".async_scheduling") is True
    blocks = pane(page)["num_blocks"]
    sizing = page.text_content("#kv-sizing")
    assert sizing.startswith("KV pool sized from memory: "), sizing
    assert "budget 71.30 GiB (0.9 × 79.22)" in sizing  # 0.9 of the H100's 79.22 GiB visible
    assert re.search(r"weights 14\.9[5-7] ", sizing), sizing  # 8.03B parameters x 2 bytes
    assert f"{blocks} blocks of 16 (128 KiB a token)" in sizing, (blocks, sizing)
    assert page.text_content("#pool-info").startswith(f"{blocks} blocks of 16 tokens")
    assert page.evaluate(OVERFLOW) == []

    page.select_option("#field-model", LLAMA_70B)  # 141 GB of BF16 weights on one 80 GB GPU
    page.click("#apply")
    refusal = page.wait_for_selector('label[data-field="model"] .field-error')
    assert "does not fit" in refusal.text_content() and "H100" in refusal.text_content()
    assert page.text_content("#error").startswith("Not applied; the session runs as before.")
    assert page.evaluate(OVERFLOW) == []
    page.click("#btn-fwd")  # the session lives on, on the 8B pool
    wait_history(page, 1)
    assert pane(page)["num_blocks"] == blocks

    page.set_viewport_size({"width": 1280, "height": 800})
    assert page.evaluate(OVERFLOW) == []
    page.keyboard.press("p")
    assert "projection" in page.get_attribute("body", "class")
    assert page.evaluate(OVERFLOW) == []
    assert page.errors == []
