"""The words of a monitored plan's looks, shared by the terminal, Markdown and HTML reports.

More in ``docs/internals.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from reports.words.evaluation import fmt_pct

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


#: the columns of :func:`interval_rows`
INTERVAL_COLUMNS = ["gate", "look", "blocks", "level (two-sided)", "estimate", "repeated interval", "from"]


def _num(x: float | str) -> str:
    return f"{float(x):.4g}"


def _level(nominal_alpha: float) -> str:
    """The two-sided level ``1 - 2 nominal_alpha`` in percent, 4 significant digits or as many as keep it
    below 100 (``95.47%``, ``99.998%``)."""
    return fmt_pct(1 - 2 * nominal_alpha)


def interval_rows(m: MonitoringResult) -> list[list[str]]:
    """One row per primary gate and planned look taken: its repeated confidence interval
    (:data:`INTERVAL_COLUMNS`, reported scale)."""
    rows = []
    for g in m.gates:
        for r in g.repeated_intervals:
            rows.append(
                [
                    g.id,
                    str(r.look),
                    str(r.blocks),
                    _level(r.nominal_alpha),
                    _num(r.estimate),
                    f"[{_num(r.lower)}, {_num(r.upper)}]",
                    r.source,
                ]
            )
    return rows


def after_stop_lines(m: MonitoringResult, intervals: bool = True) -> list[str]:
    """Per primary gate: its repeated intervals (``intervals``) and, at a stop for success or the final
    look, the stage-wise ordering p-value, the median-unbiased estimate and the final interval (or why
    they are not computed); then what they mean. Empty when there is nothing to say."""
    out = []
    for g in m.gates:
        if intervals and g.repeated_intervals:
            parts = [
                f"look {r.look} at {_level(r.nominal_alpha)}: [{_num(r.lower)}, {_num(r.upper)}]"
                for r in g.repeated_intervals
            ]
            out.append(f"gate {g.id} repeated confidence intervals: " + "; ".join(parts))
        a = g.after_stop
        if a is not None:
            out.append(
                f"gate {g.id} after the stop at look {a.stop_look}: stage-wise ordering p-value {a.ordering_pvalue:.3g} "
                f"against the rule's threshold {a.null:g}; median-unbiased estimate {_num(a.median_unbiased)} (the look's own "
                f"{_num(a.naive_estimate)}); {_level((1 - a.confidence) / 2)} final interval [{_num(a.final_lower)}, "
                f"{_num(a.final_upper)}]; the decision is the boundaries'"
            )
        elif g.after_stop_note:
            out.append(f"gate {g.id} after the stop: no ordering estimates: {g.after_stop_note}")
    if out and m.estimates_note:
        out.append(m.estimates_note[0].upper() + m.estimates_note[1:])
    return out


def gate_lines(m: MonitoringResult, estimates: bool = True) -> list[str]:
    """Per primary gate: its frozen alpha, how its looks spend it, and its p-value at this point; with
    ``estimates`` its repeated intervals and after-stop estimates (:func:`after_stop_lines`); then the
    look ledger's head once this look is recorded (to publish with the ledger head)."""
    return _gate_lines(m) + (after_stop_lines(m) if estimates else []) + _head_lines(m)


def _head_lines(m: MonitoringResult) -> list[str]:
    if m.looks_head:
        return [f"look ledger head with this look (look record {m.sequence}): {m.looks_head}"]
    return []


def _gate_lines(m: MonitoringResult) -> list[str]:
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
    "INTERVAL_COLUMNS",
    "INTERIM_WORD",
    "LOOK_COLUMNS",
    "after_stop_lines",
    "gate_lines",
    "interval_rows",
    "history_lines",
    "look_rows",
    "status_sentence",
    "status_word",
]
