"""How many tokens a prompt and an answer have: the prompt's from `prompt_token_ids` where given,
else the model's own tokenizer (`--tokenizer DIR`, Hugging Face `tokenizers`), else an estimate;
the answer's from max_tokens, ignore_eos and min_tokens as vLLM treats them, else drawn from a
stand-in length distribution. The text is deterministic filler, one word a token."""

from __future__ import annotations

import json
import math
import zlib
from pathlib import Path
from typing import Any

import numpy as np

# "one token is roughly 4 characters of English text" (OpenAI's help article "What are tokens
# and how to count them?"): the estimate when neither token ids nor a tokenizer are given
CHARS_PER_TOKEN = 4
# a chat message's own tokens beside its text, and the reply's priming (OpenAI cookbook, "How to
# count tokens with tiktoken", gpt-3.5-turbo-0613 / gpt-4: 3 a message, 3 for the reply)
TOKENS_PER_MESSAGE, TOKENS_PER_REPLY = 3, 3
# without ignore_eos a model stops at its end-of-sequence token: the answer's length is drawn
# from a log-normal of this median and sigma (of ln length), one draw per request id. A stand-in
# for a chat model's typical answer, fitted to no dataset; ignore_eos (as `vllm bench serve` and
# inference-perf send) makes the length exactly max_tokens.
OUTPUT_MEDIAN_TOKENS, OUTPUT_SIGMA = 200, 1.0
FILLER = tuple(f" {w}" for w in (
    "the engine schedules each request token by token while blocks of cache fill and free "
    "as batches grow and shrink").split())

Counted = tuple[int, str]  # a count and where it came from: prompt_token_ids, tokenizer, estimate


class Tokens:
    """The token counts one server uses: with `tokenizer_dir`, that tokenizer and its chat
    template (tokenizer_config.json's chat_template, rendered with jinja2)."""

    def __init__(self, tokenizer_dir: Path | None = None) -> None:
        self.tokenizer: Any = None
        self.template: Any = None
        self.special: dict[str, str] = {}
        if tokenizer_dir is not None:
            self._load(Path(tokenizer_dir))

    def _load(self, folder: Path) -> None:
        from tokenizers import Tokenizer  # only with --tokenizer

        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        config_path = folder / "tokenizer_config.json"
        config = json.loads(config_path.read_text()) if config_path.is_file() else {}
        for key in ("bos_token", "eos_token"):
            token = config.get(key)
            self.special[key] = token.get("content", "") if isinstance(token, dict) else (
                token or "")
        if isinstance(config.get("chat_template"), str):
            import jinja2.sandbox

            env = jinja2.sandbox.ImmutableSandboxedEnvironment(trim_blocks=True,
                                                               lstrip_blocks=True)
            self.template = env.from_string(config["chat_template"])

    @property
    def source(self) -> str:
        return "tokenizer" if self.tokenizer is not None else "estimate"

    def count_text(self, text: str, add_special_tokens: bool = True) -> int:
        if self.tokenizer is None:
            return max(1, math.ceil(len(text) / CHARS_PER_TOKEN))
        return len(self.tokenizer.encode(text, add_special_tokens=add_special_tokens).ids)

    def prompt(self, prompt: str | list[int]) -> Counted:
        """A completion's prompt: its token ids counted, else its text."""
        if isinstance(prompt, list):
            return len(prompt), "prompt_token_ids"
        return self.count_text(prompt), self.source

    def chat(self, messages: list[dict[str, Any]]) -> Counted:
        """A chat's prompt as the model's chat template lays it out, else estimated."""
        if self.template is not None:
            text = self.template.render(messages=messages, add_generation_prompt=True,
                                        **self.special)
            return self.count_text(text, add_special_tokens=False), "tokenizer"
        total = TOKENS_PER_REPLY
        for message in messages:
            total += TOKENS_PER_MESSAGE + self.count_text(content_text(message.get("content")))
        return total, "estimate"


def content_text(content: Any) -> str:
    """A message's text: a string, or the text parts of a list of parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def output_len(request_id: str, max_tokens: int, ignore_eos: bool, min_tokens: int,
               ) -> tuple[int, bool]:
    """The answer's length and whether it ends at end-of-sequence (finish_reason "stop") rather
    than at max_tokens ("length"). vLLM never stops at EOS before min_tokens, nor with
    ignore_eos (SamplingParams)."""
    if ignore_eos:
        return max_tokens, False
    rng = np.random.default_rng(zlib.crc32(request_id.encode()))
    drawn = max(1, round(float(rng.lognormal(math.log(OUTPUT_MEDIAN_TOKENS), OUTPUT_SIGMA))))
    length = max(drawn, min_tokens)
    return (length, True) if length < max_tokens else (max_tokens, False)


def filler(start: int, end: int) -> str:
    """The text of output tokens start..end-1: the same for the same positions, every run."""
    return "".join(FILLER[i % len(FILLER)] for i in range(start, end))
