"""Power of the ``failure_rate`` invalidator's exact Poisson test at 2x and 0.5x the planned rate.

Run from the repository root:  python benchmarks/bench_failure_rate_power.py [--draws 200000]

For each planned (expected) count m -- the planned rate times the exposure one test sees: one arm's
runs, or all runs pooled -- the table prints the exact probability that the two-sided test
(``estimators.poisson``, R's ``poisson.test``) rejects when the true mean is 2m, 0.5m, m (the
size: at most the level), 10m and 0 (the bugs the invalidator is for), at the per-test level of
the invalidator's default (0.05 over two arms and the pool: 0.05 / 3) and at 0.05 for one test.
Exact: the true Poisson probability summed over the rejection region. Each exact figure is checked
against a seeded simulation of ``--draws`` Poisson counts (largest gap printed; it should stay
within a few Monte Carlo standard errors, at most sqrt(0.25 / draws) each).

Then the size on the churn law's simulated job histories (``prereg_seed_studies.multisite.churn_law``,
the model of docs/churn-law.md: MTBF one day per worker, checkpoints 12 s, restarts 30 s, the exact
interval): each history's failure count tested against the job rate times its exposed seconds
(computing or checkpointing: the clock failures run on), at level 0.05. The exposure there depends
on the failures (a job runs until its work is done), so the count given it is Poisson only
approximately; the share of histories the test rejects shows whether it still holds its level.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from estimators.poisson import poisson_test_power, poisson_two_sided_p, rejection_region  # noqa: E402

EXPECTED = (2.0, 5.0, 10.0, 20.0, 40.0, 80.0, 160.0)
LEVELS = (0.05 / 3, 0.05)
FACTORS = (2.0, 0.5, 1.0, 10.0, 0.0)


def simulated(m: float, true: float, level: float, draws: int, rng: np.random.Generator) -> float:
    region = rejection_region(m, level)
    counts = rng.poisson(true, size=draws)
    return float(np.isin(counts, region).mean()) if true <= 10 * m else 1.0


def churn_size(workers: int, work_s: float, histories: int, level: float = 0.05) -> tuple[float, float, float]:
    """(mean failures, mean expected, share rejected) over seeded churn-law histories."""
    from prereg_seed_studies.multisite import churn_law as law  # the seed studies' distribution
    from prereg_seed_studies.multisite.churn import resolve_interval

    rate, checkpoint_s, restart_s = workers / 86_400.0, 12.0, 30.0
    w = resolve_interval("exact", rate, checkpoint_s, restart_s)
    n_full = max(0, math.ceil(work_s / w) - 1)
    last = work_s - n_full * w
    counts, expected, rejected = 0, 0.0, 0
    for seed in range(histories):
        h = law.simulate_job(law.GapStream(seed), rate, w + checkpoint_s, n_full, restart_s, T_last=last + checkpoint_s)
        counts += h.failures
        expected += rate * h.exposed_s
        rejected += poisson_two_sided_p(h.failures, rate * h.exposed_s) <= level
    return counts / histories, expected / histories, rejected / histories


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=200_000, help="simulated counts per cell (default 200000)")
    parser.add_argument("--histories", type=int, default=4000, help="churn-law histories per row (default 4000)")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(20261208)
    worst = 0.0
    for level in LEVELS:
        print(f"\nexact two-sided Poisson test at level {level:.4g}: P(fire) when the true rate is k x the plan")
        print(f"{'expected m':>10}  " + "  ".join(f"{f'{k:g}x':>7}" for k in FACTORS))
        for m in EXPECTED:
            cells = []
            for k in FACTORS:
                exact = poisson_test_power(m, k * m, level)
                worst = max(worst, abs(exact - simulated(m, k * m, level, args.draws, rng)))
                cells.append(f"{exact:7.4f}")
            print(f"{m:>10g}  " + "  ".join(cells))
    se = math.sqrt(0.25 / args.draws)
    print(f"\nlargest |exact - simulated| over all cells: {worst:.4f} ({args.draws} draws each; MC se <= {se:.4f})")
    print(f"\nchurn-law histories ({args.histories} each), count vs job rate x exposed s, level 0.05")
    print(f"{'workers':>8} {'work_s':>8} {'failures':>9} {'expected':>9} {'rejected':>9}")
    for workers, work_s in ((100, 8640.0), (100, 34_560.0), (1000, 3000.0)):
        mean, expected, share = churn_size(workers, work_s, args.histories)
        print(f"{workers:>8} {work_s:>8g} {mean:>9.3f} {expected:>9.3f} {share:>9.4f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
