"""The answers' JSON, as vLLM 0.33 writes them: completions (object "text_completion"), chat
completions ("chat.completion", streamed as "chat.completion.chunk"), usage, the model card."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Answer:
    """What every chunk of one answer repeats, and how it counts."""

    id: str
    created: int
    model: str
    chat: bool
    prompt_tokens: int
    include_usage: bool
    continuous_usage: bool

    def usage(self, completion_tokens: int) -> dict[str, Any]:
        return {"prompt_tokens": self.prompt_tokens,
                "total_tokens": self.prompt_tokens + completion_tokens,
                "completion_tokens": completion_tokens, "prompt_tokens_details": None}

    def head(self, stream: bool) -> dict[str, Any]:
        kind = "chat.completion" if self.chat else "text_completion"
        return {"id": self.id, "object": kind + (".chunk" if stream and self.chat else ""),
                "created": self.created, "model": self.model}

    def chunk(self, text: str, finish_reason: str | None, num_tokens: int,
              role: bool = False) -> dict[str, Any]:
        """One streamed piece of text (`role`: the chat's first, saying who speaks)."""
        choice: dict[str, Any] = {"index": 0}
        if self.chat:
            choice["delta"] = {"role": "assistant", "content": text} if role else {
                "content": text}
        else:
            choice["text"] = text
        choice.update(logprobs=None, finish_reason=finish_reason, stop_reason=None)
        body = {**self.head(True), "choices": [choice]}
        if self.continuous_usage:
            body["usage"] = self.usage(num_tokens)
        return body

    def usage_chunk(self, num_tokens: int) -> dict[str, Any]:
        return {**self.head(True), "choices": [], "usage": self.usage(num_tokens)}

    def whole(self, text: str, finish_reason: str | None, num_tokens: int) -> dict[str, Any]:
        """The answer not streamed."""
        choice: dict[str, Any] = {"index": 0}
        if self.chat:
            choice["message"] = {"role": "assistant", "content": text, "refusal": None,
                                 "tool_calls": [], "reasoning_content": None}
        else:
            choice["text"] = text
        choice.update(logprobs=None, finish_reason=finish_reason, stop_reason=None)
        return {**self.head(False), "choices": [choice], "usage": self.usage(num_tokens)}


def model_card(name: str, created: int, max_model_len: int | None) -> dict[str, Any]:
    """One entry of GET /v1/models (vllm/entrypoints/openai/models/protocol.py ModelCard)."""
    return {"id": name, "object": "model", "created": created, "owned_by": "vllm",
            "root": name, "parent": None, "max_model_len": max_model_len,
            "permission": [{"id": f"modelperm-{name}", "object": "model_permission",
                            "created": created, "allow_create_engine": False,
                            "allow_sampling": True, "allow_logprobs": True,
                            "allow_search_indices": False, "allow_view": True,
                            "allow_fine_tuning": False, "organization": "*", "group": None,
                            "is_blocking": False}]}
