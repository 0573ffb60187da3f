"""--tokenizer DIR: a prompt and a chat counted as the model's own tokenizer and chat template
count them. The tokenizer is made here (Hugging Face `tokenizers`, one token a word) so every
count below is a count of words by hand."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.endpoint import start
from support.server import Server

from servescope.api.openai.tokens import Tokens

WORDS = ("<unk>", "<s>", "</s>", "<|user|>", "<|assistant|>", "<|system|>", "hello", "there",
         "how", "are", "you")
# a template in the shape of the models' own (bos first, a role marker a message, the reply's
# marker with add_generation_prompt), spaced so each marker is one word of this tokenizer
TEMPLATE = ("{{ bos_token }} {% for m in messages %}<|{{ m['role'] }}|> {{ m['content'] }} "
            "{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}")


def make_tokenizer(folder: Path) -> Path:
    from tokenizers import Tokenizer, models, pre_tokenizers, processors

    core = Tokenizer(models.WordLevel(vocab={w: i for i, w in enumerate(WORDS)},
                                      unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    # as Llama's tokenizers do: bos before a text encoded with its special tokens
    core.post_processor = processors.TemplateProcessing(single="<s> $A",
                                                        special_tokens=[("<s>", 1)])
    folder.mkdir(parents=True, exist_ok=True)
    core.save(str(folder / "tokenizer.json"))
    (folder / "tokenizer_config.json").write_text(json.dumps(
        {"bos_token": "<s>", "eos_token": {"content": "</s>"}, "chat_template": TEMPLATE}))
    return folder


CHAT = [{"role": "system", "content": "hello"},
        {"role": "user", "content": "how are you there"}]
# "<s> <|system|> hello <|user|> how are you there <|assistant|>": 9 words. A chat prompt is
# rendered, then encoded without special tokens (vLLM: ChatCompletionRequest.add_special_tokens
# defaults to False, the template writes the bos itself), so no second bos
CHAT_TOKENS = 9


def test_a_prompt_counts_as_the_tokenizer_counts(tmp_path: Path) -> None:
    tokens = Tokens(make_tokenizer(tmp_path / "tok"))
    # "hello there" is 2 words, plus the bos the post-processor adds (CompletionRequest's
    # add_special_tokens defaults to True in vLLM); an unknown word is still one token
    assert tokens.prompt("hello there") == (3, "tokenizer")
    assert tokens.prompt("zebra zebra zebra") == (4, "tokenizer")
    assert tokens.prompt([5, 6, 7, 8, 9]) == (5, "prompt_token_ids")


def test_a_chat_counts_as_its_template_lays_it_out(tmp_path: Path) -> None:
    tokens = Tokens(make_tokenizer(tmp_path / "tok"))
    assert tokens.chat(CHAT) == (CHAT_TOKENS, "tokenizer")


@pytest.fixture(scope="module")
def with_tokenizer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("tokenizer")
    server = start(tmp, "--tokenizer", str(make_tokenizer(tmp / "tok")))
    yield server
    server.stop()


def post(server: Server, path: str, body: dict[str, Any]) -> tuple[dict[str, Any], str]:
    request = urllib.request.Request(server.url + path, data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as r:
        return json.loads(r.read()), r.headers["X-ServeScope-Prompt-Tokens"]


def test_the_server_counts_with_its_tokenizer(with_tokenizer: Server) -> None:
    answer, source = post(with_tokenizer, "/v1/chat/completions",
                          {"messages": CHAT, "max_tokens": 2, "ignore_eos": True})
    assert source == "tokenizer"
    assert answer["usage"]["prompt_tokens"] == CHAT_TOKENS
    answer, source = post(with_tokenizer, "/v1/completions",
                          {"prompt": "how are you", "max_tokens": 2, "ignore_eos": True})
    assert (answer["usage"]["prompt_tokens"], source) == (4, "tokenizer")
