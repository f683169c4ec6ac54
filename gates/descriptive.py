"""What the evaluation says about the runs beside the gates: failed runs in words, every metric per arm.

Descriptive, never a test: nothing here feeds a gate, an invalidator or the decision.

More in ``docs/internals.md``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from collect.ledger.columns import LedgerColumns
from collect.ledger.failed_runs import failure_words
from gates.artifact_runs import ArmSummary, DescriptiveMetric, FailedRunEntry
from gates.blockdata import metric_array
from gates.matching import Match, stratum_key
from gates.numbers import encode_number
from prereg.schema import Plan


def failed_run_entries(plan: Plan, plan_sha256: str, ledger: LedgerColumns, match: Match) -> list[FailedRunEntry]:
    """Every failed run of a cell of ``match`` (under ``plan_sha256``), in ledger order."""
    col = ledger.columns
    out = []
    for i, (sha, status) in enumerate(zip(col["prereg_sha256"], col["status"], strict=True)):
        if sha != plan_sha256 or status == "complete":
            continue
        row = ledger.row(i)
        skey = stratum_key(plan, row.stratum)
        block = match.blocks.get((skey, row.replicate)) if skey is not None else None
        if block is None or row.arm not in plan.arms:
            continue  # not a cell of the plan (or of the look evaluated): listed as unplanned, or not yet reached
        reason, tail = failure_words(row.error)
        out.append(
            FailedRunEntry(
                run_id=row.run_id,
                arm=row.arm,
                stratum=row.stratum,
                replicate=row.replicate,
                reason=reason,
                stderr_tail=tail,
                cell_complete=row.arm in block.records,
            )
        )
    return out


def summarise(values: Sequence[float | None] | np.ndarray, missing: int = 0) -> ArmSummary:
    """n, mean, median, sample sd (n - 1), min and max of the finite values; the others counted
    (None, and ``missing`` more, as missing; NaN and infinities as not finite)."""
    if isinstance(values, np.ndarray):  # ``missing`` of its NaNs stand for values not recorded
        given, inside = values.astype(float), missing
    else:
        given, inside = np.asarray([v for v in values if v is not None], dtype=float), 0
        missing += len(values) - int(given.size)
    finite = given[np.isfinite(given)]
    n = int(finite.size)
    counts = {"n": n, "non_finite": int(given.size) - n - inside, "missing": missing}
    if n == 0:
        return ArmSummary(**counts)
    scale = float(np.max(np.abs(finite))) or 1.0  # values near the float limit: no sum overflows
    z = finite / scale
    return ArmSummary(
        **counts,
        mean=encode_number(float(np.mean(z)) * scale),
        median=encode_number(float(np.median(z)) * scale),
        sd=encode_number(float(np.std(z, ddof=1)) * scale) if n > 1 else None,
        min=encode_number(float(finite.min())),
        max=encode_number(float(finite.max())),
    )


def _declared(ledger: LedgerColumns, name: str, rows: np.ndarray) -> ArmSummary:
    """A declared metric over ``rows`` (record indices), read as the gates read it (``metric_array``:
    NaN where not recorded; those told apart from a recorded NaN by the stored value)."""
    values = metric_array(ledger, name)[rows]
    stored = ledger.columns["metrics"]
    missing = sum(stored[i].get(name) is None for i in rows[np.isnan(values)].tolist())
    return summarise(values, missing)


def _undeclared(code: Any) -> dict[str, float]:
    """A record's ``code.undeclared_metrics``, each value a float (NaN: kept as not a finite number)."""
    kept = code.get("undeclared_metrics") if isinstance(code, dict) else None
    if not isinstance(kept, dict):
        return {}
    return {
        str(k): float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else math.nan
        for k, v in kept.items()
    }


def descriptive_metrics(plan: Plan, ledger: LedgerColumns, match: Match) -> list[DescriptiveMetric]:
    """Every declared metric per arm, then the undeclared ones the runs kept (module doc)."""
    listed: dict[str, list[int]] = {arm: [] for arm in sorted(plan.arms)}
    for block in match.blocks.values():
        for arm, row in block.rows.items():
            listed.setdefault(arm, []).append(row)
    rows = {arm: np.asarray(r, dtype=np.intp) for arm, r in listed.items()}
    out = []
    for name, metric in sorted(plan.metrics.items()):
        out.append(
            DescriptiveMetric(
                metric=name,
                unit=metric.unit,
                declared=True,
                evidence=metric.evidence,
                gates=[g.id for g in plan.gates if g.metric == name],
                arms={arm: _declared(ledger, name, arm_rows) for arm, arm_rows in rows.items()},
            )
        )
    codes = ledger.columns["code"]
    kept = {arm: [_undeclared(codes[i]) for i in arm_rows] for arm, arm_rows in listed.items()}
    names = sorted({n for per_arm in kept.values() for values in per_arm for n in values} - set(plan.metrics))
    for name in names:
        out.append(
            DescriptiveMetric(
                metric=name,
                declared=False,
                arms={arm: summarise([values.get(name) for values in per_arm]) for arm, per_arm in kept.items()},
            )
        )
    return out


__all__ = ["descriptive_metrics", "failed_run_entries", "summarise"]
