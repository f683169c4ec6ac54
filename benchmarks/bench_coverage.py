"""Coverage study of the interval methods (a benchmark script, not a CI test).

Run from the repository root:  python benchmarks/bench_coverage.py [--reps 2000] [--resamples 1999]

For each method (t, signflip, wilcoxon, bootstrap, bca), n in 6 / 10 / 20 (and 15 / 30 for the
two bootstraps, to place their minimum n) and contrast distribution (normal, lognormal, t with
3 df, tied = normal rounded to a 0.5 grid), at nominal 90% two-sided (one-sided 5% per bound):

* coverage: how often the interval contains the method's target (the mean for t, signflip and
  the bootstraps; the pseudo-median for wilcoxon -- they coincide except for lognormal);
* miss_hi / miss_lo: how often the upper bound falls below / the lower bound above the target
  (what a noninferiority gate's one-sided bound risks; nominal 0.05 each);
* skew_warn: how often the toolkit's skew warning fires on those contrasts.

Then the unit of analysis: strata with stratum-specific effects (effect_s ~ N(0.5, 1), replicate
noise N(0, 1)), 3 and 6 strata x 4 replicates, t intervals at 90% for the mean effect over
strata: one pair per stratum (replicate means; the default) vs every replicate as a block.

Seeded (numpy default_rng(20261201)); the Monte Carlo standard error of a coverage near 0.9 with
2000 reps is about 0.007.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import estimators as E  # noqa: E402
from estimators.feasibility import contrast_warnings  # noqa: E402

CONF = 0.90
ALPHA = 0.05
LOGNORMAL_MEAN = float(np.exp(0.5))


def pseudo_median_lognormal(rng: np.random.Generator, pairs: int = 4_000_000) -> float:
    """Median of (X1 + X2) / 2 for X ~ lognormal(0, 1), by Monte Carlo (SE about 5e-4)."""
    x = np.exp(rng.normal(size=(pairs, 2)))
    return float(np.median(x.mean(axis=1)))


def draw(dist: str, rng: np.random.Generator, n: int) -> np.ndarray:
    if dist == "normal":
        return rng.normal(size=n)
    if dist == "lognormal":
        return np.exp(rng.normal(size=n))
    if dist == "t3":
        return rng.standard_t(3, size=n)
    if dist == "tied":
        return np.round(rng.normal(size=n) * 2.0) / 2.0
    raise ValueError(dist)


def targets(dist: str, hl_lognormal: float) -> tuple[float, float]:
    """(mean, pseudo-median) of the contrast distribution."""
    if dist == "lognormal":
        return LOGNORMAL_MEAN, hl_lognormal
    return 0.0, 0.0


def study(reps: int, resamples: int) -> None:
    rng = np.random.default_rng(20261201)
    hl = pseudo_median_lognormal(rng)
    print(
        f"nominal {CONF:.2f} two-sided; one-sided miss nominal {ALPHA:.2f}; reps {reps}; "
        f"bootstrap resamples {resamples}; lognormal mean {LOGNORMAL_MEAN:.4f}, pseudo-median {hl:.4f}"
    )
    print(f"{'dist':9} {'n':>3} {'method':9} {'coverage':>8} {'miss_hi':>8} {'miss_lo':>8} {'skew_warn':>9}")
    for dist in ("normal", "lognormal", "t3", "tied"):
        mean_t, hl_t = targets(dist, hl)
        for n in (6, 10, 15, 20, 30):
            data = [draw(dist, rng, n) for _ in range(reps)]
            warn = np.mean([bool(contrast_warnings(d, "t", "difference")) for d in data])
            for method in E.METHODS:
                if n in (15, 30) and method not in ("bootstrap", "bca"):
                    continue
                target = hl_t if method == "wilcoxon" else mean_t
                cover = hi = lo = 0
                used = 0
                for i, d in enumerate(data):
                    if np.ptp(d) == 0:
                        continue
                    r = E.interval(method, d, CONF, resamples=resamples, seed=i)
                    used += 1
                    hi += r.upper < target
                    lo += r.lower > target
                    cover += r.lower <= target <= r.upper
                print(
                    f"{dist:9} {n:>3} {method:9} {cover / used:8.3f} {hi / used:8.3f} {lo / used:8.3f} {warn:9.3f}",
                    flush=True,
                )


def unit_study(reps: int) -> None:
    rng = np.random.default_rng(7)
    print("\nunit of analysis (t, 90%): stratum effects ~ N(0.5, 1), replicate noise N(0, 1), target 0.5")
    print(f"{'strata':>6} {'reps':>4} {'unit':10} {'coverage':>8} {'miss_hi':>8} {'miss_lo':>8}")
    for strata in (3, 6):
        for unit in ("stratum", "replicate"):
            cover = hi = lo = 0
            local = np.random.default_rng(strata)
            for _ in range(reps):
                effects = local.normal(0.5, 1.0, strata)
                d = effects[:, None] + local.normal(0.0, 1.0, (strata, 4))
                x = d.mean(axis=1) if unit == "stratum" else d.ravel()
                r = E.t_interval(x, CONF)
                cover += r.lower <= 0.5 <= r.upper
                hi += r.upper < 0.5
                lo += r.lower > 0.5
            print(f"{strata:>6} {4:>4} {unit:10} {cover / reps:8.3f} {hi / reps:8.3f} {lo / reps:8.3f}")
    del rng


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=2000)
    parser.add_argument("--resamples", type=int, default=1999)
    args = parser.parse_args()
    start = time.perf_counter()
    study(args.reps, args.resamples)
    unit_study(args.reps)
    print(f"\n{time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
