"""False-SUPPORTED rates of two gate designs, by seeded simulation (a benchmark script, not a CI test).

Run from the repository root:  python benchmarks/bench_false_support.py [--reps 20000] [--all] [--jobs 2]

Case 1, a rule on the point estimate: a - b ~ N(0, 1), n = 8 blocks, the true mean exactly 0.
``estimate < 0`` passes whenever the sample mean is below 0 (about half the data sets); such a
rule is refused at freeze on a primary gate, so this rate can no longer decide a claim. The
``upper < 0`` t gate at confidence 0.90 (a one-sided test at 5%) passes at about 0.05.

Case 4, skewed contrasts with a mean-targeting method: lognormal(0, 1) contrasts shifted so their
true mean sits exactly on the margin (``d = exp(Z) - exp(0.5)``, gate ``upper < 0``, t at 0.90), at
n = 6 / 10 / 15 / 20. Printed: how often the gate passes (nominal 0.05), how often the skew check
(``estimators.feasibility.skew_flagged``, right skew for an ``upper`` rule) fires, how often it
passes with no warning, and the check's false-alarm rate on normal contrasts. Below
``SKEW_CHECK_MIN_N`` every such verdict also carries the "symmetry unchecked" note, so no pass
there is silent; the pass rate itself stays above nominal, as the docs say.

Cells of small samples (``benchmarks/false_support_cells.py`` says what each population is): rare
restarts (the once-vacuous case), lognormal, rare adverse strata and normal contrasts, at n = 6 / 10 /
20 / 30 and with looks at 6, 12, 18, 24, 30 (O'Brien-Fleming, Pocock), for betting (with the declared
range), t and sign-flip (with and without it). Printed per cell: the false-SUPPORTED rate and the rate
SUPPORTED with no warning in the decision line (nominal 0.05; three Monte Carlo standard errors beside).
A monitored t or sign-flip gate with a first look of 6 is refused at freeze unless the plan states
``monitoring.first_look_reason``: those rows are what such a plan gets.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from false_support_cells import DESIGNS, METHODS, POPULATIONS, cell, skip_reason  # noqa: E402

from estimators import Rule  # noqa: E402
from estimators.feasibility import SKEW_CHECK_MIN_N, skew_flagged  # noqa: E402

CONF = 0.90
UPPER = Rule("upper", "<", 0.0)


def _t_uppers(d: np.ndarray, conf: float = CONF) -> np.ndarray:
    """The t interval's upper end of each row of ``d`` (two-sided ``conf``)."""
    from scipy import stats

    n = d.shape[1]
    q = float(stats.t.ppf((1 + conf) / 2, n - 1))
    return np.asarray(d.mean(axis=1) + q * d.std(axis=1, ddof=1) / math.sqrt(n))


def case1_rates(reps: int = 20000, seed: int = 1, n: int = 8) -> tuple[float, float]:
    """(rate ``estimate < 0`` passes, rate the ``upper < 0`` t gate passes) on N(0, 1) contrasts."""
    d = np.random.default_rng(seed).normal(size=(reps, n))
    return float(np.mean(d.mean(axis=1) < 0)), float(np.mean(_t_uppers(d) < 0))


def case4_rates(n: int, reps: int = 20000, seed: int = 4) -> dict[str, float]:
    """Pass, warning and false-alarm rates of an ``upper < 0`` t gate on lognormal contrasts whose
    mean is exactly 0 (module doc)."""
    rng = np.random.default_rng(seed * 1000 + n)
    d = np.exp(rng.normal(size=(reps, n))) - math.exp(0.5)
    passed = _t_uppers(d) < 0
    warned = np.array([skew_flagged(row, UPPER) is not None for row in d])
    normal = rng.normal(size=(reps, n))
    false_alarm = np.mean([skew_flagged(row, UPPER) is not None for row in normal])
    return {
        "pass": float(passed.mean()),
        "warned": float(warned.mean()),
        "pass_unwarned": float((passed & ~warned).mean()),
        "false_alarm": float(false_alarm),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=20000)
    parser.add_argument("--all", action="store_true", help="also the slow cells (exact sign-flip at n = 20)")
    parser.add_argument("--cells-only", action="store_true", help="only the small-sample cells")
    parser.add_argument("--jobs", type=int, default=1, help="worker processes for the cells")
    args = parser.parse_args()
    if args.cells_only:
        cells(args.reps, args.all, args.jobs)
        return
    start = time.perf_counter()
    est, t = case1_rates(args.reps)
    print(f"case 1: a - b ~ N(0, 1), n = 8, {args.reps} data sets")
    print(f"  'estimate < 0' passes {est:.3f} (refused at freeze on a primary gate: it can no longer decide)")
    print(f"  'upper < 0' t gate at {CONF:.2f} passes {t:.3f} (nominal 0.05)")
    print(
        f"\ncase 4: lognormal(0, 1) contrasts, mean exactly on the margin, 'upper < 0', t at {CONF:.2f}, "
        f"{args.reps} data sets per n"
    )
    print(f"  {'n':>3} {'pass':>6} {'warned':>7} {'pass&no-warning':>16} {'normal false alarm':>19}  verdict note")
    for n in (6, 10, 15, 20):
        r = case4_rates(n, args.reps)
        note = "symmetry unchecked" if n < SKEW_CHECK_MIN_N else "-"
        print(
            f"  {n:>3} {r['pass']:6.3f} {r['warned']:7.3f} {r['pass_unwarned']:16.3f} {r['false_alarm']:19.3f}  {note}"
        )
    cells(args.reps, args.all, args.jobs)
    print(f"\n{time.perf_counter() - start:.0f} s")


def _cell_rows(pop_index: int, method: str, reps: int, everything: bool) -> list[tuple[str, list[str]]]:
    """One population and method's table rows (run in a worker process with ``--jobs``)."""
    pop = POPULATIONS[pop_index]
    rows: dict[str, list[str]] = (
        {f"{method} range": []} if method == "betting" else {f"{method} range": [], f"{method} no range": []}
    )
    for _, looks, spending in DESIGNS:
        if skip_reason(method, looks) and not everything:
            for out in rows.values():
                out.append(f"{'(--all)':>14}")
            continue
        ranged, bare = cell(pop, method, looks, spending, reps)
        for label, r in zip(rows, (ranged, bare), strict=False):
            rows[label].append(f"{r.supported:6.3f} /{r.unwarned:6.3f}")
    return [(f"{pop.name:<14} {label:<18}", out) for label, out in rows.items()]


def cells(reps: int, everything: bool, jobs: int = 1) -> None:
    """The small-sample cells (module doc): false-SUPPORTED and unwarned false-SUPPORTED rates."""
    from concurrent.futures import ProcessPoolExecutor

    print(
        f"\nsmall-sample cells, {reps} data sets each, confidence 0.90 (nominal 0.05; 3 Monte Carlo SE "
        f"{3 * math.sqrt(0.05 * 0.95 / reps):.4f}); range: contrasts in [-20, 20]; looks at 6, 12, 18, 24, 30"
    )
    print(f"  {'population':<14} {'method':<18} " + " ".join(f"{name:>14}" for name, _, _ in DESIGNS))
    print(f"  {'':<14} {'':<18} " + " ".join(f"{'sup / unwarned':>14}" for _ in DESIGNS), flush=True)
    tasks = [(i, method) for i in range(len(POPULATIONS)) for method in METHODS]
    with ProcessPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = [pool.submit(_cell_rows, i, method, reps, everything) for i, method in tasks]
        for future in futures:
            for head, out in future.result():
                print(f"  {head} " + " ".join(out), flush=True)


if __name__ == "__main__":
    main()
