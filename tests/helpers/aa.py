"""A/A pairs in tests: a plan of arms ``a``, ``b`` and ``a_again`` (a control copy of ``a``), its runs as
rows, and an in-process freeze, import and evaluate (``prereg.api``, ``collect.api``, ``gates.api``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from gates.artifact import Evaluation
from tests.helpers import write_csv


def aa_plan(
    blocks: int = 10,
    method: str = "t",
    confidence: float = 0.9,
    contrast: str = "b - a",
    rule: str = "upper < 0.5",
    copy: str = "{policy: x, size: 2, control_of: a}",
    extra_gates: str = "",
) -> bytes:
    """Arms ``a`` ({policy: x, size: 2}), ``b`` and ``a_again`` (``copy``), metric ``loss`` over ``blocks``."""
    return f"""schema: prereg/v1
study: aa-test
title: A/A pair case
hypothesis: b is no worse than a.
arms:
  a: {{policy: x, size: 2}}
  b: {{policy: y, size: 2}}
  a_again: {copy}
strata:
  factors: {{block: [{", ".join(str(i) for i in range(1, blocks + 1))}]}}
  replicates: 1
metrics:
  loss: {{unit: nats, better: lower, evidence: measured}}
gates:
  - {{id: no_worse, metric: loss, contrast: "{contrast}", method: {method}, confidence: {confidence}, pass_if: "{rule}"}}
{extra_gates}decision: {{claim: b is no worse than a.}}
""".encode()


def aa_rows(
    blocks: int = 10, shift: float = 0.0, seed: int = 0, noise: float = 0.05, ratio: bool = False
) -> list[dict]:
    """Rows of the three arms: ``a`` and ``a_again`` draw from one distribution (``a_again`` shifted by
    ``shift``, multiplied by ``1 + shift`` when ``ratio``), ``b`` = ``a``'s block level + noise."""
    rng = np.random.default_rng(seed)
    rows = []
    for block in range(1, blocks + 1):
        level = 2.0 + 0.3 * rng.standard_normal()
        again = level + noise * rng.standard_normal()
        again = again * (1 + shift) if ratio else again + shift
        values = {
            "a": level + noise * rng.standard_normal(),
            "b": level + noise * rng.standard_normal(),
            "a_again": again,
        }
        rows += [{"arm": arm, "block": block, "replicate": 0, "loss": round(v, 9)} for arm, v in values.items()]
    return rows


def aa_evaluate(tmp_path: Path, plan: bytes, rows: list[dict]) -> Evaluation:
    """Freeze ``plan``, import ``rows`` and evaluate, in process: the artifact (not written)."""
    from collect.api import import_table
    from gates.api import evaluate
    from prereg.api import freeze

    path = tmp_path / "plan.yaml"
    path.write_bytes(plan)
    lock = tmp_path / "plan.lock.json"
    if not lock.exists():
        freeze(path, lock)
    runs = tmp_path / "runs"
    import_table(lock, write_csv(tmp_path / "runs.csv", rows), runs)
    return evaluate(lock, runs)
