"""Writes a small Hugging Face tokenizer directory for the real clients' tests: no model hub is
reachable from a test, and inference-perf's random data generator needs a tokenizer it can load
with transformers' AutoTokenizer. Run with a Python that has `tokenizers` and `transformers`
(inference-perf's own environment has both): python make_tokenizer.py DIR.

One token a whitespace-separated word (WordLevel over a whitespace split), so a text's token
count is its word count whoever counts it: the client, the server, or this test."""

from __future__ import annotations

import sys

from tokenizers import Tokenizer, decoders, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast

# a vocabulary large enough that random prompts are not one repeated word, small enough to
# write in a blink; the number is ours
NUM_WORDS = 2000
SPECIALS = {"unk_token": "<unk>", "bos_token": "<s>", "eos_token": "</s>"}


def build(directory: str) -> None:
    vocab = {token: i for i, token in enumerate(SPECIALS.values())}
    for i in range(NUM_WORDS):
        vocab[f"w{i}"] = len(vocab)
    core = Tokenizer(models.WordLevel(vocab=vocab, unk_token=SPECIALS["unk_token"]))
    core.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    core.decoder = decoders.WordPiece(prefix="##")  # joins words with one space
    PreTrainedTokenizerFast(tokenizer_object=core, model_max_length=1 << 20,
                            **SPECIALS).save_pretrained(directory)


if __name__ == "__main__":
    build(sys.argv[1])
