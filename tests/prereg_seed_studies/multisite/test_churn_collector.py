"""The sim.churn collector and the churn table."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from collect.collectors.base import ParamError, RunContext, check_params
from prereg_seed_studies.multisite import churn_law as law
from prereg_seed_studies.multisite.churn import ChurnCollector, churn_table, render_churn_table, resolve_interval

BASE = {"mtbf_s": 3600, "checkpoint_s": 120, "restart_s": 300}


def _run(seed: int = 1, **params: object) -> dict[str, float]:
    ctx = RunContext("run1", {**BASE, **params}, seed, {}, "arm", 0, Path("."))
    return ChurnCollector().run(ctx).metrics


def test_params_defaults_and_refusals() -> None:
    p = check_params(ChurnCollector, BASE)
    assert p == {**{k: float(v) for k, v in BASE.items()}, "workers": 1, "work_s": 1e6, "interval": "exact"}
    with pytest.raises(ParamError, match="does not read"):
        check_params(ChurnCollector, {**BASE, "policy": "wait"})
    with pytest.raises(ParamError, match="needs parameter mtbf_s"):
        check_params(ChurnCollector, {"checkpoint_s": 1, "restart_s": 0})
    for bad in (
        {"mtbf_s": 0},
        {"checkpoint_s": -1},
        {"restart_s": -1},
        {"workers": 0},
        {"workers": 2.5},
        {"work_s": 0},
        {"mtbf_s": math.inf},
    ):
        with pytest.raises(ParamError):
            check_params(ChurnCollector, {**BASE, **bad})


@pytest.mark.parametrize(
    "bad", ["fast", "0x", "-2x", "x", "2xx", "2 x 3", "1e400x", "", "600", 0, -5, math.nan, math.inf, True, [2]]
)
def test_bad_intervals_are_refused(bad: object) -> None:
    with pytest.raises(ParamError):
        check_params(ChurnCollector, {**BASE, "interval": bad})


@pytest.mark.parametrize("good", ["exact", "young", "daly", "daly1", "2x", "0.5x", " 1.5X ", "1e-1x", 600, 600.5])
def test_good_intervals_resolve(good: object) -> None:
    p = check_params(ChurnCollector, {**BASE, "interval": good})
    assert resolve_interval(p["interval"], 1 / 3600, 120.0, 300.0) > 0


def test_interval_rules_resolve_to_the_law() -> None:
    rate, C, R = 8 / 3600, 120.0, 300.0
    w = law.optimal_interval(rate, C)
    assert resolve_interval("exact", rate, C, R) == w
    assert resolve_interval("2x", rate, C, R) == pytest.approx(2 * w)
    assert resolve_interval("0.5x", rate, C, R) == pytest.approx(w / 2)
    assert resolve_interval("young", rate, C, R) == law.young_interval(rate, C)
    assert resolve_interval("daly", rate, C, R) == law.daly_interval(rate, C)
    assert resolve_interval("daly1", rate, C, R) == law.daly_first_order_interval(rate, C, R)
    assert resolve_interval(900.0, rate, C, R) == 900.0


def test_run_is_deterministic_per_seed_and_records_the_metrics() -> None:
    a, b, c = _run(5, interval="young"), _run(5, interval="young"), _run(6, interval="young")
    assert a == b and a != c
    assert set(a) == set(ChurnCollector.METRICS)
    assert 0 < a["efficiency"] < 1
    assert a["wasted_time_s"] == pytest.approx(1e6 / a["efficiency"] - 1e6)
    assert a["checkpoints"] == math.ceil(1e6 / law.young_interval(1 / 3600, 120.0))
    assert a["failures"] > 0 and float(a["failures"]).is_integer()


def test_work_is_equal_across_arms_and_the_last_segment_is_partial() -> None:
    # 1000 s of work at 300 s: three full segments and one of 100 s, each with a checkpoint
    m = _run(3, interval=300, work_s=1000.0, mtbf_s=1e12)
    assert m["checkpoints"] == 4 and m["failures"] == 0
    assert m["wasted_time_s"] == pytest.approx(4 * 120.0, rel=1e-9)
    exact = _run(3, interval=250, work_s=1000.0, mtbf_s=1e12)  # exact multiple: no empty last segment
    assert exact["checkpoints"] == 4


def test_arms_with_one_seed_meet_the_same_failures() -> None:
    rate, C, R = 1 / 3600, 120.0, 300.0
    short = law.simulate_job(law.GapStream(11), rate, law.optimal_interval(rate, C) + C, 500, R)
    long = law.simulate_job(law.GapStream(11), rate, 2 * law.optimal_interval(rate, C) + C, 500, R)
    n = min(short.failures, long.failures)
    assert n > 50
    assert np.array_equal(short.failure_exposed_s[:n], long.failure_exposed_s[:n])
    # and CRN pays: paired differences vary far less than unpaired ones
    seeds = range(40)
    ex = np.array([_run(s, interval="exact", work_s=2e5)["efficiency"] for s in seeds])
    dbl = np.array([_run(s, interval="2x", work_s=2e5)["efficiency"] for s in seeds])
    dbl_other = np.array([_run(s + 1000, interval="2x", work_s=2e5)["efficiency"] for s in seeds])
    assert np.var(ex - dbl) < 0.5 * np.var(ex - dbl_other)
    assert np.mean(ex - dbl) > 0  # exact beats twice-exact


@pytest.mark.parametrize("workers", [1, 8])
def test_collector_runs_average_to_the_law(workers: int) -> None:
    rate = workers / 3600
    effs = np.array([_run(s, workers=workers)["efficiency"] for s in range(30)])
    law_eff = law.optimal_efficiency(rate, 120.0, 300.0)
    se = effs.std(ddof=1) / math.sqrt(effs.size)
    assert abs(effs.mean() - law_eff) < 4 * se + 1e-3 * law_eff


def test_more_workers_lower_efficiency() -> None:
    effs = [_run(2, workers=n)["efficiency"] for n in (1, 4, 16, 64)]
    assert effs == sorted(effs, reverse=True)


def test_churn_table_shape_and_values() -> None:
    table = churn_table(3600, 120, 300, workers=4, segments=5000, seed=2)
    assert json.loads(json.dumps(table)) == table
    assert list(table["intervals"]) == ["exact", "young", "daly", "daly1", "0.5x", "2x"]
    rate = 4 / 3600
    for row in table["intervals"].values():
        assert set(row) == {"interval_s", "efficiency", "mc", "loss_vs_exact"}
        assert set(row["mc"]) == {"estimate", "lower", "upper", "n"}
        assert row["efficiency"] == pytest.approx(law.efficiency(row["interval_s"], rate, 120.0, 300.0))
        assert row["mc"]["lower"] <= row["mc"]["estimate"] <= row["mc"]["upper"]
        assert row["loss_vs_exact"] >= -1e-12
    rows = table["intervals"]
    assert rows["exact"]["loss_vs_exact"] == pytest.approx(0.0, abs=1e-12)
    assert rows["2x"]["interval_s"] == pytest.approx(2 * rows["exact"]["interval_s"])
    assert rows["daly"]["loss_vs_exact"] < rows["young"]["loss_vs_exact"]
    # the rows share one failure stream (CRN), so their errors move together: judge over seeds
    covered = total = 0
    for seed in range(10):
        for r in churn_table(3600, 120, 300, workers=4, segments=5000, seed=seed)["intervals"].values():
            half = (r["mc"]["upper"] - r["mc"]["lower"]) / 2
            assert abs(r["mc"]["estimate"] - r["efficiency"]) <= 2 * half
            covered += r["mc"]["lower"] <= r["efficiency"] <= r["mc"]["upper"]
            total += 1
    assert covered / total >= 0.8
    assert churn_table(3600, 120, 300, workers=4, segments=5000, seed=2) == table
    with pytest.raises(ValueError):
        churn_table(0, 120, 300)
    with pytest.raises(ValueError):
        churn_table(3600, 120, 300, workers=0)


def test_render_fits_80_columns() -> None:
    for kwargs in ({}, {"workers": 64}, {"segments": 200}):
        text = render_churn_table(churn_table(3600, 120, 300, **kwargs))
        assert max(len(line) for line in text.splitlines()) <= 80
        for name in ("exact", "young", "daly", "daly1", "0.5x", "2x"):
            assert f"\n{name} " in text
    # Daly's first order with R >> job MTBF: ~1e11 failures per segment, not simulated
    table = churn_table(123456.789, 0.5, 1e5, workers=10_000, segments=100)
    assert table["intervals"]["daly1"]["mc"] == {"estimate": None, "lower": None, "upper": None, "n": 0}
    assert table["intervals"]["exact"]["mc"]["n"] == 100
    text = render_churn_table(table)
    assert max(len(line) for line in text.splitlines()) <= 80 and "too many failures" in text
