"""A re-simulated knob's outcome on hand-made before/after figures."""

from __future__ import annotations

from servescope.scenarios.knob_outcome import NEGLIGIBLE, REPORTED, outcome

BEFORE = {"p99_ttft_ms": 7324.0, "p99_itl_ms": 174.0, "p99_tpot_ms": 169.0,
          "p99_e2el_ms": 10948.0, "output_throughput": 71.5}


def test_every_reported_figure_has_its_before_and_after() -> None:
    out = outcome(BEFORE, BEFORE, [["p99_ttft_ms", "down"]])
    assert set(out["metrics"]) == set(REPORTED)
    assert all(m["change"] == 0.0 and m["effect"] == "negligible"
               for m in out["metrics"].values())
    assert out["outcome"] == "negligible"


def test_an_improvement_that_worsens_another_p99_is_a_trade_off() -> None:
    # budget 8192 -> 2048: ITL 174 -> 47 ms (-73%) but TTFT 7324 -> 7851 ms (+7%)
    after = {**BEFORE, "p99_itl_ms": 47.0, "p99_tpot_ms": 45.0, "p99_ttft_ms": 7851.0,
             "p99_e2el_ms": 9140.0}
    out = outcome(BEFORE, after, [["p99_itl_ms", "down"]])
    assert out["outcome"] == "trade_off"
    assert out["improved"] == ["p99_itl_ms"] and out["worsened"] == ["p99_ttft_ms"]
    assert out["metrics"]["p99_ttft_ms"]["change"] == round((7851 - 7324) / 7324, 4)
    assert "but p99_ttft_ms 7324 -> 7851 (+7%)" in out["text"]


def test_a_change_under_the_threshold_is_negligible_not_confirmed() -> None:
    after = {**BEFORE, "p99_ttft_ms": 7324.0 * (1 - NEGLIGIBLE / 2)}
    assert outcome(BEFORE, after, [["p99_ttft_ms", "down"]])["outcome"] == "negligible"


def test_a_small_gain_bought_with_a_large_loss_is_not_confirmed() -> None:
    # budget 8192 -> 16384: TTFT 7324 -> 7150 ms (-2%), ITL 174 -> 336 ms (+93%)
    after = {**BEFORE, "p99_ttft_ms": 7150.0, "p99_itl_ms": 336.0}
    out = outcome(BEFORE, after, [["p99_ttft_ms", "down"]])
    assert out["outcome"] == "not_confirmed" and out["worsened"] == ["p99_itl_ms"]
    assert out["text"].startswith("not confirmed: p99_ttft_ms 7324 -> 7150 (-2%); worse: p99_itl")


def test_confirmed_only_when_nothing_else_worsens_and_throughput_counts_up() -> None:
    after = {**BEFORE, "p99_ttft_ms": 1534.0, "output_throughput": 71.0}
    assert outcome(BEFORE, after, [["p99_ttft_ms", "down"]])["outcome"] == "confirmed"
    slower = {**after, "output_throughput": 60.0}  # -16% throughput is a cost
    assert outcome(BEFORE, slower, [["p99_ttft_ms", "down"]])["outcome"] == "trade_off"
    more = {**BEFORE, "output_throughput": 90.0}
    assert outcome(BEFORE, more, [["output_throughput", "up"]])["outcome"] == "confirmed"


def test_a_target_moved_the_wrong_way_or_from_zero() -> None:
    out = outcome({**BEFORE, "num_preemptions": 0}, {**BEFORE, "num_preemptions": 5},
                  [["num_preemptions", "down"]])
    assert out["outcome"] == "not_confirmed"
    assert out["metrics"]["num_preemptions"]["change"] is None  # no finite ratio from 0
    assert "from 0" in out["text"]
    missing = outcome({}, BEFORE, [["p99_ttft_ms", "down"]])
    assert missing["outcome"] == "not_confirmed"
    assert missing["metrics"]["p99_ttft_ms"]["effect"] == "unknown"
