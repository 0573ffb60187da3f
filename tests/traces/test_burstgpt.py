import csv

import pytest
from support.paths import shared_path
from support.trace_load import load

from servescope.traces.errors import TraceFormatError


@pytest.mark.parametrize("name, version", [("BurstGPT_1.head105.csv", 1),
                                           ("BurstGPT_3.head58.csv", 3)])
def test_shared_excerpts(name, version):
    path = shared_path("traces", name)
    with path.open() as handle:
        rows = list(csv.DictReader(handle))
    failed = sum(1 for r in rows if int(r["Response tokens"]) == 0)
    specs, report = load(path, "burstgpt")
    assert report.meta["version"] == version
    assert len(specs) == len(rows) - failed
    assert report.skipped.get("failed", 0) == failed
    kept = [r for r in rows if int(r["Response tokens"]) > 0]
    assert [s.prompt_len for s in specs] == [int(r["Request tokens"]) for r in kept]
    t0 = float(rows[0]["Timestamp"])
    assert [s.arrival_s for s in specs] == [float(r["Timestamp"]) - t0 for r in kept]


def test_columns_by_name_in_any_order(write):
    path = write("b.csv", "Log Type,Response tokens,Model,Timestamp,Request tokens,Total tokens\n"
                 "Conversation log,18,ChatGPT,5,472,490\nAPI log,0,GPT-4,6,10,10\n"
                 "API log,7,GPT-4,9,11,18\n")
    specs, report = load(path, "burstgpt")
    assert [(s.prompt_len, s.output_len, s.arrival_s) for s in specs] == [(472, 18, 0.0),
                                                                          (11, 7, 4.0)]
    assert report.skipped["failed"] == 1
    assert report.notes


def test_bad_timestamp_names_line_and_field(write):
    path = write("b.csv", "Timestamp,Request tokens,Response tokens\n5,1,1\nsoon,1,1\n")
    with pytest.raises(TraceFormatError) as info:
        load(path, "burstgpt")
    assert (info.value.line, info.value.field) == (3, "Timestamp")
