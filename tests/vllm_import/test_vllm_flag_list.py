"""The committed list of `vllm serve` flags: how it is described from a parser, how import-vllm
uses it, and (optional, marked `vllm`) that it equals the installed vLLM 0.33's parser."""

from __future__ import annotations

import argparse
import json

import pytest

from servescope.vllm_import import flag_list
from servescope.vllm_import.args import import_text


def test_a_parser_is_described_by_destination_with_its_long_options():
    parser = argparse.ArgumentParser()
    parser.add_argument("--max-num-seqs", type=int)
    parser.add_argument("--enable-prefix-caching", action=argparse.BooleanOptionalAction)
    parser.add_argument("-tp", "--tensor-parallel-size", type=int)
    described = flag_list.describe(parser, "0.33.0")
    assert described == {"vllm_version": "0.33.0", "flags": {
        "enable_prefix_caching": ["--enable-prefix-caching", "--no-enable-prefix-caching"],
        "max_num_seqs": ["--max-num-seqs"], "tensor_parallel_size": ["--tensor-parallel-size"]}}


def test_lora_modules_is_a_flag_import_vllm_knows():
    result = import_text("vllm serve m --enable-lora --lora-modules a=/x")
    kinds = {i["flag"]: i["reason"] for i in result.ignored}
    assert kinds["--lora-modules"] == "not_modelled"


@pytest.mark.vllm
def test_the_committed_list_is_the_installed_vllm_serve_parser():
    pytest.importorskip("vllm", reason="vllm is not installed (optional extra `vllm`)")
    parser, version = flag_list.vllm_serve_parser()
    assert version.startswith("0.33"), version
    assert flag_list.LIST_PATH.exists(), "generate it: python -m servescope.vllm_import.flag_list"
    committed = json.loads(flag_list.LIST_PATH.read_text())
    assert committed == flag_list.describe(parser, version)
