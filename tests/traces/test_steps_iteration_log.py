import pytest
from support.trace_load import load

from servescope.core.records import BlockTables
from servescope.traces.errors import TraceFormatError

PREFIX = "(EngineCore_DP0 pid=7) INFO 12-02 11:00:0{} [core.py:312] "
BODY = ("Iteration({}): {} context requests, {} context tokens, {} generation requests, "
        "{} generation tokens, iteration elapsed time: {} ms, GPU KV cache usage: {}%")


def log(*rows):
    lines = ["INFO 12-02 11:00:00 [api_server.py:1] vLLM API server version 0.33.0"]
    lines += [PREFIX.format(k % 10) + BODY.format(*row) for k, row in enumerate(rows)]
    return "\n".join(lines) + "\n"


def test_batches_become_anonymous_slots(write):
    path = write("v.log", log((7, 2, 1000, 3, 3, "25.50", "12.5"), (8, 0, 0, 4, 4, "10.00", "13")))
    records, report = load(path, "vllm-iteration-log", num_blocks=1000)
    first, second = records
    assert first.step == 7 and second.step == 8
    assert [(e.id, e.n, e.prefill, e.sampled) for e in first.scheduled] == [
        ("~ctx0", 500, True, False), ("~ctx1", 500, True, False), ("~gen0", 1, False, True),
        ("~gen1", 1, False, True), ("~gen2", 1, False, True)]
    assert first.step_time_ms == 25.5 and second.time_s == pytest.approx(0.0255)
    assert first.kv_usage == pytest.approx(0.125) and second.num_free_blocks == 870
    assert report.meta["anonymous_ids"] is True and report.notes
    assert first.to_dict()["arrivals"] == [] and first.finished == ()


def test_uneven_context_tokens_and_missing_usage(write):
    line = "Iteration(1): 3 context requests, 10 context tokens, 0 generation requests, " \
           "0 generation tokens, iteration elapsed time: 5 ms"
    records, report = load(write("v.log", line + "\n"), "vllm-iteration-log")
    assert [e.n for e in records[0].scheduled] == [4, 3, 3]
    assert any("usage" in n for n in report.notes)


def test_bad_iteration_line_and_impossible_counts(write):
    good = log((1, 1, 5, 0, 0, "1", "1"))
    with pytest.raises(TraceFormatError) as info:
        load(write("v.log", good + "Iteration(2): 1 context requests, lots\n"),
             "vllm-iteration-log")
    assert info.value.line == 3
    with pytest.raises(TraceFormatError) as info:
        load(write("w.log", log((1, 2, 1, 0, 0, "1", "1"))), "vllm-iteration-log")
    assert (info.value.line, info.value.field) == (2, "context tokens")


def test_a_log_without_iteration_lines_is_refused(write):
    with pytest.raises(TraceFormatError):
        load(write("v.log", "INFO hello\nINFO world\n"), "vllm-iteration-log")


def test_blocks_in_use_are_held_by_placeholders(write):
    path = write("v.log", log((1, 1, 5, 0, 0, "1", "40"), (2, 0, 0, 1, 1, "1", "50"),
                              (3, 0, 0, 1, 1, "1", "10")))
    records, report = load(path, "vllm-iteration-log", num_blocks=100)
    folded = BlockTables()
    for r in records:
        folded.apply(r)
        folded.after_update(r)
        used = sorted(b for t in folded.tables.values() for b in t)
        assert used == list(range(1, r.num_usable_blocks - r.num_free_blocks + 1))
    assert all(owner.startswith("~kv") for r in records for owner in r.new_blocks)
    assert records[2].freed_blocks == tuple(range(11, 51))
    assert any("request ids" in what for what in report.meta["unknown"])
