"""Benchmark the estimators against scipy on the same data, in one process.

Run from the repository root:  python benchmarks/bench_estimators.py

Prints median wall times (several repeats), ratios to scipy, the intervals side by side, and
whether the issue's targets are met: exact sign-flip interval at n = 20 under 100 ms, BCa at
n = 1000 with 9999 resamples at least 4x faster than scipy.stats.bootstrap(method='BCa').
"""

from __future__ import annotations

import os
import platform
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np
import scipy
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import estimators as E  # noqa: E402


def timed(fn: Callable[[], Any], repeats: int, warm: bool = True) -> tuple[float, Any]:
    """Median wall time in seconds over ``repeats`` runs (after one warm-up) and last value."""
    out = fn() if warm else None
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times)), out


def signflip_vs_scipy() -> bool:
    ok = True
    for n, reps_ours, reps_scipy in ((16, 15, 3), (20, 15, 1)):  # scipy n=20 takes ~10 s
        d = np.random.default_rng(n).normal(0.3, 1.0, n)
        t_ours, res = timed(lambda: E.signflip_interval(d, 0.95), reps_ours)
        t_sp, ref = timed(
            lambda: stats.permutation_test(
                (d,), np.mean, permutation_type="samples", n_resamples=np.inf,
                alternative="two-sided", vectorized=True,
            ),
            reps_scipy,
            warm=False,
        )
        print(
            f"signflip n={n}: ours {t_ours * 1e3:8.1f} ms (interval + p) | scipy "
            f"permutation_test p only {t_sp * 1e3:8.1f} ms | scipy/ours = {t_sp / t_ours:6.1f}x"
        )
        print(
            f"    interval [{res.lower:.6f}, {res.upper:.6f}] "
            f"attained {res.attained_confidence:.6f};"
            f" p ours {res.p_value_vs_null:.8f} scipy {ref.pvalue:.8f}"
        )
        if n == 20:
            hit = t_ours < 0.100
            ok &= hit
            print(f"    target n=20 < 100 ms: {'MET' if hit else 'MISSED'} ({t_ours * 1e3:.1f} ms)")
    return ok


def bca_vs_scipy() -> bool:
    n, b = 1000, 9999
    d = np.random.default_rng(1000).lognormal(0.0, 0.75, n)
    t_one, res = timed(lambda: E.bca_interval(d, 0.95, resamples=b, seed=1, workers=1), 7)
    t_def, _ = timed(lambda: E.bca_interval(d, 0.95, resamples=b, seed=1), 7)
    t_sp, ref = timed(
        lambda: stats.bootstrap((d,), np.mean, n_resamples=b, method="BCa",
                                confidence_level=0.95, rng=np.random.default_rng(2)),
        5,
    )
    ci = ref.confidence_interval
    print(
        f"BCa n={n} B={b}: ours 1 thread {t_one * 1e3:7.1f} ms | ours default threads "
        f"({min(4, os.cpu_count() or 1)}) {t_def * 1e3:7.1f} ms | scipy {t_sp * 1e3:7.1f} ms"
    )
    print(f"    scipy/ours: 1 thread {t_sp / t_one:5.2f}x, default {t_sp / t_def:5.2f}x")
    # Monte Carlo sd of our ends, from 8 seeds
    ends = np.array([E.bca_interval(d, 0.95, resamples=b, seed=s).confidence_interval()
                     for s in range(10, 18)])
    sd = ends.std(axis=0, ddof=1)
    diff = np.array([res.lower - ci.low, res.upper - ci.high])
    agree = bool(np.all(np.abs(diff) < 4 * np.sqrt(2) * sd))
    print(f"    ours  [{res.lower:.6f}, {res.upper:.6f}]")
    print(f"    scipy [{ci.low:.6f}, {ci.high:.6f}]")
    print(f"    MC sd of ends {sd[0]:.6f}, {sd[1]:.6f}; |diff| {abs(diff[0]):.6f}, "
          f"{abs(diff[1]):.6f}: {'agree' if agree else 'DISAGREE'} within 4 sd of a difference")
    hit1, hitd = t_sp / t_one >= 4, t_sp / t_def >= 4
    print(f"    target >= 4x: 1 thread {'MET' if hit1 else 'MISSED'}, "
          f"default {'MET' if hitd else 'MISSED'}")
    return agree and hitd


def hodges_lehmann() -> None:
    n = 2000
    d = np.random.default_rng(2000).standard_t(4, n) + 0.1
    t, res = timed(lambda: E.wilcoxon_interval(d, 0.95), 7)
    print(
        f"Hodges-Lehmann n={n} ({n * (n + 1) // 2} Walsh averages): {t * 1e3:7.1f} ms; "
        f"HL {res.estimate:.6f} [{res.lower:.6f}, {res.upper:.6f}] "
        f"{'exact' if res.exact else 'normal approx.'}, attained {res.attained_confidence:.6f}"
    )
    t6, _ = timed(lambda: E.wilcoxon_interval(d[:400], 0.95), 7)
    print(f"    n=400 exact signed-rank distribution: {t6 * 1e3:7.1f} ms")


def main() -> int:
    print(
        f"python {platform.python_version()}, numpy {np.__version__}, scipy {scipy.__version__}, "
        f"{os.cpu_count()} cpus, {platform.processor() or platform.machine()}"
    )
    ok = signflip_vs_scipy()
    ok &= bca_vs_scipy()
    hodges_lehmann()
    print("all targets met" if ok else "some target missed (see above)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
