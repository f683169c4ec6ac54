"""Is an evaluation artifact consistent with itself? (``reports show`` refuses one that is not.)

More in ``docs/internals.md``.
"""

from __future__ import annotations

import math

from gates.artifact import Evaluation, GateResult, seal_status
from gates.caveats import CROSSED_NOTE, data_warned
from gates.numbers import as_float

_SLACK = 1e-9


def _lt(a: float, b: float) -> bool:
    """a < b beyond rounding."""
    return a < b - _SLACK * max(1.0, abs(a), abs(b))


def _rule_state(g: GateResult) -> str | None:
    """'holds' / 'fails' robustly on the stored numbers, 'edge' within rounding, None if unknown."""
    rule = g.rule
    lower, upper, estimate = as_float(g.lower), as_float(g.upper), as_float(g.estimate)
    if rule.quantity == "within":
        if lower is None or upper is None:
            return None
        a, b = rule.low, rule.high
        assert a is not None and b is not None
        if _lt(a, lower) and _lt(upper, b):
            return "holds"
        if _lt(lower, a) or _lt(b, upper):
            return "fails"
        return "edge"
    value = {"upper": upper, "lower": lower, "estimate": estimate}.get(rule.quantity)
    if value is None or math.isnan(value) or rule.threshold is None:
        return None
    x, op = rule.threshold, rule.op
    if op in ("<", "<="):
        return "holds" if _lt(value, x) else ("fails" if _lt(x, value) else "edge")
    if op in (">", ">="):
        return "holds" if _lt(x, value) else ("fails" if _lt(value, x) else "edge")
    return None


def _decision(ev: Evaluation) -> str:
    primary = [g for g in ev.gates if g.role == "primary"]
    if ev.decision_refused_by or any(g.verdict in ("refused", "unresolvable") for g in primary):
        return "refused"
    if any(g.verdict == "fail" for g in primary):
        return "not_supported"
    mon = ev.monitoring
    if (
        mon is not None
        and mon.status == "decision"
        and mon.look is not None
        and mon.look < len(mon.looks)
        and any(data_warned(g.warnings) for g in primary)
    ):
        return "not_supported"  # a warned pass at a look before the last does not stop the study (gates.looks)
    return "supported"


def consistency_problems(ev: Evaluation) -> list[str]:
    """Every way the artifact contradicts itself or its seal (empty: consistent)."""
    problems: list[str] = []
    if seal_status(ev) == "broken":
        problems.append("the artifact was changed after it was written (its seal_sha256 does not match)")
    expected = _decision(ev)
    if ev.decision != expected:
        problems.append(f"decision {ev.decision} contradicts the primary gates' verdicts (they give {expected})")
    fired = {i.id: i for i in ev.invalidators if i.fired}
    for g in ev.gates:
        who = f"gate {g.id}"
        lower, upper = as_float(g.lower), as_float(g.upper)
        crossed = g.method == "betting" and any(w.startswith(CROSSED_NOTE) for w in g.warnings)
        if lower is not None and upper is not None and _lt(upper, lower) and not crossed:
            problems.append(f"{who}: interval lower {lower} > upper {upper}")
        blockers = [i for i, inv in fired.items() if g.id in inv.blocks]
        if blockers and g.verdict != "refused":
            problems.append(f"{who}: verdict {g.verdict} although invalidator(s) {', '.join(blockers)} fired")
        if g.verdict == "refused" and not g.refused_by:
            problems.append(f"{who}: refused without a reason")
        if g.verdict != "refused" and g.refused_by:
            problems.append(f"{who}: verdict {g.verdict} although it lists refusal reasons")
        state = _rule_state(g)
        if g.verdict in ("pass", "vacuous") and state != "holds" and state != "edge":
            problems.append(
                f"{who}: verdict {g.verdict} but its rule '{g.rule}' does not hold on "
                f"[{g.lower}, {g.upper}] (estimate {g.estimate})"
            )
        demoted = ev.multiplicity != "none" and g.pvalue_adjusted is not None
        if g.verdict == "fail" and state == "holds" and not demoted:
            problems.append(f"{who}: verdict fail but its rule '{g.rule}' holds on [{g.lower}, {g.upper}]")
    if ev.runs.matched > ev.runs.planned:
        problems.append(f"{ev.runs.matched} runs matched of only {ev.runs.planned} planned")
    return problems + _aa_problems(ev)


def _aa_problems(ev: Evaluation) -> list[str]:
    """An A/A check whose verdict contradicts its interval, or that differs or is unchecked without the
    plan-level refusal it implies (gates.aa_pairs)."""
    problems = []
    kinds = {r.kind for r in ev.decision_refused_by}
    for r in ev.aa_pairs:
        who = f"A/A pair {r.control} on {r.metric}"
        lower, upper = as_float(r.lower), as_float(r.upper)
        if lower is not None and upper is not None and r.verdict != "unchecked":
            excludes = _lt(r.null, lower) or _lt(upper, r.null)
            contains = _lt(lower, r.null) and _lt(r.null, upper)
            if (r.verdict == "differs" and contains) or (r.verdict == "same" and excludes):
                problems.append(f"{who}: verdict {r.verdict} contradicts its interval [{r.lower}, {r.upper}]")
        needed = {"differs": "aa_difference", "unchecked": "aa_unchecked"}.get(r.verdict)
        if needed is not None and needed not in kinds:
            problems.append(f"{who}: verdict {r.verdict} without the decision refusal ({needed}) it implies")
    return problems
