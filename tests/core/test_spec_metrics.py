"""Speculative counters as vLLM 0.33 counts them (SpecDecodingStats.observe_draft and
SpecDecodingLogging.log, vllm/v1/spec_decode/metrics.py), on hand-made steps."""

from __future__ import annotations

import pytest

from servescope.core.spec_metrics import SpecCounters


def test_counts_follow_vllms_definitions() -> None:
    counters = SpecCounters()
    counters.observe({"a": 3, "b": 3}, {"a": 3, "b": 0})  # a all accepted, b none
    counters.observe({"a": 2}, {"a": 1})  # trimmed to 2 drafts, one accepted
    counters.observe({"c": 3}, {"c": -1})  # output discarded: not a draft vLLM counts
    counters.observe({}, {"d": 0})  # a prefill: no drafts
    summary = counters.summary()
    assert (summary["num_drafts"], summary["num_draft_tokens"],
            summary["num_accepted_tokens"]) == (3, 8, 4)
    assert summary["acceptance_rate"] == pytest.approx(4 / 8)
    assert summary["mean_acceptance_length"] == pytest.approx(1 + 4 / 3)  # bonus token counted
    # per position: accepted at position i over all drafts (vLLM's "Per-position acceptance rate")
    assert summary["acceptance_rate_per_position"] == pytest.approx([2 / 3, 1 / 3, 1 / 3])


def test_no_drafts_reports_no_rates() -> None:
    summary = SpecCounters().summary()
    assert summary["acceptance_rate"] is None and summary["mean_acceptance_length"] is None


def test_each_request_keeps_its_own_drafts_and_accepted_until_taken() -> None:
    counters = SpecCounters()
    counters.observe({"a": 3, "b": 3}, {"a": 2, "b": 0})
    counters.observe({"a": 3, "b": 1}, {"a": -1, "b": 1})  # a's output discarded
    assert counters.take("a") == (3, 2) and counters.take("b") == (4, 1)
    assert counters.take("a") == (0, 0) and counters.per_request == {}  # taken once
    assert counters.take("never-drafted") == (0, 0)
