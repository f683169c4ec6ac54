"""The A/A check's own false-alarm rate: how often does a true A/A pair refuse the decision?

Run from the repository root:  python benchmarks/bench_aa_false_alarms.py [--studies 1000] [--seed 0]

Each simulated study has arms ``a``, ``b`` and ``a_again`` (``control_of: a``: the same configuration
under a second name) over 10 blocks, metric ``loss``: a block level 2 + 0.3 N(0, 1) shared by the arms,
each run adding 0.05 N(0, 1) of its own (``a_again`` shifted by ``shift``). Every study goes through the
product's own path, in process: ``prereg.api.freeze`` once per plan, then ``collect.api.import_table``
and ``gates.api.evaluate`` (``gates.aa_pairs``). Printed per scenario: the share of studies whose
decision the A/A check refused (kind ``aa_difference``), with its binomial standard error.

Scenarios: one primary t gate at 0.90 and at 0.95 (a true A/A: the rate should be 1 - confidence); two
distinct primary gates at 0.90, t and wilcoxon (two checks at 0.95 each, Bonferroni: at most 0.10 together); a sign-flip gate at 0.90;
and the copy shifted by 0.05 nats (0.7 sd of a pair's difference): how often the check catches it.
"""

from __future__ import annotations

import argparse
import math
import shutil
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from collect.api import import_table  # noqa: E402
from gates.api import evaluate  # noqa: E402
from prereg.api import freeze  # noqa: E402

BLOCKS = 10


def plan_text(gates: list[str]) -> str:
    """The study's plan with the given gate lines (``method confidence``)."""
    lines = [
        f'  - {{id: g{i}, metric: loss, contrast: "b - a", method: {m}, confidence: {c}, pass_if: "upper < {0.5 + i}"}}'
        for i, (m, c) in enumerate(g.split() for g in gates)
    ]
    return f"""schema: prereg/v1
study: aa-bench
title: A/A false alarms
hypothesis: b is no worse than a.
arms:
  a: {{policy: x}}
  b: {{policy: y}}
  a_again: {{policy: x, control_of: a}}
strata:
  factors: {{block: [{", ".join(str(i) for i in range(1, BLOCKS + 1))}]}}
metrics:
  loss: {{unit: nats, better: lower, evidence: measured}}
gates:
{chr(10).join(lines)}
decision: {{claim: b is no worse than a.}}
"""


def write_rows(path: Path, rng: np.random.Generator, shift: float) -> Path:
    """One study's table of runs."""
    lines = ["arm,block,replicate,loss"]
    for block in range(1, BLOCKS + 1):
        level = 2.0 + 0.3 * rng.standard_normal()
        a, b, again = level + 0.05 * rng.standard_normal(3)
        for arm, v in (("a", a), ("b", b), ("a_again", again + shift)):
            lines.append(f"{arm},{block},0,{float(v)!r}")
    path.write_text("\n".join(lines) + "\n")
    return path


def scenario(name: str, gates: list[str], shift: float, studies: int, seed: int, folder: Path) -> None:
    """Run ``studies`` simulated studies of one scenario in ``folder`` and print its refusal rate."""
    folder.mkdir()
    (folder / "plan.yaml").write_text(plan_text(gates))
    lock = folder / "plan.lock.json"
    freeze(folder / "plan.yaml", lock)
    rng = np.random.default_rng(seed)
    refused = 0
    start = time.perf_counter()
    for _ in range(studies):
        runs = folder / "runs"
        shutil.rmtree(runs, ignore_errors=True)
        import_table(lock, write_rows(folder / "runs.csv", rng, shift), runs)
        ev = evaluate(lock, runs)
        refused += any(r.kind == "aa_difference" for r in ev.decision_refused_by)
    rate = refused / studies
    se = math.sqrt(rate * (1 - rate) / studies)
    elapsed = time.perf_counter() - start
    print(f"{name:<38} {refused:>5}/{studies:<5} refused  rate {rate:.3f} (SE {se:.3f})  [{elapsed:.0f} s]")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--studies", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    warnings.simplefilter("ignore")  # imported runs carry no start time: the reports say so, not a problem here
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for i, (name, gates, shift) in enumerate(
            [
                ("true A/A, t at 0.90", ["t 0.9"], 0.0),
                ("true A/A, t at 0.95", ["t 0.95"], 0.0),
                ("true A/A, t and wilcoxon at 0.90 (K=2)", ["t 0.9", "wilcoxon 0.9"], 0.0),
                ("true A/A, signflip at 0.90", ["signflip 0.9"], 0.0),
                ("copy shifted 0.05 nats, t at 0.90", ["t 0.9"], 0.05),
            ]
        ):
            scenario(name, gates, shift, args.studies, args.seed + i, work / f"scenario{i}")


if __name__ == "__main__":
    main()
