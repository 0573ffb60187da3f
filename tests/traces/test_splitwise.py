import csv

from support.paths import shared_path
from support.trace_load import load


def test_shared_splitwise_example():
    path = shared_path("traces", "test_trace.csv")
    with path.open() as handle:
        rows = list(csv.DictReader(handle))
    specs, report = load(path, "splitwise")
    assert report.meta["dialect"] == "splitwise"
    t0 = float(rows[0]["arrival_timestamp"])
    assert [(s.prompt_len, s.output_len, s.arrival_s) for s in specs] == [
        (int(r["prompt_size"]), int(r["token_size"]), float(r["arrival_timestamp"]) - t0)
        for r in rows]


def test_vidur_dialect(write):
    path = write("v.csv", "arrived_at,num_prefill_tokens,num_decode_tokens\n"
                 "10.5,100,20\n11.0,200,30\n")
    specs, report = load(path, "splitwise")
    assert report.meta["dialect"] == "vidur"
    assert [(s.arrival_s, s.prompt_len, s.output_len) for s in specs] == [(0.0, 100, 20),
                                                                          (0.5, 200, 30)]
