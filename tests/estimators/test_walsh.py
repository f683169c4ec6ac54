"""The implicit Walsh-average selection and counting (estimators.walsh) against the
materialising path: the same floats, bit for bit, with ties, zeros and extreme magnitudes."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import estimators as E
from estimators import walsh as W

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import _baseline_estimators as old  # noqa: E402

# integers on small grids make many ties and zeros; floats cover rounding in (s_i + s_j) * 0.5
tied = st.lists(st.integers(-5, 5), min_size=1, max_size=80).map(lambda v: np.array(v, dtype=np.float64) / 2.0)
floats = st.lists(
    st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False, allow_subnormal=True), min_size=1, max_size=80
).map(lambda v: np.array(v, dtype=np.float64))
vectors = st.one_of(tied, floats)


def _same(a: float, b: float) -> bool:
    return a == b or (np.isinf(a) and np.isinf(b) and a == b)


@pytest.mark.slow  # many generated cases or a reference library: the slow tier
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(d=vectors, data=st.data())
def test_selection_and_counts_equal_the_materialised_ones(d: np.ndarray, data: st.DataObject) -> None:
    m = d.size * (d.size + 1) // 2
    k = data.draw(st.integers(0, (m + 1) // 2))
    implicit = W.WalshAverages(d, direct=False)
    assert implicit.order_stats(k) == old.walsh_order_stats(d, k)
    mus = [0.0, float(d[0]), float(np.median(d)), data.draw(st.floats(-2e6, 2e6, allow_nan=False))]
    w = old.walsh(d)
    mus.append(float(w[data.draw(st.integers(0, w.size - 1))]))  # exactly on an average: ties
    for mu in mus:
        assert implicit.counts(mu) == old.walsh_counts(d, mu)


@settings(max_examples=100, deadline=None)
@given(d=vectors)
def test_every_rank_is_selected_exactly(d: np.ndarray) -> None:
    s = np.sort(d)
    ref = np.sort(old.walsh(d))
    for r in {1, ref.size, (ref.size + 1) // 2, max(1, ref.size // 3)}:
        assert W.select(s, r) == ref[r - 1]


@pytest.mark.slow  # many generated cases or a reference library: the slow tier
@pytest.mark.parametrize("n", [501, 700, 1500, 3000])
@pytest.mark.parametrize("kind", ["normal", "ties", "zeros", "huge"])
def test_large_n_iterative_path_equals_the_materialised_one(n: int, kind: str) -> None:
    """Beyond the materialise cap the sampling/pivot loop runs; still the same order statistics."""
    rng = np.random.default_rng(n)
    d = {
        "normal": rng.standard_t(3, n),
        "ties": rng.integers(-3, 4, n) / 4.0,
        "zeros": np.where(rng.random(n) < 0.7, 0.0, rng.normal(size=n)),
        "huge": rng.normal(size=n) * 1e300,
    }[kind]
    m = n * (n + 1) // 2
    implicit = W.WalshAverages(d)
    assert not implicit.direct
    for k in (1, 17, m // 40, (m + 1) // 2):
        assert implicit.order_stats(k) == old.walsh_order_stats(d, k)
    for mu in (0.0, float(np.median(d)), float(d[1])):
        assert implicit.counts(mu) == old.walsh_counts(d, mu)


def test_wilcoxon_interval_unchanged_across_the_switch() -> None:
    """wilcoxon_interval beyond DIRECT_MAX_N equals the materialised construction."""
    d = np.random.default_rng(7).normal(0.1, 1.0, 900)
    res = E.wilcoxon_interval(d, 0.9)
    direct = W.WalshAverages(d, direct=True)
    from estimators.wilcoxon import _Reference

    k = _Reference(d.size).k(0.05)
    assert (res.lower, res.upper, res.estimate) == direct.order_stats(k)


def test_memory_is_linear_in_n() -> None:
    """n = 20000 (2e8 Walsh averages, 1.6 GB materialised) selects with small arrays only."""
    import tracemalloc

    d = np.random.default_rng(3).normal(size=20_000)
    tracemalloc.start()
    W.WalshAverages(d).order_stats(1000)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 50 * 1024 * 1024
