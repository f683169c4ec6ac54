"""prereg-studies churn --scan-workers / --pool: the closed-form scan and the admission of heterogeneous pools."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest
from scipy.optimize import minimize_scalar

from prereg_seed_studies.cli import main
from prereg_seed_studies.multisite import churn_law as law
from prereg_seed_studies.multisite.churn_scaling import (
    Pool,
    admission,
    parse_pool,
    render_admission,
    render_worker_scan,
    worker_scan,
)


def _numeric_best_efficiency(rate: float, C: float, R: float) -> float:
    """Efficiency at the optimum found by bounded minimisation (no Lambert W)."""
    res = minimize_scalar(
        lambda w: -law.efficiency(w, rate, C, R),
        bounds=(1e-9 / rate, 1 / rate),
        method="bounded",
        options={"xatol": 1e-12 / rate},
    )
    return float(-res.fun)


# --- pools -------------------------------------------------------------------------------------------


def test_parse_pool() -> None:
    assert parse_pool("600:1e-6") == Pool(600, 1e-6) and parse_pool(" 3 : 0.5 ") == Pool(3, 0.5)
    for bad in (
        "600",
        "600:1e-6:2",
        "0:1e-6",
        "-1:1e-6",
        "1.5:1e-6",
        "x:1e-6",
        "6:x",
        "6:nan",
        "6:inf",
        "6:0",
        "6:-1e-6",
        "6:1e7",
        ":1e-6",
    ):
        with pytest.raises(ValueError):
            parse_pool(bad)


@pytest.mark.parametrize(
    ("pools", "C", "R"),
    [
        ([Pool(3, 1e-4), Pool(2, 2e-3), Pool(2, 5e-4)], 60.0, 120.0),
        ([Pool(4, 1e-5), Pool(3, 4e-4)], 300.0, 0.0),
        ([Pool(2, 1e-3), Pool(5, 1e-6)], 10.0, 30.0),  # flaky pool listed first
        ([Pool(6, 2e-4)], 600.0, 60.0),  # one pool: fewer than all may be best
    ],
)
def test_admission_is_the_best_of_every_subset(pools: list[Pool], C: float, R: float) -> None:
    """Against brute force over every subset (how many of each pool), each job's optimum found numerically."""
    t = admission(pools, C, R)
    best_thr, best_counts = -1.0, None
    for counts in itertools.product(*(range(p.count + 1) for p in pools)):
        n = sum(counts)
        if n:
            thr = n * _numeric_best_efficiency(sum(c * p.rate for c, p in zip(counts, pools, strict=True)), C, R)
            if thr > best_thr * (1 + 1e-9):
                best_thr, best_counts = thr, counts
    assert t["best"]["throughput"] == pytest.approx(best_thr, rel=1e-7)
    assert best_counts is not None
    assert {int(i): n for i, n in t["best"]["admitted"].items()} == {i + 1: c for i, c in enumerate(best_counts) if c}
    assert t["evidence"] == "modeled" and t["order"] == sorted(
        range(1, len(pools) + 1), key=lambda i: pools[i - 1].rate
    )
    everyone = t["rows"][-1]
    assert everyone["workers"] == sum(p.count for p in pools)
    assert t["all_vs_best"] == pytest.approx(everyone["throughput"] / t["best"]["throughput"] - 1)


@pytest.mark.parametrize(
    ("n1", "r1", "n2", "r2", "C", "R"),
    [
        (8, 1 / 86_400, 40, 1 / 3_600, 60.0, 120.0),
        (600, 1e-6, 1000, 1.5e-5, 12.0, 30.0),
        (600, 1e-6, 200, 1e-4, 12.0, 30.0),
        (8, 1 / 86_400, 40, 1.01 * law.break_even_rate(1 / 86_400, 8, 60.0, 120.0), 60.0, 120.0),  # not unimodal
    ],
)
def test_two_pools_agree_with_the_admission_threshold(
    n1: int, r1: float, n2: int, r2: float, C: float, R: float
) -> None:
    t = admission([Pool(n1, r1), Pool(n2, r2)], C, R)
    k = law.admission_threshold(r1, n1, r2, C, R, max_flaky=n2)
    assert t["best"]["admitted"].get("1") == n1  # here the reliable pool is below its own peak
    assert t["best"]["admitted"].get("2", 0) == k
    assert t["rows"][0]["throughput"] == pytest.approx(law.pool_throughput([r1] * n1, C, R), rel=1e-12)
    assert t["rows"][1]["throughput"] == pytest.approx(law.pool_throughput([r1] * n1 + [r2] * n2, C, R), rel=1e-12)


def test_admission_refuses_what_it_cannot_compute() -> None:
    with pytest.raises(ValueError, match="at most"):
        admission([Pool(600_000, 1e-6), Pool(600_000, 1e-6)], 12.0, 30.0)
    with pytest.raises(ValueError, match="never complete"):
        admission([Pool(5, 1e5)], 1e3, 1.0)
    with pytest.raises(ValueError):
        admission([], 12.0, 30.0)
    with pytest.raises(ValueError):
        admission([Pool(5, 1e-6)], 0.0, 30.0)


# --- scan --------------------------------------------------------------------------------------------


@pytest.mark.slow  # many generated cases or a whole simulation: the slow tier
def test_worker_scan_against_the_closed_forms() -> None:
    M, C, R = 86_400.0, 12.0, 30.0
    t = worker_scan(M, C, R, [1, 10, 700, 5000])
    for row in t["rows"]:
        rate = row["workers"] / M
        w = law.optimal_interval(rate, C)
        assert row["lambda_c"] == pytest.approx(rate * C) and row["interval_s"] == w
        assert row["young_overshoot"] == pytest.approx(math.sqrt(2 * C / rate) / w - 1, rel=1e-12)
        assert row["efficiency"] == pytest.approx(_numeric_best_efficiency(rate, C, R), rel=1e-9)
        for key, k in (("loss_half", 0.5), ("loss_double", 2.0)):
            assert row[key] == pytest.approx(1 - law.efficiency(k * w, rate, C, R) / row["efficiency"], rel=1e-9)
        assert row["throughput"] == pytest.approx(row["workers"] * row["efficiency"])
    n = np.arange(1, 20_001)
    eff = np.array([law.optimal_efficiency(k / M, C, R) for k in n])
    assert t["half_efficiency_workers"] == int(n[np.argmax(eff <= 0.5)])
    assert t["peak_throughput_workers"] == int(n[np.argmax(n * eff)])
    text = render_worker_scan(t)
    assert max(len(line) for line in text.splitlines()) <= 80


def test_scan_optimum_and_losses_do_not_depend_on_the_restart_cost() -> None:
    a, b = (worker_scan(3600.0, 60.0, R, [1, 5, 20]) for R in (0.0, 5000.0))
    for x, y in zip(a["rows"], b["rows"], strict=True):
        assert (x["interval_s"], x["loss_half"], x["loss_double"]) == pytest.approx(
            (y["interval_s"], y["loss_half"], y["loss_double"]), rel=1e-12
        )
        assert x["efficiency"] > y["efficiency"]


def test_admission_renders_in_80_columns() -> None:
    t = admission([Pool(600, 1e-6), Pool(1000, 1.5e-5), Pool(3, 1e-3), Pool(7, 2e-3)], 12.0, 30.0)
    assert max(len(line) for line in render_admission(t).splitlines()) <= 80


# --- the command line --------------------------------------------------------------------------------


def test_cli_pools_text_and_json(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["churn", "--pool", "600:1e-6", "--pool", "200:1e-4", "--checkpoint-s", "12", "--restart-s", "30"]
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "best: pool 1 " in text and "admission threshold" in text and "modeled" in text
    assert main([*args, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["best"]["admitted"] == {"1": 600} and data["all_vs_first"] < -0.5


def test_cli_scan_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(
            [
                "churn",
                "--mtbf-s",
                "86400",
                "--checkpoint-s",
                "12",
                "--restart-s",
                "30",
                "--scan-workers",
                "1,700",
                "--json",
            ]
        )
        == 0
    )
    data = json.loads(capsys.readouterr().out)
    assert [r["workers"] for r in data["rows"]] == [1, 700] and data["half_efficiency_workers"] == 700


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--pool", "600", "--checkpoint-s", "1", "--restart-s", "1"], "must be COUNT:RATE"),
        (["--pool", "6:abc", "--checkpoint-s", "1", "--restart-s", "1"], "is not a number"),
        (["--pool", "6:1e-6", "--mtbf-s", "9", "--checkpoint-s", "1", "--restart-s", "1"], "does not take --mtbf-s"),
        (["--pool", "6:1e-6", "--workers", "9", "--checkpoint-s", "1", "--restart-s", "1"], "does not take --workers"),
        (["--pool", "6:1e-6", "--checkpoint-s", "-1", "--restart-s", "1"], "--checkpoint-s must be > 0"),
        (["--checkpoint-s", "1", "--restart-s", "1"], "give --mtbf-s"),
        (["--mtbf-s", "9", "--scan-workers", "1,x", "--checkpoint-s", "1", "--restart-s", "1"], "whole numbers"),
        (["--mtbf-s", "9", "--scan-workers", "1,0", "--checkpoint-s", "1", "--restart-s", "1"], "from 1 to"),
        (
            ["--mtbf-s", "9", "--scan-workers", "1", "--segments", "500", "--checkpoint-s", "1", "--restart-s", "1"],
            "closed forms only",
        ),
        (["--mtbf-s", "100", "--scan-workers", "10000", "--checkpoint-s", "1", "--restart-s", "1"], "never complete"),
    ],
)
def test_cli_bad_input_exits_2_with_one_message(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["churn", *args]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
