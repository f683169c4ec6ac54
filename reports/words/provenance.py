"""The words of an evaluation's provenance: time order, the YAML beside the lock, controls, other plans.

Plain strings shared by the terminal and Markdown reports (nothing here draws or computes). Each
line is ``(label, text, alarm)``: ``alarm`` marks text a reviewer must not miss; the words say it
on their own, colour only repeats them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from reports.words.palette import DECISION_WORDS

if TYPE_CHECKING:
    from gates.artifact import Evaluation, GateResult

PRE_EXISTING = "ANALYSIS OF PRE-EXISTING DATA"
PREDECESSOR_WORDS = {"verified": "VERIFIED", "mismatch": "HASH MISMATCH", "missing": "MISSING"}
UNKNOWN_START = "start not recorded: that they followed the plan cannot be shown"


def _names(names: list[str], limit: int | None) -> str:
    shown = names if limit is None else names[:limit]
    more = len(names) - len(shown)
    return "; ".join(shown) + (f"; and {more} more (--verbose or the artifact lists all)" if more else "")


def provenance_lines(ev: Evaluation, limit: int | None = 5) -> list[tuple[str, str, bool]]:
    """Header lines: data and time order, the plan YAML notice, controls, runs of other plans."""
    lines: list[tuple[str, str, bool]] = []
    if ev.superseded_by:
        lines.append(
            (
                "Superseded",
                "this evaluation uses an EARLIER VERSION of the plan, later amended: " + "; ".join(ev.superseded_by),
                True,
            )
        )
    t = ev.time_order
    if t is not None:
        early = t.before_freeze + t.before_amendment
        if t.pre_existing:
            lines.append(
                (
                    "Data",
                    f'{PRE_EXISTING}: the plan declares that runs may predate it ("{t.reason}"); '
                    f"{len(early)} run(s) started before the plan version they are judged under",
                    True,
                )
            )
        elif early:
            lines.append(("Data", f"RUNS STARTED BEFORE THE PLAN: {_names(early, limit)}", True))
        elif len(t.unknown_start) < ev.runs.matched:
            lines.append(("Data", "every run with a recorded start began after the plan was frozen", False))
        if t.unknown_start:
            lines.append(
                (
                    "Data",
                    f"{len(t.unknown_start)} run(s) with the {UNKNOWN_START}: {_names(t.unknown_start, limit)}",
                    True,
                )
            )
        for problem in t.unreadable_start[: limit or None]:
            lines.append(("Data", problem, True))
    lines += code_identity_lines(ev)
    if ev.plan_yaml is not None and ev.plan_yaml.status != "matches":
        lines.append(("Plan YAML", ev.plan_yaml.notice, ev.plan_yaml.status in ("changed", "invalid")))
    if ev.controls is not None:
        how = (
            "ALSO give pairs to the gates (the plan says pair_controls: true)"
            if ev.controls.paired
            else "give no pairs to the gates (checked by invalidators only)"
        )
        lines.append(
            (
                "Controls",
                f"{len(ev.controls.blocks)} no-failure control block(s) {how}: {_names(ev.controls.blocks, limit)}",
                False,
            )
        )
    if ev.other_plan_note:
        lines.append(("Other plan", ev.other_plan_note, True))
    return lines


def code_identity_lines(ev: Evaluation) -> list[tuple[str, str, bool]]:
    """The 'Code' lines: whether the runs were made by the same code (``gates.code_identity``), one
    sentence, then its notes (imported runs not compared, a dirty working tree)."""
    c = ev.code_identity
    if c is None:
        return []
    differences = "; ".join(e.words() for e in c.examples)
    if c.status == "differs_declared":
        lines = [
            (
                "Code",
                f"CODE DIFFERED BETWEEN RUNS, AS THE PLAN DECLARES (may differ: {', '.join(c.declared)}): "
                f'{differences}; the plan\'s reason: "{c.reason}"',
                True,
            )
        ]
    elif c.status == "differs":
        lines = [("Code", f"CODE DIFFERS BETWEEN RUNS (the decision is refused): {differences}", True)]
    elif c.status == "same":
        lines = [
            (
                "Code",
                f"all {c.runs} run(s) with a code identity were made by the same code (compared: "
                f"{', '.join(c.compared) or 'nothing recorded'})",
                False,
            )
        ]
    else:
        lines = []
    mixed = bool(c.without_identity and c.runs)  # then the first note counts the runs not compared
    return lines + [("Code", note, mixed and i == 0) for i, note in enumerate(c.notes)]


def decision_flag(ev: Evaluation) -> str:
    """' (ANALYSIS OF PRE-EXISTING DATA)' after the decision word when the plan declared it, else ''."""
    return f" ({PRE_EXISTING})" if ev.time_order is not None and ev.time_order.pre_existing else ""


def evidence_words(gate: GateResult, words: dict[str, str]) -> str:
    """'modeled (simulator); plan declared measured' when the runs recorded a weaker class."""
    text = words[gate.evidence]
    if gate.evidence_declared and gate.evidence_declared != gate.evidence:
        text += f"; plan declared {gate.evidence_declared}, the runs recorded {gate.evidence}"
    return text


def direction_note(gate: GateResult) -> str | None:
    """A declared direction intent in words, or None."""
    if gate.direction == "first_arm_worse":
        first = gate.contrast.split("/")[0].split(" - ")[0].strip("() ")
        return (
            f"declared intent first_arm_worse: a pass shows {first} is WORSE by {gate.metric}, on purpose "
            "(the plan says so explicitly)"
        )
    return None


def predecessor_lines(ev: Evaluation) -> list[tuple[str, str]]:
    """(status word, 'path (sha256 abc...): changes; it recorded: ...') per predecessor."""
    out = []
    for p in ev.predecessors:
        line = f"{p.path} (sha256 {p.sha256[:12]}"
        line += f", the file now has {p.actual_sha256[:12]})" if p.actual_sha256 else ")"
        line += f": {' '.join(p.changes.split())}"
        if p.recorded_decision:
            when = f" on {p.recorded_at}" if p.recorded_at else ""
            line += f"; it recorded {DECISION_WORDS[p.recorded_decision]}{when}"
            line += f' for "{p.recorded_claim}"' if p.recorded_claim else ""
        elif p.recorded_note:
            line += f"; {p.recorded_note}"
        elif p.status == "missing":
            line += "; no recorded conclusion (the file is missing)"
        out.append((PREDECESSOR_WORDS[p.status], line))
    return out
