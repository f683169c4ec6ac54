"""Stopping early, honestly: false-SUPPORTED rates of sequential gates under the null, by seeded simulation.

Run from the repository root:  python benchmarks/bench_sequential.py [--sequences 10000]

1. Planned looks (the toolkit's levels). Each null sequence draws N(0, 1) block contrasts (true mean
   exactly on the margin of ``upper < 0``, gate confidence 0.90: one-sided alpha 0.05), looks at
   the planned block counts, decides each look with the project's own ``estimators.decide_rule`` at
   the look's level (``estimators.look_levels.gate_levels``), and stops at the first pass. The share
   of sequences that ever pass is the realised false-SUPPORTED rate, printed with its Monte Carlo
   standard error: t at 6/12/18/24/30 blocks (O'Brien-Fleming and Pocock spending); sign-flip and
   Wilcoxon at 8/10/12/14/16 blocks (Pocock; O'Brien-Fleming spends too little early for an exact
   test on 8 blocks, and the freeze check refuses such looks).
2. Naive stopping, as a contrast: the same t gate at its fixed 5% level at every look (6 blocks
   per look), stopping at the first pass, for 2 / 3 / 5 / 10 looks (vectorised t tests, 200 000
   sequences).
3. Power at a design effect: a t gate ``upper < 0.45`` on contrasts N(0, 1), looks 6..30, with
   the power ``prereg power`` predicts (``estimators.power``: exact noncentral t for the fixed
   design, its seeded simulation for the looks) against the power realised with ``decide_rule``;
   and the expected blocks (and runs, two arms per block) saved by stopping early.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from estimators import Rule, decide_rule  # noqa: E402
from estimators import power as P  # noqa: E402
from estimators.look_levels import gate_levels  # noqa: E402

CONF = 0.90
ALPHA = (1 - CONF) / 2
T_LOOKS = [6, 12, 18, 24, 30]
EXACT_LOOKS = [8, 10, 12, 14, 16]


def sequential_rate(
    method: str,
    looks: list[int],
    spending: str,
    sequences: int,
    seed: int,
    delta: float = 0.0,
    rule: Rule | None = None,
) -> tuple[float, float, float]:
    """(share of sequences passing at some look, its standard error, mean blocks used) with the
    project's estimators at the toolkit's per-look levels (module doc)."""
    rule = rule or Rule("upper", "<", 0.0)
    levels = gate_levels(method, CONF, looks, spending)
    rng = np.random.default_rng(seed)
    passes, used = 0, 0
    for _ in range(sequences):
        d = rng.standard_normal(looks[-1]) + delta
        stop = looks[-1]
        for lv in levels:
            if lv.confidence is None:
                continue
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                if decide_rule(rule, d[: lv.blocks], lv.confidence, method).holds:
                    passes += 1
                    stop = int(lv.blocks or looks[-1])
                    break
        used += stop
    rate = passes / sequences
    return rate, math.sqrt(rate * (1 - rate) / sequences), used / sequences


def naive_rate(looks: int, per_look: int = 6, sequences: int = 200_000, seed: int = 5) -> float:
    """False-pass share of a t gate tested at its fixed one-sided 5% at every look (vectorised)."""
    from scipy import special

    n = per_look * np.arange(1, looks + 1)
    x = np.random.default_rng(seed + looks).standard_normal((sequences, int(n[-1])))
    s1, s2 = np.cumsum(x, 1)[:, n - 1], np.cumsum(x * x, 1)[:, n - 1]
    mean = s1 / n
    t = mean / np.sqrt((s2 - n * mean * mean) / (n - 1) / n)
    p_less = special.stdtr(n - 1, t)  # H0: mean >= 0 (rule upper < 0)
    return float(np.mean((p_less <= ALPHA).any(axis=1)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sequences", type=int, default=10_000)
    args = parser.parse_args()
    n = args.sequences
    print(f"null sequences per design: {n}; nominal one-sided alpha {ALPHA:g}")
    designs = [
        ("t", T_LOOKS, "obrien_fleming"),
        ("t", T_LOOKS, "pocock"),
        ("signflip", EXACT_LOOKS, "pocock"),
        ("wilcoxon", EXACT_LOOKS, "pocock"),
    ]
    for i, (method, looks, spending) in enumerate(designs):
        start = time.perf_counter()
        rate, se, _ = sequential_rate(method, looks, spending, n, seed=100 + i)
        verdict = "ok" if rate <= ALPHA + 2 * se else "ABOVE alpha + 2 se"
        print(
            f"  {method:8s} looks {looks} {spending:14s}: false SUPPORTED {rate:.4f} (se {se:.4f}; {verdict}) "
            f"[{time.perf_counter() - start:.1f} s]"
        )
    print("naive stopping (t at its fixed 5% at every look, 6 blocks per look, 200 000 sequences):")
    for k in (2, 3, 5, 10):
        print(f"  {k:2d} looks: false SUPPORTED {naive_rate(k):.4f}")
    print("power at a design effect (t, upper < 0.45, contrasts N(0, 1)):")
    rule = Rule("upper", "<", 0.45)
    target = P.Target("upper", high=0.45)
    fixed_pred = P.t_power(30, 0.0, 1.0, target, ALPHA)
    fixed_real, fixed_se, _ = sequential_rate("t", [30], "obrien_fleming", n, seed=7, rule=rule)
    print(f"  fixed 30 blocks: predicted {fixed_pred:.4f}, realised {fixed_real:.4f} (se {fixed_se:.4f})")
    for spending in ("obrien_fleming", "pocock"):
        nominal = [lv.nominal_alpha for lv in gate_levels("t", CONF, T_LOOKS, spending)]
        pred = P.sequential_t_power(T_LOOKS, nominal, 0.0, 1.0, target, sims=200_000, seed=3)
        real, se, used = sequential_rate("t", T_LOOKS, spending, n, seed=8, rule=rule)
        print(
            f"  looks {T_LOOKS} {spending}: predicted {pred.power:.4f}, realised {real:.4f} (se {se:.4f}); "
            f"expected blocks {used:.2f} of 30 (predicted {pred.expected_blocks:.2f}): "
            f"{30 - used:.2f} blocks = {2 * (30 - used):.1f} runs saved on average"
        )


if __name__ == "__main__":
    main()
