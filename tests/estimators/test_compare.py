"""estimators.compare: one call from a long table to interval, the rule's p-value and a verdict."""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

import numpy as np
import pytest
from scipy import stats

import estimators as E

if TYPE_CHECKING:
    import pandas as pd


def _table(n: int = 8, seed: int = 1, ratio_range: tuple[float, float] = (0.9, 1.05)) -> pd.DataFrame:
    import pandas as pd  # lazy: a second of import, for the tests that build tables

    rng = np.random.default_rng(seed)
    rows = []
    for s in range(n):
        base = rng.uniform(900, 1100)
        rows.append({"seed": s, "policy": "restart", "energy_j": base})
        rows.append({"seed": s, "policy": "continue", "energy_j": base * rng.uniform(*ratio_range)})
    return pd.DataFrame(rows)


def _log_ratios(df: pd.DataFrame) -> np.ndarray:
    wide = df.pivot(index="seed", columns="policy", values="energy_j")
    return np.log(wide["continue"].to_numpy() / wide["restart"].to_numpy())


def test_ratio_rule_matches_scipy_one_sided_t_test_on_log_ratios():
    df = _table()
    res = E.compare(
        df,
        metric="energy_j",
        arm="policy",
        block="seed",
        contrast="continue / restart",
        rule="upper < 1.05",
        method="t",
        confidence=0.90,
    )
    ref = stats.ttest_1samp(_log_ratios(df), np.log(1.05), alternative="less")
    assert res.pvalue == pytest.approx(ref.pvalue, rel=1e-10)
    assert res.statistic == pytest.approx(ref.statistic, rel=1e-10)
    ci = stats.ttest_1samp(_log_ratios(df), 0.0).confidence_interval(0.90)
    assert res.confidence_interval() == pytest.approx((np.exp(ci.low), np.exp(ci.high)), rel=1e-10)
    assert res.verdict == ("pass" if ref.pvalue <= 0.05 else "fail") == "pass"
    assert res.n == 8 and res.scale == "ratio" and res.alpha == pytest.approx(0.05)


def test_within_rule_is_tost_and_matches_statsmodels():
    from statsmodels.stats.weightstats import ttost_paired  # lazy: statsmodels takes a second to import

    df = _table(n=10, seed=3)
    wide = df.pivot(index="seed", columns="policy", values="energy_j")
    res = E.compare(
        df,
        metric="energy_j",
        arm="policy",
        block="seed",
        contrast="continue - restart",
        rule="within [-60, 60]",
        method="t",
        confidence=0.90,
    )
    p, lower_side, upper_side = ttost_paired(wide["continue"].to_numpy(), wide["restart"].to_numpy(), -60, 60)
    assert res.pvalue == pytest.approx(p, rel=1e-10)
    binding = lower_side if lower_side[1] >= upper_side[1] else upper_side
    assert res.statistic == pytest.approx(binding[0], rel=1e-10)


def test_the_repr_shows_the_rules_p_value_not_a_test_of_zero():
    df = _table()
    res = E.compare(
        df, metric="energy_j", arm="policy", block="seed", contrast="continue / restart", rule="upper < 1.05"
    )
    assert f"pvalue={res.pvalue:.4g}" in repr(res) and "verdict='pass'" in repr(res)
    two_sided = E.t_interval(_log_ratios(df), 0.90, scale="ratio").pvalue
    assert two_sided is not None and abs(two_sided - res.pvalue) > 0.1  # a different test, named differently
    assert "pvalue" in repr(E.t_interval(_log_ratios(df), 0.90, scale="ratio"))


def test_rule_p_value_takes_a_result():
    d = _log_ratios(_table())
    for method in ("t", "signflip", "wilcoxon", "bootstrap"):
        result = E.interval(method, d, 0.90, "ratio", resamples=999, seed=4)
        by_result = E.rule_pvalue("upper < 1.05", result)
        by_array = E.rule_pvalue(E.Rule.parse("upper < 1.05"), d, 0.90, method, "ratio", 999, 4)
        assert by_result == by_array


def test_ratio_contrasts_take_raw_positive_values_and_refuse_transformed_ones():
    df = _table()
    logged = df.assign(energy_j=np.log(df["energy_j"]) - 7.0)  # some values now negative
    with pytest.raises(ValueError, match="already log-transformed"):
        E.compare(logged, metric="energy_j", arm="policy", block="seed", contrast="continue / restart")


def test_ratios_passed_as_log_ratios_are_caught():
    ratios = np.exp(_log_ratios(_table()))
    with pytest.warns(E.RatioInputWarning, match="look like ratios"):
        E.t_interval(ratios, 0.90, scale="ratio")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        E.t_interval(np.log(ratios), 0.90, scale="ratio")  # real log ratios: no warning


def test_plain_mapping_and_several_block_columns():
    data = {
        "site": [0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2],
        "seed": [1, 1, 2, 2] * 3,
        "arm": ["a", "b"] * 6,
        "nll": [1.00, 1.02, 1.10, 1.11, 0.95, 0.99, 1.05, 1.06, 0.99, 1.03, 1.20, 1.22],
    }
    res = E.compare(
        data, metric="nll", arm="arm", block=["site", "seed"], contrast="a - b", rule="upper < 0.05", method="wilcoxon"
    )
    assert res.n == 6 and res.blocks[0] == (0, 1)
    assert res.contrasts == pytest.approx([-0.02, -0.01, -0.04, -0.01, -0.04, -0.02])
    assert res.statistic is None and res.pvalue is not None


@pytest.mark.parametrize(
    "change, words",
    [
        (lambda df: df.iloc[[*range(len(df)), 0]], "two rows for arm restart"),
        (lambda df: df.iloc[1:], "lacks restart"),
        (lambda df: df.assign(energy_j=df["energy_j"].astype(object).where(df.index != 3, "x")), "not a number"),
        (lambda df: df.assign(energy_j=df["energy_j"].where(df.index != 3, np.nan)), "not finite"),
    ],
)
def test_bad_tables_get_one_clear_message(change, words):
    with pytest.raises(ValueError, match=words):
        E.compare(change(_table()), metric="energy_j", arm="policy", block="seed", contrast="continue / restart")


def test_unknown_column_names_the_columns():
    with pytest.raises(KeyError, match="columns are"):
        E.compare(_table(), metric="joules", arm="policy", block="seed", contrast="continue - restart")


def test_constant_contrasts_are_vacuous_only_when_deterministic_and_too_few_blocks_refused():
    data = {"b": [1, 1, 2, 2, 3, 3], "arm": ["x", "y"] * 3, "v": [2.0, 1.0, 3.0, 2.0, 4.0, 3.0]}
    res = E.compare(data, metric="v", arm="arm", block="b", contrast="x - y", rule="lower > 0.5", deterministic=True)
    assert res.verdict == "vacuous" and res.pvalue is None
    res = E.compare(data, metric="v", arm="arm", block="b", contrast="x - y", rule="lower > 0.5")
    assert res.verdict == "unresolvable" and res.pvalue is None and "deterministic=True" in (res.reason or "")
    res = E.compare(
        _table(n=8),
        metric="energy_j",
        arm="policy",
        block="seed",
        contrast="continue / restart",
        rule="upper < 1.05",
        method="bootstrap",
    )
    assert res.verdict == "refused" and "needs at least 20" in (res.reason or "")


def test_no_rule_gives_an_interval_and_no_verdict():
    res = E.compare(_table(), metric="energy_j", arm="policy", block="seed", contrast="continue / restart")
    assert res.verdict is None and res.pvalue is None and res.rule is None
    low, high = res.confidence_interval()
    assert low < res.estimate < high
