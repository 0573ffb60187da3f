"""Bad requests answered as vLLM 0.33 answers them: status, and {"error": {message, type, param,
code}}; the messages are vLLM's own (cited where each rule lives)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

from support.server import Server


def post(server: Server, path: str, body: Any) -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(server.url + path, data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def test_a_too_long_prompt_gets_vllms_context_error(endpoint: Server) -> None:
    # vllm/renderers/params.py TokenizeParams._token_len_check: a prompt of 4097 tokens on a
    # 4096-token context
    status, body = post(endpoint, "/v1/completions",
                        {"prompt": list(range(4097)), "max_tokens": 1})
    assert status == 400
    assert body == {"error": {
        "message": "This model's maximum context length is 4096 tokens. However, your prompt "
                   "contains 4097 input tokens, which exceeds this limit even without any "
                   "output tokens. Please reduce the length of the input prompt.",
        "type": "BadRequestError", "param": "input_tokens", "code": 400}}


def test_max_tokens_past_the_context(endpoint: Server) -> None:
    # vllm/renderers/params.py TokenizeParams.__post_init__
    status, body = post(endpoint, "/v1/completions", {"prompt": "hi", "max_tokens": 5000})
    assert status == 400 and body["error"]["param"] == "max_tokens"
    assert body["error"]["message"] == ("max_tokens=5000 cannot be greater than "
                                        "max_model_len=4096. Please request fewer output tokens.")


def test_an_unknown_model_is_404(endpoint: Server) -> None:
    # vllm/entrypoints/serve/engine/serving.py OpenAIServing._check_model
    status, body = post(endpoint, "/v1/chat/completions",
                        {"model": "gpt-x", "messages": [{"role": "user", "content": "hi"}]})
    assert status == 404
    assert body["error"] == {"message": "The model `gpt-x` does not exist. Valid aliases: "
                                        "simulated.", "type": "NotFoundError", "param": "model",
                             "code": 404}


def test_a_bad_field_is_400_naming_it(endpoint: Server) -> None:
    status, body = post(endpoint, "/v1/completions", {"prompt": "hi", "max_tokens": "many"})
    assert status == 400 and body["error"]["param"] == "max_tokens"
    status, body = post(endpoint, "/v1/completions", {"max_tokens": 3})
    assert status == 400 and body["error"]["param"] == "prompt"


def test_min_tokens_above_max_tokens(endpoint: Server) -> None:
    # vllm/sampling_params.py SamplingParams._verify_args
    status, body = post(endpoint, "/v1/completions",
                        {"prompt": "hi", "max_tokens": 4, "min_tokens": 5})
    assert status == 400
    assert body["error"]["message"] == "min_tokens must be less than or equal to max_tokens=4, " \
                                       "got 5."


def test_the_default_max_tokens_fills_the_context(endpoint: Server) -> None:
    # vllm/entrypoints/serve/utils/api_utils.py get_max_tokens: max_model_len - prompt when not
    # given; ignore_eos runs to it
    status, body = post(endpoint, "/v1/completions",
                        {"prompt": list(range(4090)), "ignore_eos": True})
    assert status == 200
    assert body["usage"]["completion_tokens"] == 6
    assert body["choices"][0]["finish_reason"] == "length"
