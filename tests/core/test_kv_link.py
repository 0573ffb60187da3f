"""The handoff's price (core/kv_link.py): the KV bytes formula on a hand-made geometry, link
time, and contention on one link."""

from __future__ import annotations

import pytest

from servescope.core.config_error import ConfigError
from servescope.core.kv_link import LINK_KINDS, KVLink, LinkSpec, kv_bytes
from servescope.core.model_spec import from_hf_config

# a Llama-3-8B-like geometry: 32 layers, 8 KV heads of 128
GEOMETRY = {"num_hidden_layers": 32, "hidden_size": 4096, "num_attention_heads": 32,
            "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 128256}


def test_kv_bytes_is_layers_heads_head_size_two_element_bytes_tokens() -> None:
    model = from_hf_config("hand-made", GEOMETRY)
    # 32 x 8 x 128 x 2 x 2 bytes = 131,072 bytes a token, whatever the decode TP up to 8
    assert kv_bytes(model, 2, 1000, decode_tp=1) == 131_072_000
    assert kv_bytes(model, 2, 1000, decode_tp=4) == 131_072_000
    assert kv_bytes(model, 1, 1000, decode_tp=2) == 65_536_000  # fp8 KV


def test_decode_tp_past_the_kv_heads_replicates_them() -> None:
    model = from_hf_config("hand-made", GEOMETRY)
    # TP 16 over 8 KV heads: each rank keeps one head, 16 heads' worth cross
    assert kv_bytes(model, 2, 10, decode_tp=16) == 2 * 32 * 16 * 128 * 2 * 10


def test_a_transfer_takes_latency_plus_bytes_over_bandwidth_of_its_rank_pairs() -> None:
    link = KVLink(LinkSpec("infiniband", 50.0, 0.01), num_rank_pairs=2)
    # 131,072,000 bytes over 2 x 50 GB/s = 1.31072 ms, + 0.01 ms
    assert link.duration_s(131_072_000) == pytest.approx(0.00001 + 131_072_000 / 100e9)


def test_contention_on_one_link_delays_the_second_transfer() -> None:
    link = KVLink(LinkSpec("pcie", 1.0, 1.0), num_rank_pairs=1)  # 1e9 B/s, 1 ms
    first = link.send(9_000_000, ready_s=0.0)  # 1 + 9 ms
    second = link.send(1_000_000, ready_s=0.002)  # ready at 2 ms, starts when the first ends
    assert first == pytest.approx((0.0, 0.010))
    assert second == pytest.approx((0.010, 0.012))
    other = KVLink(LinkSpec("pcie", 1.0, 1.0), num_rank_pairs=1)
    assert other.send(1_000_000, ready_s=0.002) == pytest.approx((0.002, 0.004))


def test_link_config_defaults_per_kind_and_names_a_bad_field() -> None:
    assert LinkSpec.from_dict({"kind": "nvlink"}).gbps == LINK_KINDS["nvlink"].gbps
    assert LinkSpec.from_dict(None).kind == "infiniband"
    with pytest.raises(ConfigError) as bad:
        LinkSpec.from_dict({"gbps": -1})
    assert bad.value.field == "kv_link.gbps"
    with pytest.raises(ConfigError) as unknown:
        LinkSpec.from_dict({"kind": "carrier-pigeon"})
    assert unknown.value.field == "kv_link.kind"
