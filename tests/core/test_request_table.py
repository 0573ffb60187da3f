"""The request table reads back exactly the dicts a request list had (types included: an int
arrival stays an int, a missing one None), by index, slice and iteration, after pickling too,
and finds each id's position and prompt length."""

from __future__ import annotations

import json
import pickle

from hypothesis import given
from hypothesis import strategies as st

from servescope.core.request import RequestSpec
from servescope.core.request_table import RequestTable, request_table

ARRIVAL_S = st.one_of(st.none(), st.floats(0, 1e6), st.integers(0, 10**6))
SPECS = st.lists(st.builds(
    RequestSpec, id=st.text(min_size=1, max_size=4), prompt_len=st.integers(1, 2**40),
    output_len=st.integers(1, 10**6), arrival_step=st.one_of(st.none(), st.integers(0, 99)),
    arrival_s=ARRIVAL_S), max_size=12)


def as_dicts(specs: list[RequestSpec]) -> list[dict]:
    return [{"id": s.id, "prompt_len": s.prompt_len, "output_len": s.output_len,
             "arrival_s": s.arrival_s, "arrival_step": s.arrival_step} for s in specs]


@given(SPECS, st.integers(-15, 15), st.integers(-15, 15))
def test_rows_read_back_as_the_dicts(specs, a, b):
    table, rows = RequestTable.from_specs(specs), as_dicts(specs)
    assert len(table) == len(rows)
    assert list(table) == rows
    assert json.dumps(list(table)) == json.dumps(rows)  # 3 stays 3, 3.0 stays 3.0
    assert table[a:b] == rows[a:b]
    if -len(rows) <= a < len(rows):
        assert table[a] == rows[a]
    assert list(pickle.loads(pickle.dumps(table))) == rows
    assert list(RequestTable.from_rows(rows)) == rows


@given(SPECS)
def test_positions_and_prompt_lengths_follow_the_last_of_a_repeated_id(specs):
    table = RequestTable.from_specs(specs)
    last = {s.id: k for k, s in enumerate(specs)}
    assert table.positions == last
    assert table.prompt_lengths == {s.id: specs[last[s.id]].prompt_len for s in specs}
    assert list(pickle.loads(pickle.dumps(table))) == as_dicts(specs)  # lookups left behind
    for s in specs:
        assert table.prompt_len_of(s.id) == specs[last[s.id]].prompt_len
        assert table.arrival_s_of(s.id) == specs[last[s.id]].arrival_s
    assert table.prompt_len_of("not-an-id") == 0 and table.arrival_s_of("not-an-id") is None


def test_fixed_columns_are_arrays_and_a_table_is_shared_not_copied():
    table = RequestTable.from_specs([RequestSpec(f"r{k}", 100 + k, 7, arrival_s=k / 2)
                                     for k in range(1000)])
    assert table.prompt_len.itemsize == 8 and table.arrival_s.typecode == "d"
    assert table.arrival_step is None
    assert request_table(table) is table
    assert table[-1] == {"id": "r999", "prompt_len": 1099, "output_len": 7,
                         "arrival_s": 499.5, "arrival_step": None}
