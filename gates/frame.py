"""An evaluation as a table: one row per gate, for notebooks (``Evaluation.to_frame``).

More in ``docs/internals.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gates.numbers import as_float
from prereg.errors import InputError

if TYPE_CHECKING:
    from gates.artifact import Evaluation

#: the columns of :func:`evaluation_frame`, in order
COLUMNS = (
    "id",
    "verdict",
    "estimate",
    "lower",
    "upper",
    "confidence",
    "method",
    "n_pairs",
    "pvalue",
    "pvalue_adjusted",
    "metric",
    "unit",
    "contrast",
    "scale",
    "role",
    "group",
    "rule",
    "margin",
    "evidence",
    "refused_by",
    "notes",
)


def gate_rows(ev: Evaluation) -> list[dict[str, Any]]:
    """One plain dict per gate, keys :data:`COLUMNS` (no pandas needed)."""
    rows = []
    for g in ev.gates:
        rows.append(
            {
                "id": g.id,
                "verdict": g.verdict,
                "estimate": as_float(g.estimate),
                "lower": as_float(g.lower),
                "upper": as_float(g.upper),
                "confidence": g.confidence,
                "method": g.method,
                "n_pairs": g.n_pairs,
                "pvalue": g.pvalue,
                "pvalue_adjusted": g.pvalue_adjusted,
                "metric": g.metric,
                "unit": g.unit,
                "contrast": g.contrast,
                "scale": g.scale,
                "role": g.role,
                "group": g.group,
                "rule": str(g.rule),
                "margin": list(g.margin),
                "evidence": g.evidence,
                "refused_by": [r.model_dump() for r in g.refused_by],
                "notes": list(g.notes),
            }
        )
    return rows


def evaluation_frame(ev: Evaluation) -> Any:
    """A pandas DataFrame of :func:`gate_rows` (columns :data:`COLUMNS`, one row per gate)."""
    try:
        import pandas as pd  # lazy: pandas
    except ImportError:
        raise InputError(
            "Evaluation.to_frame needs pandas, which is not installed: pip install pandas "
            "(or the toolkit's extra: pip install -e '.[pandas]')"
        ) from None
    return pd.DataFrame(gate_rows(ev), columns=list(COLUMNS))
