"""An evaluation as a small HTML table (what ``Evaluation._repr_html_`` shows in Jupyter).

Rules: every value from the artifact (title, study, ids, methods, notes...) passes through
``html.escape`` before it reaches the markup, so a gate id or title holding ``<script>`` shows as
text; the verdict and decision are printed in words (colour never carries them alone); the numbers
are those of the artifact, formatted, never recomputed. Standard library only.
"""

from __future__ import annotations

import html
import math
from typing import TYPE_CHECKING, Any

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


def _cell(text: Any, tag: str = "td") -> str:
    return f"<{tag}>{html.escape(str(text), quote=True)}</{tag}>"


def evaluation_html(ev: Evaluation) -> str:
    """The decision and one row per gate, as an HTML fragment with every value escaped."""
    head = "".join(_cell(h, "th") for h in _HEAD)
    rows = []
    for g in ev.gates:
        p_value = g.pvalue_adjusted if g.pvalue_adjusted is not None else g.pvalue
        cells = (
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
        rows.append("<tr>" + "".join(_cell(c) for c in cells) + "</tr>")
    title = html.escape(ev.title, quote=True)
    study = html.escape(ev.study, quote=True)
    decision = html.escape(ev.decision.replace("_", " ").upper(), quote=True)
    reason = html.escape(ev.decision_reason, quote=True)
    return (
        '<div class="prereg-evaluation">'
        f"<p><strong>{title}</strong> ({study})</p>"
        f"<p>decision: <strong>{decision}</strong>: {reason}</p>"
        f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
        "</div>"
    )
