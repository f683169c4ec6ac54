"""The bootstrap's hot loop (``estimators._draws.ChunkSums``) returns the pre-issue-14 sums bit for
bit: chunk by chunk against the reference draws (including the rare top-up calls), in both of its
paths at any n, and through whole intervals, p-values and verdicts against the baseline means."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import estimators as E
import estimators._draws as draws
from estimators import _reference_cache as cache
from estimators import bootstrap as boot
from estimators._draws import ChunkSums

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import _baseline_estimators as old  # noqa: E402


def _bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).view(np.int64)


def _reference_sums(d: np.ndarray, bg: np.random.PCG64, rows: int) -> np.ndarray:
    """One chunk as the pre-issue-14 loop drew it: the index array, gathered, row sums."""
    return d[old._indices(bg, d.size, rows * d.size).reshape(rows, d.size)].sum(axis=1)


@pytest.mark.parametrize(
    ("n", "rows", "calls"),
    [
        (480, 1, 1500),  # dense path, about 1.4% of these small calls top up
        (960, 1, 1500),  # dense, about 0.9% top up
        (1000, 65, 12),  # the benchmark's chunk at n = 1000
        (1000, 49, 3),  # its last chunk in a block of 1024
        (2, 1024, 4),  # one-bit fields, 64 per word
        (3, 300, 20),  # acceptance 3/4: Sampler path
        (513, 1, 2000),  # acceptance 1/2: Sampler path, frequent top-ups
        (10_000, 6, 8),  # the benchmark's chunk at n = 10000 (Sampler path)
        (64_000, 1, 3),  # 16-bit fields, one resample per chunk
    ],
)
def test_chunk_sums_replay_the_reference_call_by_call(
    n: int, rows: int, calls: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    top_ups = 0
    real = draws.uniform_indices

    def counting(*args: object, **kwargs: object) -> np.ndarray:
        nonlocal top_ups
        top_ups += 1
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(draws, "uniform_indices", counting)  # called by ChunkSums only to top up
    d = np.random.default_rng(n).lognormal(0.0, 1.0, n)
    sums = ChunkSums(d, rows)
    bg_new, bg_old = np.random.PCG64(n + 1), np.random.PCG64(n + 1)
    out = np.empty(rows)
    for _ in range(calls):
        sums(bg_new, rows, out)
        assert np.array_equal(_bits(out), _bits(_reference_sums(d, bg_old, rows)))
        assert bg_new.state == bg_old.state  # the same words were drawn, no more
    if sums.dense and n in (480, 960):
        assert top_ups > 0  # the top-up branch ran (and matched)


@pytest.mark.parametrize("dense", [True, False])
@pytest.mark.parametrize("n", [5, 17, 200, 600, 1000, 1025])
def test_both_paths_give_the_reference_sums_at_any_acceptance(
    n: int, dense: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The path is a speed choice (:data:`estimators._draws.DENSE_ACCEPTANCE`), never a result."""
    monkeypatch.setattr(draws, "DENSE_ACCEPTANCE", 0.0 if dense else 2.0)
    d = np.random.default_rng(n).normal(size=n)
    rows = max(1, 65_536 // n) // 3 + 1
    sums = ChunkSums(d, rows)
    assert sums.dense == dense
    bg_new, bg_old = np.random.PCG64(3), np.random.PCG64(3)
    out = np.empty(rows)
    for _ in range(30 if n < 100 else 6):
        sums(bg_new, rows, out)
        assert np.array_equal(_bits(out), _bits(_reference_sums(d, bg_old, rows)))
    assert bg_new.state == bg_old.state


@pytest.mark.parametrize("n", [40, 1000, 3000])
def test_buffers_grow_for_larger_chunks(n: int) -> None:
    d = np.random.default_rng(n).normal(size=n)
    sums = ChunkSums(d, 1)
    bg_new, bg_old = np.random.PCG64(8), np.random.PCG64(8)
    for rows in (1, 7, 3, 20):
        out = np.empty(rows)
        sums(bg_new, rows, out)
        assert np.array_equal(_bits(out), _bits(_reference_sums(d, bg_old, rows)))


@pytest.mark.parametrize(
    "n", [2, 3, 4, 31, 33, 240, 480, 819, 820, 921, 960, 1000, 1023, 1024, 1025, 3900, 8000, 32_769]
)
def test_bootstrap_means_are_the_old_ones_across_acceptance_regimes(n: int) -> None:
    d = np.random.default_rng(n).lognormal(0.0, 1.0, n)
    resamples = 2500 if n <= 1025 else 150 if n < 32_000 else 9
    ref = _bits(old.bootstrap_means(d, resamples, 4))
    for workers in (1, 3):
        assert np.array_equal(_bits(boot.bootstrap_means(d, resamples, 4, workers=workers)), ref)


@settings(max_examples=25, deadline=None)
@given(
    n=st.integers(2, 2100), resamples=st.integers(100, 2200), seed=st.integers(0, 2**32 - 1), scale=st.floats(1e-3, 1e3)
)
def test_bootstrap_means_are_the_old_ones_property(n: int, resamples: int, seed: int, scale: float) -> None:
    d = np.random.default_rng(seed).standard_t(3, n) * scale
    assert np.array_equal(
        _bits(boot.bootstrap_means(d, resamples, seed, workers=1)), _bits(old.bootstrap_means(d, resamples, seed))
    )


@pytest.mark.parametrize("method", ["bootstrap", "bca"])
@pytest.mark.parametrize("n", [25, 300, 1000])
def test_intervals_p_values_and_verdicts_are_the_baselines(
    method: str, n: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Everything downstream of the means is unchanged code, so feeding it the baseline means
    must give identical results objects, rule p-values, verdicts and resolution bounds."""
    d = np.random.default_rng(n).gamma(2.0, 1.0, n) - 1.8
    bounds = np.full(n, 0.02)
    rules = [E.Rule("upper", "<", 0.5), E.Rule("lower", ">", -0.4), E.Rule("within", low=-0.3, high=0.6)]

    def everything() -> list[object]:
        cache.clear()
        res = E.interval(method, d, 0.9, resamples=3000, seed=21)
        out: list[object] = [res]
        for rule in rules:
            dec = E.decide_rule(rule, d, 0.9, method, "difference", 3000, 21)
            chk = E.resolution_check(rule, d, bounds, 0.9, method, "difference", 3000, 21, result=dec.result)
            out += [dec.holds, dec.pvalue, dec.result, chk.interval_bound, chk.could_change]
        return out

    new = everything()
    monkeypatch.setattr(boot, "bootstrap_means", lambda d_, b_, s_, workers=None: old.bootstrap_means(d_, b_, s_))
    assert everything() == new
    cache.clear()
