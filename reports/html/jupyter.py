"""An evaluation as a small HTML table (what ``Evaluation._repr_html_`` shows in Jupyter).

Every value from the artifact is escaped by the template (``templates/jupyter.html``), so a gate
id or title holding ``<script>`` shows as text; verdict and decision are words; the numbers are
the artifact's, formatted, never recomputed.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from reports.html.render import macro

if TYPE_CHECKING:
    from gates.artifact import Evaluation

_HEAD = ("gate", "verdict", "estimate", "interval", "confidence", "method", "pairs", "p", "evidence")


def _num(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, str):  # "Infinity" / "-Infinity" as stored
        return value
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return f"{value:.4g}"


def evaluation_html(ev: Evaluation) -> str:
    """The decision and one row per gate, as an HTML fragment with every value escaped."""
    rows = []
    for g in ev.gates:
        p_value = g.pvalue_adjusted if g.pvalue_adjusted is not None else g.pvalue
        rows.append(
            (
                g.id,
                g.verdict.upper(),
                _num(g.estimate),
                f"[{_num(g.lower)}, {_num(g.upper)}]",
                f"{g.confidence:g}",
                g.method,
                g.n_pairs,
                _num(p_value),
                g.evidence,
            )
        )
    decision = ev.decision.replace("_", " ").upper()
    return str(macro("jupyter.html", "evaluation")(ev, decision, _HEAD, rows))
