import json

import pytest
from support.paths import shared_path
from support.trace_load import load

from servescope.traces.errors import TraceFormatError


def test_hash_ids_become_512_token_segments_trimmed_to_the_prompt(write):
    path = write("m.jsonl", json.dumps({"timestamp": 1500, "input_length": 1100,
                                        "output_length": 5, "hash_ids": [7, 8, 9, 10]}) + "\n"
                 + json.dumps({"timestamp": 2250, "input_length": 1600, "output_length": 1,
                               "hash_ids": [7, 11]}) + "\n")
    specs, _ = load(path, "mooncake")
    assert specs[0].prefix == (("h:7", 512), ("h:8", 512), ("h:9", 76))
    assert specs[1].prefix == (("h:7", 512), ("h:11", 512))  # the last 576 tokens are unique
    assert [s.arrival_s for s in specs] == [0.0, 0.75]


def test_shared_prefix_maps_onto_any_block_size(write):
    """Two requests sharing hash id 0 share its 512 tokens: 32 blocks of 16, 8 of 64."""
    from servescope.core.config import EngineConfig
    from servescope.core.engine import Engine

    path = write("m.jsonl", "".join(json.dumps({"timestamp": t, "input_length": 700,
                                                "output_length": 2, "hash_ids": [0, h]}) + "\n"
                                    for t, h in ((0, 1), (5000, 2))))
    specs, _ = load(path, "mooncake")
    for block_size, shared in ((16, 512), (64, 512), (128, 512)):
        config = EngineConfig.from_dict(dict(block_size=block_size, num_gpu_blocks=200,
                                             max_num_batched_tokens=2048))
        records = list(Engine(config, specs).run())
        hits = [r.num_cached_tokens.get("mc1") for r in records if "mc1" in r.num_cached_tokens]
        assert hits == [shared]


def test_shared_conversation_trace():
    path = shared_path("traces", "conversation_trace.jsonl")
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    specs, report = load(path, "mooncake")
    assert len(specs) == len(rows) == report.num_yielded
    assert specs[-1].arrival_s == pytest.approx((rows[-1]["timestamp"] - rows[0]["timestamp"])
                                                / 1000)
    assert sum(n for _, n in specs[0].prefix) == min(rows[0]["input_length"],
                                                     512 * len(rows[0]["hash_ids"]))


@pytest.mark.parametrize("line, field", [
    ('{"timestamp": 1, "input_length": 5}', "output_length"),
    ('{"timestamp": "x", "input_length": 5, "output_length": 1}', "timestamp"),
    ('{"timestamp": 1, "input_length": 5, "output_length": 1, "hash_ids": 3}', "hash_ids"),
    ('{"timestamp": 1, "input_length": 5, "output_length": 1, "hash_ids": [1.5]}', "hash_ids"),
    ('{"timestamp": 1, "input_length": 5', ""),
    ('[1, 2]', ""),
])
def test_first_bad_line(write, line, field):
    good = '{"timestamp": 0, "input_length": 5, "output_length": 1, "hash_ids": [1]}\n'
    with pytest.raises(TraceFormatError) as info:
        load(write("m.jsonl", good + "\n" + line + "\n" + "nonsense\n"), "mooncake")
    assert (info.value.line, info.value.field) == (3, field)
