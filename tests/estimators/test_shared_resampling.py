"""One resampling per gate: the draws are the pre-issue-14 ones bit for bit, computed once per
(contrasts, resamples, seed) and shared by the interval, the rule p-value and the resolution
check, with results identical to computing each afresh."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import estimators as E
from estimators import _reference_cache as cache
from estimators.bootstrap import bootstrap_means

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import _baseline_estimators as old  # noqa: E402


@pytest.mark.parametrize("n", [2, 3, 20, 255, 256, 257, 1000, 1025, 4097, 10_000])
def test_bootstrap_draws_are_the_old_ones_bit_for_bit(n: int) -> None:
    d = np.random.default_rng(n).lognormal(0.0, 1.0, n)
    resamples = 2100 if n < 5000 else 300
    for seed in (0, 7):
        new = bootstrap_means(d, resamples, seed, workers=1)
        assert np.array_equal(new.view(np.int64), old.bootstrap_means(d, resamples, seed).view(np.int64))


def _gate(method: str, d: np.ndarray, rule: E.Rule, b: np.ndarray) -> tuple:
    dec = E.decide_rule(rule, d, 0.9, method, "difference", 2999, 11)
    chk = E.resolution_check(rule, d, b, 0.9, method, "difference", 2999, 11, result=dec.result)
    return dec.holds, dec.pvalue, dec.result, chk.interval_bound, chk.could_change


@pytest.mark.parametrize("method", ["bootstrap", "bca", "signflip", "wilcoxon", "t"])
@pytest.mark.parametrize("n", [12, 40])
@pytest.mark.parametrize(
    "rule", [E.Rule("upper", "<", 0.6), E.Rule("lower", ">", -0.1), E.Rule("within", low=-0.2, high=0.9)]
)
def test_shared_results_equal_fresh_ones(method: str, n: int, rule: E.Rule) -> None:
    d = np.random.default_rng(n).normal(0.3, 1.0, n)
    b = np.full(n, 0.01)
    cache.clear()
    before = cache.stats()
    shared = _gate(method, d, rule, b)
    after = cache.stats()
    with cache.disabled():
        fresh = _gate(method, d, rule, b)
    assert shared == fresh
    if method in ("bootstrap", "bca") or (method == "signflip" and n > 20):
        assert after["misses"] - before["misses"] == 1  # drawn once for the whole gate
        assert after["hits"] - before["hits"] >= 1


def test_seed_none_is_never_cached() -> None:
    d = np.random.default_rng(1).normal(size=30)
    cache.clear()
    a = E.bootstrap_interval(d, 0.9, resamples=500, seed=None)
    b = E.bootstrap_interval(d, 0.9, resamples=500, seed=None)
    assert cache.stats()["entries"] == 0
    assert (a.lower, a.upper) != (b.lower, b.upper)


def test_cached_draws_are_read_only_and_keyed_on_everything() -> None:
    from estimators.bootstrap import sorted_bootstrap_means

    d = np.random.default_rng(2).normal(size=25)
    a = sorted_bootstrap_means(d, 400, 3)
    with pytest.raises(ValueError):
        a[0] = 0.0
    assert sorted_bootstrap_means(d, 400, 3) is a
    assert sorted_bootstrap_means(d, 401, 3) is not a
    assert sorted_bootstrap_means(d, 400, 4) is not a
    e = d.copy()
    e[0] = np.nextafter(e[0], np.inf)
    assert sorted_bootstrap_means(e, 400, 3) is not a


def test_cache_is_bounded() -> None:
    cache.clear()
    rng = np.random.default_rng(4)
    for _ in range(cache.MAX_ENTRIES + 5):
        E.bootstrap_interval(rng.normal(size=30), 0.9, resamples=200, seed=1)
    s = cache.stats()
    assert s["entries"] <= cache.MAX_ENTRIES and s["bytes"] <= cache.MAX_BYTES


def test_import_needs_no_scipy() -> None:
    import subprocess

    code = (
        "import sys, numpy as np, estimators as E; E.decide_rule; "
        "E.decide_rule(E.Rule('upper', '<', 0.5), np.arange(8.0) - 3, 0.9, 'signflip'); "
        "print('scipy' in sys.modules, 'scipy.stats' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert out.stdout.split() == ["False", "False"]


@pytest.mark.parametrize(("n", "need"), [(513, 30), (820, 40), (1000, 65_000), (10_000, 60_000)])
def test_sampler_replays_indices_including_top_ups(n: int, need: int) -> None:
    """Small draws at low acceptance run short and top up (about 8% of calls at n = 513, 0.5% at
    n = 820, the boolean-index path); the sampler must follow the same stream through them."""
    from estimators._draws import Sampler as _Sampler

    sampler = _Sampler(n, max(1, need // n))
    bg_new, bg_old = np.random.PCG64(9), np.random.PCG64(9)
    calls = 2000 if need < 1000 else 5
    for _ in range(calls):
        assert np.array_equal(sampler.indices(bg_new, need), old._indices(bg_old, n, need))
    assert bg_new.state == bg_old.state


@pytest.mark.parametrize(("n", "resamples"), [(21, 999), (300, 30_001), (5000, 2000), (40_000, 250)])
def test_signflip_draws_are_the_same_in_any_number_of_threads(n: int, resamples: int) -> None:
    """Chunks drawn from an advanced copy of the stream, in parallel or one after another, in one
    draw or cut at any pattern, give the same sums bit for bit."""
    from estimators._signs import SignSums, sampled_means

    d = np.random.default_rng(n).normal(size=n)
    means, empty = sampled_means(d, resamples, 5, workers=1)
    for workers in (2, 3):
        got, got_empty = sampled_means(d, resamples, 5, workers=workers)
        assert got_empty == empty
        assert np.array_equal(got.view(np.int64), means.view(np.int64))
    signs = SignSums(d, 5)
    whole, _ = signs.draw(0, resamples, workers=1)
    cut = resamples // 3
    assert np.array_equal(np.concatenate([signs.draw(0, cut)[0], signs.draw(cut, resamples)[0]]), whole)
