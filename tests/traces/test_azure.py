import csv
import tracemalloc

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.paths import shared_path
from support.trace_load import load

from servescope.traces.azure import TimestampParser
from servescope.traces.errors import TraceFormatError

HEADER = "TIMESTAMP,ContextTokens,GeneratedTokens\n"


def test_shared_code_trace_streams_every_row():
    path = shared_path("traces", "AzureLLMInferenceTrace_code.csv")
    with path.open() as handle:
        rows = list(csv.DictReader(handle))
    specs, report = load(path, "azure")
    assert len(specs) == len(rows) == report.num_yielded
    assert (specs[0].prompt_len, specs[0].output_len) == (int(rows[0]["ContextTokens"]),
                                                          int(rows[0]["GeneratedTokens"]))
    # 18:17:04.0319600 - 18:17:03.9799600, by hand
    assert specs[1].arrival_s == pytest.approx(0.052, abs=1e-9)
    assert specs[0].arrival_s == 0.0


def test_seven_digit_and_mixed_precision_timestamps(write):
    path = write("a.csv", HEADER + "2024-05-10 00:00:00.1234567,10,2\n"
                 "2024-05-10 00:00:01,20,3\n2024-05-10 00:00:01.5+00:00,5,1\n"
                 "2024-05-10T00:01:00.25Z,7,7\n")
    specs, _ = load(path, "azure")
    assert [s.arrival_s for s in specs] == pytest.approx([0.0, 0.8765433, 1.3765433, 60.1265433])


def test_midnight_crossing(write):
    path = write("a.csv", HEADER + "2023-11-16 23:59:59.9000000,1,1\n"
                 "2023-11-17 00:00:00.1000000,1,1\n")
    specs, _ = load(path, "azure")
    assert specs[1].arrival_s == pytest.approx(0.2)


@pytest.mark.parametrize("row, field", [
    ("2023-11-16 18:17:04.1,abc,3", "ContextTokens"),
    ("2023-11-16 18:17:04.1,5,-3", "GeneratedTokens"),
    ("16/11/2023 18:17,5,3", "TIMESTAMP"),
    ("2023-11-16 18:17:04.1,5", ""),
])
def test_first_bad_line_and_field(write, row, field):
    path = write("a.csv", HEADER + "2023-11-16 18:17:03.9,1,1\n" + row + "\n"
                 + "garbage,garbage\n")
    with pytest.raises(TraceFormatError) as info:
        load(path, "azure")
    assert (info.value.line, info.value.field) == (3, field)


def test_missing_column_is_named(write):
    with pytest.raises(TraceFormatError) as info:
        load(write("a.csv", "TIMESTAMP,ContextTokens\n2023-11-16 18:17:03.9,1\n"), "azure")
    assert info.value.field == "GeneratedTokens"


def test_zero_lengths_are_skipped_and_counted(write):
    specs, report = load(write("a.csv", HEADER + "2023-11-16 18:17:03.9,0,1\n"
                               "2023-11-16 18:17:04.0,4,0\n2023-11-16 18:17:04.1,4,4\n"), "azure")
    assert [s.id for s in specs] == ["az2"]
    assert report.skipped == {"zero_prompt": 1, "zero_output": 1}


def test_memory_stays_bounded_while_streaming(tmp_path):
    path = tmp_path / "big.csv"
    with path.open("w") as out:
        out.write(HEADER)
        for i in range(30_000):
            out.write(f"2024-05-10 00:{i // 6000 % 60:02d}:{i // 100 % 60:02d}."
                      f"{i % 100:02d}00000,{i % 4000 + 1},{i % 300 + 1}\n")
    from servescope.traces import registry
    from servescope.traces.report import TraceReport
    tracemalloc.start()
    count = sum(1 for _ in registry.load(path, TraceReport("azure", "")))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert count == 30_000
    assert peak < 1024 * 1024, f"peak {peak} bytes while streaming"


DIGITS = st.text("0123456789", min_size=0, max_size=11)
# Mostly the common layout, each part now and then something else (a part listed several
# times is drawn that much more often)
TIMESTAMPS = st.builds(
    lambda pad, date, sep, clock, dot, fraction, zone, tail: (
        f"{pad}{date}{sep}{clock}{dot}{fraction}{zone}{tail}"),
    st.sampled_from(["", "", "", " "]),
    st.sampled_from(["2023-11-16"] * 4 + ["2024-02-30", "2024-1-10", "２０２４-05-10"]),
    st.sampled_from([" "] * 4 + ["T", "_"]),
    st.sampled_from(["18:15:46"] * 4 + ["23:59:59", "24:00:00", "18:15:4"]),
    st.sampled_from(["."] * 4 + ["", ","]),
    DIGITS | st.sampled_from(["٣", "1²", " 5", "3 "]),
    st.sampled_from([""] * 4 + ["Z", "+01:00", "-0530"]),
    st.sampled_from([""] * 4 + [" ", "x"]))


def _outcome(parse, text: str) -> object:
    try:
        return parse(text, 7)
    except TraceFormatError as err:
        return ("error", err.line, err.field, str(err))


@settings(max_examples=300, deadline=None)
@given(st.lists(TIMESTAMPS, min_size=1, max_size=12))
def test_the_common_layout_read_by_slicing_equals_the_whole_pattern(texts):
    """The parser slices the common layout and falls back to the whole pattern for any other:
    the same seconds, fraction and errors as the pattern alone, row after row (it remembers the
    last second)."""
    fast, full = TimestampParser(), TimestampParser()
    assert [_outcome(fast, t) for t in texts] == [_outcome(full.parse, t) for t in texts]
