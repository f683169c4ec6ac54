"""The words of an evaluation's failed runs and per-arm metric table, shared by every report.

Both come from the artifact (``failed_runs``, ``descriptive_metrics``: :mod:`gates.artifact_runs`).
The per-arm table is descriptive -- not a test, no verdict -- and says so in its title; failed runs
are excluded from it, and each arm's count of failed cells is said beside it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from reports.words.evaluation import fmt_num

if TYPE_CHECKING:  # pydantic is imported by whoever built the Evaluation
    from gates.artifact import Evaluation
    from gates.artifact_runs import ArmSummary, DescriptiveMetric, FailedRunEntry

FAILED_TITLE = "Failed runs (why each failed)"
DESCRIPTIVE_TITLE = "Every metric per arm (descriptive, not a test)"
DESCRIPTIVE_COLUMNS = ["metric", "arm", "n", "mean", "median", "sd", "min - max"]
SHOWN_FAILED = 10  # failed runs named without --verbose


def stratum_text(stratum: Mapping[str, object], replicate: int) -> str:
    """``site=1 #0``."""
    levels = ", ".join(f"{k}={v}" for k, v in stratum.items())
    return f"{levels} #{replicate}" if levels else f"#{replicate}"


def failed_run_head(f: FailedRunEntry) -> str:
    """``run-ab12 (arm b, site=1 #0): the program exited with status 1``, and whether a retry completed the cell."""
    retried = (
        " (retried: a complete run of this cell stands, so this failure refuses nothing)" if f.cell_complete else ""
    )
    return f"{f.run_id} (arm {f.arm}, {stratum_text(f.stratum, f.replicate)}): {f.reason}{retried}"


def failed_runs_shown(ev: Evaluation, limit: int | None = SHOWN_FAILED) -> tuple[list[FailedRunEntry], str | None]:
    """The failed runs to show (the first ``limit``; None: all) and a line counting the rest, if any."""
    runs = ev.failed_runs if limit is None else ev.failed_runs[:limit]
    left = len(ev.failed_runs) - len(runs)
    more = f"... and {left} more (--verbose, or evaluation.json's failed_runs, lists every one)" if left else None
    return runs, more


def failed_run_lines(ev: Evaluation, limit: int | None = SHOWN_FAILED, indent: str = "    ") -> list[str]:
    """One line per failed run, each followed by its stderr's last lines indented; then the count of the rest."""
    runs, more = failed_runs_shown(ev, limit)
    out: list[str] = []
    for f in runs:
        out.append(failed_run_head(f))
        out += [f"{indent}stderr: {line}" for line in f.stderr_tail]
    return out + ([more] if more else [])


def failed_cells(ev: Evaluation) -> dict[str, int]:
    """Arm -> how many of its cells hold only failed runs (excluded from the per-arm table)."""
    cells: dict[str, set[tuple[str, int]]] = {}
    for f in ev.failed_runs:
        if not f.cell_complete:
            cells.setdefault(f.arm, set()).add((repr(sorted(f.stratum.items())), f.replicate))
    return {arm: len(keys) for arm, keys in cells.items()}


def metric_label(m: DescriptiveMetric) -> tuple[str, str]:
    """``("lost_steps", "steps; no gate")``, ``("value", "nats; gate offset")``, ``("extra", "undeclared")``."""
    if not m.declared:
        return m.metric, "undeclared"
    use = f"gate{'s' if len(m.gates) > 1 else ''} {', '.join(m.gates)}" if m.gates else "no gate"
    return m.metric, f"{m.unit}; {use}"


def summary_cells(s: ArmSummary, failed: int = 0) -> list[str]:
    """n, mean, median, sd, min - max of one arm, as text (n says what was left out)."""
    left = [
        f"{s.non_finite} not a finite number" if s.non_finite else "",
        f"{s.missing} missing" if s.missing else "",
        f"{failed} failed" if failed else "",
    ]
    extra = ", ".join(x for x in left if x)
    n = f"{s.n}" + (f" ({extra})" if extra else "")
    if s.n == 0:
        return [n, "n/a", "n/a", "n/a", "n/a"]
    span = f"{fmt_num(s.min)} - {fmt_num(s.max)}"
    return [n, fmt_num(s.mean), fmt_num(s.median), fmt_num(s.sd) if s.sd is not None else "n/a", span]


def descriptive_rows(ev: Evaluation) -> list[tuple[DescriptiveMetric, list[list[str]]]]:
    """Per metric, one row per arm: [arm, n, mean, median, sd, min - max]."""
    failed = failed_cells(ev)
    out = []
    for m in ev.descriptive_metrics:
        rows = [[arm, *summary_cells(s, failed.get(arm, 0) if m.declared else 0)] for arm, s in m.arms.items()]
        out.append((m, rows))
    return out


def descriptive_note(ev: Evaluation) -> str:
    """What the table is and is not, in one sentence."""
    undeclared = any(not m.declared for m in ev.descriptive_metrics)
    return (
        "Descriptive, not a test: each arm's matched complete runs (calibration and control strata included); "
        "failed runs are excluded (counted beside n); sd is the sample standard deviation. Only the gates "
        "analyse; a metric with no gate is described here alone"
        + (
            "; an undeclared metric was written by the program but not declared by the plan: kept, never analysed."
            if undeclared
            else "."
        )
    )


__all__ = [
    "DESCRIPTIVE_COLUMNS",
    "DESCRIPTIVE_TITLE",
    "FAILED_TITLE",
    "descriptive_note",
    "descriptive_rows",
    "failed_run_head",
    "failed_run_lines",
    "failed_runs_shown",
    "metric_label",
    "summary_cells",
]
