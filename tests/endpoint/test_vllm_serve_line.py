"""serve --openai --vllm-serve '...' --gpu NAME: a `vllm serve` line, its KV cache sized on that
GPU (as import-vllm sizes it), serves; without a GPU it is refused in one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path

from support.server import ROOT, Server

MODEL = "meta-llama/Llama-3.1-8B-Instruct"
LINE = f"vllm serve {MODEL} --max-model-len 2048 --max-num-seqs 32"


def test_a_vllm_serve_line_on_a_gpu_serves(tmp_path: Path) -> None:
    server = Server(tmp_path / "data", "--openai", "--vllm-serve", LINE, "--gpu", "H100",
                    "--time-scale", "4")
    try:
        card = server.get("/v1/models")["data"][0]
        assert (card["id"], card["max_model_len"]) == (MODEL, 2048)
        body = {"model": MODEL, "prompt": list(range(100)), "max_tokens": 3, "ignore_eos": True}
        request = urllib.request.Request(server.url + "/v1/completions",
                                         data=json.dumps(body).encode(),
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as r:
            answer = json.loads(r.read())
        assert answer["usage"] == {"prompt_tokens": 100, "completion_tokens": 3,
                                   "total_tokens": 103, "prompt_tokens_details": None}
        assert answer["choices"][0]["finish_reason"] == "length"
    finally:
        server.stop()


def test_a_line_without_a_gpu_is_refused_saying_so(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "-m", "servescope.cli", "serve", "--openai",
                          "--vllm-serve", LINE], cwd=ROOT, capture_output=True, text=True,
                         timeout=120, env={**os.environ, "SERVESCOPE_DATA_DIR": str(tmp_path)})
    assert out.returncode != 0
    assert "--gpu" in out.stderr and "Traceback" not in out.stderr
