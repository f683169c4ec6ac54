"""The words of a monitored plan's looks, shared by the terminal, Markdown and HTML reports.

More in ``docs/internals.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gates.artifact import Evaluation
    from gates.artifact_monitoring import MonitoringResult

INTERIM_WORD = "INTERIM READING (NOT A DECISION)"
ACTION_WORDS = {
    "stop_success": "stop for success",
    "stop_futility": "stop for futility (non-binding)",
    "continue": "continue to the next look",
    "final": "final look",
    "none": "no decision",
}
LOOK_COLUMNS = ["look", "blocks", "gate", "bound: nominal alpha", "spent", "futility p", "recorded"]
SHORT_ACTIONS = {
    "stop_success": "stop: success",
    "stop_futility": "stop: futility",
    "continue": "continue",
    "final": "final",
    "none": "-",
}


def status_word(ev: Evaluation) -> str | None:
    """``INTERIM READING (NOT A DECISION)`` for an interim reading, ``LOOK k OF K`` at a planned look,
    None for an unmonitored plan."""
    m = ev.monitoring
    if m is None:
        return None
    if m.status == "interim_reading":
        return INTERIM_WORD
    return f"LOOK {m.look} OF {len(m.looks)}"


def status_sentence(m: MonitoringResult) -> str:
    """The status and what the plan says now, in one sentence (with the runs a stop saved)."""
    saved = f"; {m.runs_saved} of {m.runs_planned} planned runs are not needed (saved)" if m.runs_saved else ""
    return (
        f"{m.reason} (point: {m.point_blocks} of {m.total_blocks} blocks, {m.strata_evaluated} of "
        f"{m.strata_total} strata in the frozen run order; {m.spending} spending, futility {m.futility}; "
        f"action: {ACTION_WORDS[m.action]}){saved}."
    )


def _fmt(x: float | None, digits: int = 3) -> str:
    if x is None:
        return "-"
    return f"{x:.{digits}g}"


def _recorded(m: MonitoringResult, look: int) -> str:
    """What the look ledger (and this evaluation) hold at a planned look."""
    words = []
    for entry in m.history:
        if entry.look == look and entry.status == "decision":
            words.append(f"#{entry.seq} {entry.decision.replace('_', ' ')}, {SHORT_ACTIONS[entry.action]}")
    if m.status == "decision" and m.look == look:
        words.append(f"#{m.sequence} (this) {SHORT_ACTIONS[m.action]}")
    elif m.status == "interim_reading" and m.levels_from_look == look:
        words.append(f"#{m.sequence} (this) interim reading at {m.point_blocks} blocks")
    return "; ".join(words) or "not yet"


def look_rows(m: MonitoringResult) -> list[list[str]]:
    """One row per planned look and primary gate (:data:`LOOK_COLUMNS`)."""
    rows = []
    for gate in m.gates:
        for b in gate.looks:
            bound = f"z >= {float(b.z_bound):.3f}: " if b.z_bound is not None else "increment: "
            rows.append(
                [
                    str(b.look),
                    str(b.blocks),
                    gate.id,
                    bound + _fmt(b.nominal_alpha),
                    _fmt(b.cumulative_alpha),
                    _fmt(b.futility_p),
                    _recorded(m, b.look),
                ]
            )
    return rows


def gate_lines(m: MonitoringResult) -> list[str]:
    """Per primary gate: its frozen alpha, how its looks spend it, and its p-value at this point; then
    the look ledger's head once this look is recorded (to publish with the ledger head)."""
    out = []
    for g in m.gates:
        basis = (
            "the group-sequential boundary on the information fractions"
            if g.kind == "boundary"
            else "the alpha increments of the spending (valid for any level-alpha test; conservative)"
        )
        level = next((b for b in g.looks if b.look == m.levels_from_look), None)
        here = (
            f"; here p = {_fmt(g.pvalue)} against {_fmt(level.nominal_alpha if level else None)}"
            if g.pvalue is not None
            else ""
        )
        futile = "; above its futility bound" if g.futile else ""
        out.append(
            f"gate {g.id} ({g.method}): one-sided alpha {g.alpha:.4g} spent over the looks by {basis}{here}{futile}"
        )
    if m.sensitivity_note:
        out.append(m.sensitivity_note)
    if m.looks_head:
        out.append(f"look ledger head with this look (look record {m.sequence}): {m.looks_head}")
    return out


def history_lines(m: MonitoringResult) -> list[str]:
    """The looks recorded before this evaluation, one line each."""
    out = []
    for e in m.history:
        what = (
            f"look {e.look}: {e.decision.replace('_', ' ')}, {ACTION_WORDS[e.action]}"
            if e.status == "decision"
            else f"interim reading at {e.point_blocks} blocks (not a decision)"
        )
        out.append(f"#{e.seq} {e.evaluated_at}: {what} ({e.ledger_records} runs seen)")
    return out


__all__ = [
    "ACTION_WORDS",
    "INTERIM_WORD",
    "LOOK_COLUMNS",
    "gate_lines",
    "history_lines",
    "look_rows",
    "status_sentence",
    "status_word",
]
