"""The `openai` Python client against a real server: completions and chat, streamed (with
stream_options.include_usage) and not, as it talks to vLLM."""

from __future__ import annotations

import openai
import pytest
from support.endpoint import TIME_SCALE
from support.server import Server


@pytest.fixture()
def client(endpoint: Server) -> openai.OpenAI:
    return openai.OpenAI(base_url=endpoint.url + "/v1", api_key="unused", max_retries=0)


def test_the_client_streams_a_completion(client: openai.OpenAI) -> None:
    stream = client.completions.create(model="simulated", prompt=[1, 2, 3, 4, 5, 6, 7, 8],
                                       max_tokens=12, stream=True,
                                       stream_options={"include_usage": True})
    chunks = list(stream)
    texts = [c.choices[0].text for c in chunks if c.choices]
    reasons = [c.choices[0].finish_reason for c in chunks if c.choices]
    assert len(texts) >= 2 and all(texts)  # the tokens come as they are made, not at once
    assert len("".join(texts).split()) == 12  # one filler word a token
    assert reasons[-1] == "length" and not any(reasons[:-1])
    usage = chunks[-1].usage
    assert not chunks[-1].choices
    assert (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) == (8, 12, 20)


def test_the_client_streams_a_chat(client: openai.OpenAI) -> None:
    stream = client.chat.completions.create(
        model="simulated", messages=[{"role": "user", "content": "hello"}], max_tokens=6,
        stream=True, extra_body={"ignore_eos": True})
    chunks = list(stream)
    assert chunks[0].choices[0].delta.role == "assistant"
    text = "".join(c.choices[0].delta.content or "" for c in chunks)
    assert len(text.split()) == 6
    assert chunks[-1].choices[0].finish_reason == "length"
    assert {c.object for c in chunks} == {"chat.completion.chunk"}


def test_a_whole_chat_with_its_headers(client: openai.OpenAI) -> None:
    raw = client.chat.completions.with_raw_response.create(
        model="simulated", messages=[{"role": "user", "content": "12345678"}], max_tokens=3,
        extra_body={"ignore_eos": True})
    answer = raw.parse()
    assert answer.choices[0].message.role == "assistant"
    assert answer.choices[0].finish_reason == "length"
    # no tokenizer: 8 characters at 4 a token, 3 for the message and 3 for the reply
    assert answer.usage.prompt_tokens == 2 + 3 + 3
    assert raw.headers["x-servescope-prompt-tokens"] == "estimate"
    assert raw.headers["x-servescope-time-scale"] == TIME_SCALE


def test_models_lists_the_served_model(client: openai.OpenAI) -> None:
    (card,) = client.models.list().data
    assert card.id == "simulated" and card.owned_by == "vllm"
    assert card.model_extra["max_model_len"] == 4096
