import csv

import numpy as np
from support.paths import shared_path
from support.trace_load import load

from servescope.traces import sharegpt
from servescope.traces.report import TraceReport

CSV = "num_prefill_tokens,num_decode_tokens,num_total_tokens,pd_ratio\n"


def test_samples_pairs_from_the_file_with_the_injected_generator(write):
    path = write("s.csv", CSV + "10,1,11,10\n20,2,22,10\n30,3,33,10\n0,5,5,0\n")
    run = [list(sharegpt.read(path, TraceReport("", ""), num_requests=50,
                              rng=np.random.default_rng(3))) for _ in range(2)]
    assert run[0] == run[1]
    pairs = {(s.prompt_len, s.output_len) for s in run[0]}
    assert pairs <= {(10, 1), (20, 2), (30, 3)} and len(pairs) == 3
    assert all(s.arrival_s == 0.0 for s in run[0])


def test_poisson_arrivals_at_the_given_rate(write):
    path = write("s.csv", CSV + "10,1,11,10\n")
    specs = list(sharegpt.read(path, TraceReport("", ""), num_requests=4000, rate_per_s=20.0,
                               rng=np.random.default_rng(0)))
    assert 4000 / specs[-1].arrival_s == np.clip(4000 / specs[-1].arrival_s, 19.0, 21.0)


def test_shared_statistics_file():
    path = shared_path("traces", "sharegpt_8k_filtered_stats_llama2_tokenizer.csv")
    with path.open() as handle:
        pairs = {(int(r["num_prefill_tokens"]), int(r["num_decode_tokens"]))
                 for r in csv.DictReader(handle)}
    specs, report = load(path, "sharegpt-stats", num_requests=300, seed=1)
    assert len(specs) == 300
    assert {(s.prompt_len, s.output_len) for s in specs} <= pairs
    assert report.meta["num_pairs"] <= len(pairs) * 10
