"""The controller study's ranking under the null: how often is a cell ordered by chance alone, by error control?

Run from the repository root:  python benchmarks/bench_ranking_null.py [--studies 2000] [--seed 0]

Each simulated study has the controller study's shape (examples/controller.yaml, its plan loaded as
written): 6 held-out families x 2 bandwidth regions = 12 cells, 3 replicate pairs per cell
(``analysis_unit: replicate``), the ranking ``{scale: ratio, method: t, confidence: 0.90}``. Each pair
draws its bandwidth log-uniformly inside its region (0.5-5 and 5-50 Mbit/s; the same draw for both arms)
and its completion times: comparator 10 s x exp(N(0, 0.2)), challenger the comparator's time x
exp(delta + N(0, 0.1)). Every cell goes through the product's own path (``gates.ranking.prepare_cell``
on real ``Block`` objects, then ``gates.ranking_control.control_ranking``) under each error control.

1. The null (delta = 0 in every cell): per control, the share of cells ordered (challenger, comparator
   or flip) with its split, and the family-wise rate -- the share of studies with at least one ordered
   cell -- each with its Monte Carlo standard error (cells of a study are counted together: the SE of a
   share of cells is the SE over studies of each study's share).
2. Half the cells null, half with the challenger truly 10% faster (delta = log 0.9, alternate cells):
   the share of effect cells ordered the right way (power) and the wrong way (``comparator`` or a
   ``flip``), and the mixed family-wise rate (a null cell ordered or an effect cell ordered the wrong way).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gates.matching import Block  # noqa: E402
from gates.ranking import CellEvidence, prepare_cell  # noqa: E402
from gates.ranking_control import control_ranking  # noqa: E402
from prereg.plan import load_plan  # noqa: E402
from prereg.schema import Plan  # noqa: E402

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "controller.yaml"
FAMILIES = [
    "bandwidth_collapse",
    "latency_spikes",
    "site_outage",
    "straggler",
    "flapping_membership",
    "partition_heals",
]
REGIONS = {"low": (0.5, 5.0), "high": (5.0, 50.0)}
REPLICATES = 3
CONTROLS = ("per_cell", "holm", "bonferroni")
SD_ARM, SD_CONTRAST = 0.2, 0.1  # log-scale spread of a run's time, and of the pair's log ratio
EFFECT = math.log(0.9)


class _Run:
    """A run record as the ranking reads it: ``metric(name)``."""

    def __init__(self, values: dict[str, float]) -> None:
        self.values = values

    def metric(self, name: str) -> float | None:
        return self.values.get(name)


def controlled_plans() -> dict[str, Plan]:
    """The example plan as written, once per error control."""
    plan = load_plan(EXAMPLE).plan
    assert plan.comparator is not None
    out = {}
    for control in CONTROLS:
        rule = plan.comparator.ranking.model_copy(update={"error_control": control})
        out[control] = plan.model_copy(update={"comparator": plan.comparator.model_copy(update={"ranking": rule})})
    return out


def study_cells(plan: Plan, rng: np.random.Generator, deltas: list[float]) -> list[Any]:
    """One simulated study's prepared cells (module doc), ``deltas[k]`` the true log ratio of cell k."""
    assert plan.comparator is not None
    challenger, arm = plan.comparator.challenger, "local16"
    choice = SimpleNamespace(arm=arm)
    cells: list[Any] = []
    k = 0
    for family in FAMILIES:
        for region, (lo, hi) in REGIONS.items():
            blocks = []
            for rep in range(REPLICATES):
                bw = float(math.exp(rng.uniform(math.log(lo), math.log(hi))))
                base = 10.0 * math.exp(rng.normal(0.0, SD_ARM))
                ratio = math.exp(deltas[k] + rng.normal(0.0, SD_CONTRAST))
                records = {
                    arm: _Run({"completion_time": base, "base_bandwidth_mbps": bw}),
                    challenger: _Run({"completion_time": base * ratio, "base_bandwidth_mbps": bw}),
                }
                stratum = {"family": family, "bandwidth_region": region}
                blocks.append(Block(stratum=stratum, replicate=rep, calibration=False, records=records))  # type: ignore[arg-type]
            region_levels = {"bandwidth_region": region}
            cells.append(prepare_cell(plan, family, region_levels, blocks, choice, [], []))  # type: ignore[arg-type]
            k += 1
    return cells


def simulate(studies: int, seed: int, mixed: bool) -> dict[str, dict[str, np.ndarray]]:
    """Per control: per study, the count of cells ordered by kind, and whether a false claim was made."""
    plans = controlled_plans()
    rng = np.random.default_rng(seed)
    m = len(FAMILIES) * len(REGIONS)
    deltas = [EFFECT if (mixed and k % 2) else 0.0 for k in range(m)]
    kinds = ("challenger", "comparator", "flip", "right", "wrong", "null_ordered", "false_claim")
    out = {c: {kind: np.zeros(studies) for kind in kinds} for c in CONTROLS}
    for s in range(studies):
        prepared = study_cells(plans["per_cell"], rng, deltas)
        assert all(isinstance(c, CellEvidence) for c in prepared)
        for control, plan in plans.items():
            ranked = control_ranking(plan, prepared)
            tally = out[control]
            for cell, delta in zip(ranked, deltas, strict=True):
                if cell.ranking in ("challenger", "comparator", "flip"):
                    tally[cell.ranking][s] += 1
                    if delta == 0.0:
                        tally["null_ordered"][s] += 1
                    elif cell.ranking == "challenger":
                        tally["right"][s] += 1
                    else:
                        tally["wrong"][s] += 1
            tally["false_claim"][s] = float(tally["null_ordered"][s] + tally["wrong"][s] > 0)
    return out


def share(per_study: np.ndarray, cells: int) -> tuple[float, float]:
    """(share of cells, its Monte Carlo SE over studies)."""
    x = per_study / cells
    return float(np.mean(x)), float(np.std(x, ddof=1) / math.sqrt(x.size))


def _pct(mean_se: tuple[float, float]) -> str:
    return f"{100 * mean_se[0]:.2f}% +- {100 * mean_se[1]:.2f}"


def null_table(out: dict[str, dict[str, np.ndarray]]) -> list[str]:
    m = len(FAMILIES) * len(REGIONS)
    lines = [
        "| control | cells ordered | challenger | comparator | flip | studies with >= 1 ordered cell |",
        "|---|---|---|---|---|---|",
    ]
    for control, t in out.items():
        ordered = t["challenger"] + t["comparator"] + t["flip"]
        fwer = share(t["false_claim"], 1)
        lines.append(
            f"| {control} | {_pct(share(ordered, m))} | {_pct(share(t['challenger'], m))} | "
            f"{_pct(share(t['comparator'], m))} | {_pct(share(t['flip'], m))} | {_pct(fwer)} |"
        )
    return lines


def mixed_table(out: dict[str, dict[str, np.ndarray]]) -> list[str]:
    half = len(FAMILIES) * len(REGIONS) // 2
    lines = [
        "| control | null cells ordered | effect cells ordered right | effect cells ordered wrong | "
        "studies with a false claim |",
        "|---|---|---|---|---|",
    ]
    for control, t in out.items():
        lines.append(
            f"| {control} | {_pct(share(t['null_ordered'], half))} | {_pct(share(t['right'], half))} | "
            f"{_pct(share(t['wrong'], half))} | {_pct(share(t['false_claim'], 1))} |"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--studies", type=int, default=2000, help="simulated studies per scenario (default 2000)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.studies < 2:
        parser.error("--studies must be at least 2 (a standard error needs two)")
    start = time.perf_counter()
    print(
        f"ranking null simulation: {args.studies} studies per scenario, seed {args.seed}, nominal 1 - confidence = 10%"
    )
    print("\n1. the null in every cell (12 cells of 3 pairs)\n")
    print("\n".join(null_table(simulate(args.studies, args.seed, mixed=False))))
    print("\n2. half the cells null, half with the challenger 10% faster\n")
    print("\n".join(mixed_table(simulate(args.studies, args.seed + 1, mixed=True))))
    print(f"\n{time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
