"""The request bodies the API reads, with vLLM's names (vllm/entrypoints/openai/completion/
protocol.py, chat_completion/protocol.py); sampling fields the engine does not simulate
(temperature, top_p, stop, ...) are accepted and ignored."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

# the most token ids one prompt may list: a bound before counting (no model served reads more)
MAX_PROMPT_TOKEN_IDS = 10_000_000


class StreamOptions(BaseModel):
    include_usage: bool | None = False
    continuous_usage_stats: bool | None = False


class Sampling(BaseModel):
    model_config = ConfigDict(extra="allow")

    model: str | None = None
    max_tokens: int | None = None
    min_tokens: int = 0
    ignore_eos: bool = False
    n: int = 1
    stream: bool | None = False
    stream_options: StreamOptions | None = None
    request_id: str | None = Field(default=None, max_length=256)


class CompletionRequest(Sampling):
    prompt: str | list[int] | list[str] | list[list[int]] = Field(
        max_length=MAX_PROMPT_TOKEN_IDS)


class ChatRequest(Sampling):
    messages: list[dict[str, Any]] = Field(min_length=1)
    max_completion_tokens: int | None = None
