"""Evaluating a monitored plan at a point of its frozen run order: a planned look or an interim reading.

More in ``docs/internals.md``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from collect.ledger.columns import LedgerColumns
from collect.ledger.looks import LookRecord
from collect.ledger.store import GENESIS, Ledger
from gates.after_stop import ESTIMATES_NOTE, STOPS, after_stop_estimate, record_intervals, repeated_intervals
from gates.artifact_monitoring import GateLooks, LookBoundary, LookEntry, MonitoringResult
from gates.caveats import data_warned
from gates.matching import Match, stratum_key
from gates.numbers import encode_number
from gates.refusal import Refusal
from prereg.monitoring import LookLevel, look_levels, pairing_blocks_in, run_order
from prereg.schema import Plan


@dataclass
class LookPoint:
    """Where an evaluation of a monitored plan stands (module doc)."""

    plan: Plan  # as frozen
    order: list[dict[str, Any]]
    prefix: int  # strata of ``order`` evaluated
    point_blocks: int
    look: int | None  # the planned look (1-based) the point is
    levels_from: int  # the planned look whose levels the gates use (1-based)
    levels: dict[str, list[LookLevel]]  # primary gate id -> its levels at every look
    history: list[LookRecord] = field(default_factory=list)
    stopped: LookRecord | None = None  # an earlier look that stopped the study for success

    @property
    def status(self) -> str:
        """``decision`` at a planned look (before any stop for success), else ``interim_reading``."""
        return "decision" if self.look is not None and self.stopped is None else "interim_reading"

    @property
    def keys(self) -> set[tuple[str, ...]]:
        """The stratum keys (``gates.matching.stratum_key``) of the evaluated prefix."""
        return {k for s in self.order[: self.prefix] if (k := stratum_key(self.plan, s)) is not None}


def locate(plan: Plan, plan_sha256: str, ledger: Ledger | LedgerColumns, history: list[LookRecord]) -> LookPoint:
    """The point of ``ledger`` on a monitored plan's run order, and the levels the gates use there."""
    monitoring = plan.monitoring
    assert monitoring is not None
    order = run_order(plan)
    position = {stratum_key(plan, s): i for i, s in enumerate(order)}
    last = -1
    for record in ledger.records:
        if record.prereg_sha256 == plan_sha256:
            index = position.get(stratum_key(plan, record.stratum))
            if index is not None:
                last = max(last, index)
    prefix = last + 1
    blocks = pairing_blocks_in(plan, order[:prefix])
    looks = monitoring.looks
    look = looks.index(blocks) + 1 if blocks in looks else None
    levels_from = look or next((k + 1 for k, n in enumerate(looks) if n >= blocks), len(looks))
    levels = {g.id: look_levels(plan, g) for g in plan.gates if g.role == "primary" and g.pass_if.tested}
    mine = [r for r in history if r.prereg_sha256 == plan_sha256]
    # a look that stopped the study for success: an evaluation past it decides nothing (the same look again,
    # on the same prefix, repeats its decision)
    stopped = next(
        (r for r in mine if r.status == "decision" and r.action == "stop_success" and r.point_blocks < blocks), None
    )
    return LookPoint(plan, order, prefix, blocks, look, levels_from, levels, history, stopped)


def restrict(point: LookPoint, match: Match) -> Match:
    """The match limited to the evaluated prefix: strata the order has not reached are not missing."""
    keys = point.keys
    return match.subset(lambda st: isinstance(st, dict) and stratum_key(point.plan, st) in keys)


def plan_at(point: LookPoint) -> Plan:
    """The plan with each primary gate's confidence set to ``1 - 2 * nominal_alpha`` of the look whose
    levels apply (so its rule p-value must clear that level; multiplicity composes with it)."""
    k = point.levels_from - 1

    def at(level: LookLevel) -> float:
        return level.confidence if level.confidence is not None else 1 - 2 * level.nominal_alpha

    gates = [
        g.model_copy(update={"confidence": at(point.levels[g.id][k])}) if g.id in point.levels else g
        for g in point.plan.gates
    ]
    return point.plan.model_copy(update={"gates": gates})


def _futile(point: LookPoint, outcomes: list[Any]) -> list[str]:
    """Primary gates above their non-binding futility bound at this look."""
    assert point.plan.monitoring is not None
    if point.plan.monitoring.futility != "nonbinding" or point.look is None:
        return []
    out = []
    for o in outcomes:
        levels = point.levels.get(o.gate.id)
        bound = levels[point.look - 1].futility_p if levels else None
        if bound is not None and o.pvalue is not None and o.pvalue > bound:
            out.append(o.gate.id)
    return out


def _runs_in(plan: Plan, strata: int) -> int:
    return strata * plan.strata.replicates * len(plan.arms)


def conclude(
    point: LookPoint, outcomes: list[Any], decision: str, reason: str
) -> tuple[str, str, list[Refusal], MonitoringResult]:
    """The decision, its reason, the refusals this point adds (an interim reading's) and the
    artifact's ``monitoring`` section (``sequence``: set by the caller before it is recorded)."""
    monitoring = point.plan.monitoring
    assert monitoring is not None
    looks, total = monitoring.looks, monitoring.looks[-1]
    refusals: list[Refusal] = []
    futile = _futile(point, outcomes) if point.status == "decision" else []
    warned = [o.gate.id for o in outcomes if o.gate.role == "primary" and data_warned(o.warnings)]
    where = f"{point.point_blocks} of {total} blocks"
    if point.status == "interim_reading":
        action = "none"
        if point.stopped is not None:
            why = (
                f"the study already stopped for success at look {point.stopped.look} (look record "
                f"{point.stopped.seq}); an evaluation after the stop decides nothing"
            )
        else:
            why = (
                f"{where} is not a planned look ({', '.join(map(str, looks))}); the gates are read against "
                f"look {point.levels_from}'s levels only to show where they stand"
            )
        words = f"interim reading, not a decision: {why}"
        refusals.append(Refusal(kind="interim", reason=words))
    else:
        assert point.look is not None
        head = f"look {point.look} of {len(looks)} ({where})"
        if point.look == len(looks):
            action, words = "final", f"{head}: the final look, decided with the alpha spent over all looks"
        elif decision == "supported" and warned:
            action, decision = "continue", "not_supported"
            words = (
                f"{head}: the gates pass with the alpha spent so far, but gate(s) {', '.join(warned)} warn of "
                "skewed or rare-event contrasts, which a small sample understates: a warned pass does not stop "
                f"the study; the plan continues to look {point.look + 1} ({looks[point.look]} blocks)"
            )
        elif decision == "supported":
            action, words = (
                "stop_success",
                f"{head}: supported with the alpha spent so far; the study stops for success",
            )
        elif futile and decision != "refused":
            action = "stop_futility"
            words = (
                f"{head}: gate(s) {', '.join(futile)} above the non-binding futility bound; the study stops for "
                "futility (not supported)"
            )
        else:
            action = "continue"
            words = (
                f"{head}: {decision.replace('_', ' ')} at the alpha spent so far; the plan continues to look "
                f"{point.look + 1} ({looks[point.look]} blocks)"
            )
        reason = f"{words}; {reason}"
    runs_planned = _runs_in(point.plan, len(point.order))
    runs_evaluated = _runs_in(point.plan, point.prefix)
    result = MonitoringResult(
        looks=list(looks),
        spending=monitoring.spending,
        futility=monitoring.futility,
        status=point.status,
        look=point.look,
        point_blocks=point.point_blocks,
        total_blocks=total,
        levels_from_look=point.levels_from,
        action=action,
        reason=words,
        strata_evaluated=point.prefix,
        strata_total=len(point.order),
        runs_evaluated=runs_evaluated,
        runs_planned=runs_planned,
        runs_saved=runs_planned - runs_evaluated if action.startswith("stop_") else 0,
        sequence=len(point.history) + 1,
        history=[
            LookEntry(
                seq=r.seq,
                evaluated_at=r.evaluated_at,
                look=r.look,
                status=r.status,
                point_blocks=r.point_blocks,
                decision=r.decision,
                action=r.action,
                ledger_records=r.ledger_records,
                pvalues=dict(r.pvalue),
                intervals=dict(r.interval or {}),
            )
            for r in point.history
        ],
        gates=[_gate_looks(point, o, futile, action) for o in outcomes if o.gate.id in point.levels],
        sensitivity_note=(
            "sensitivity gates decide nothing: they are read at their frozen confidence at every look"
            if any(g.role == "sensitivity" for g in point.plan.gates)
            else None
        ),
        estimates_note=ESTIMATES_NOTE if point.levels else None,
    )
    return decision, reason, refusals, result


def settle(result: MonitoringResult | None, decision: str) -> MonitoringResult | None:
    """A stop for success that the final decision does not bear out (refused after the gates: a seal,
    the time order, the code identity) is no stop: the plan continues."""
    if result is None or result.action != "stop_success" or decision == "supported":
        return result
    assert result.look is not None
    gates = [g.model_copy(update={"after_stop": None, "after_stop_note": None}) for g in result.gates]
    return result.model_copy(
        update={
            "gates": gates,
            "action": "continue",
            "runs_saved": 0,
            "reason": (
                f"look {result.look} of {len(result.looks)}: the gates passed but the decision was refused; the plan "
                f"continues to look {result.look + 1}"
            ),
        }
    )


def _gate_looks(point: LookPoint, outcome: Any, futile: list[str], action: str) -> GateLooks:
    gate = next(g for g in point.plan.gates if g.id == outcome.gate.id)
    levels = point.levels[gate.id]
    look = point.look if point.status == "decision" else None
    estimate, note = after_stop_estimate(gate, levels, look, outcome) if look and action in STOPS else (None, None)
    return GateLooks(
        id=gate.id,
        method=gate.method,
        alpha=(1 - gate.confidence) / 2,
        kind=levels[0].kind if levels and levels[0].kind in ("boundary", "anytime") else "increment",
        looks=[
            LookBoundary(
                look=lv.look,
                blocks=lv.blocks,
                fraction=lv.fraction,
                nominal_alpha=lv.nominal_alpha,
                cumulative_alpha=lv.cumulative_alpha,
                z_bound=encode_number(lv.z_bound) if lv.z_bound is not None else None,
                futility_p=lv.futility_p,
            )
            for lv in levels
        ],
        pvalue=outcome.pvalue,
        futile=gate.id in futile,
        repeated_intervals=repeated_intervals(point.history, levels, gate.id, look, outcome),
        after_stop=estimate,
        after_stop_note=note,
    )


def look_fields(
    result: MonitoringResult,
    gates: list[Any],
    decision: str,
    ledger: Ledger | LedgerColumns,
    plan_sha256: str,
    seal: str | None,
    evaluated_at: str,
) -> dict[str, Any]:
    """The look record of an evaluation (``collect.ledger.looks.append_look``'s ``fields``; ``gates``:
    the artifact's gate results)."""
    k = result.levels_from_look - 1
    return {
        "evaluated_at": evaluated_at,
        "prereg_sha256": plan_sha256,
        "lock_seal": seal,
        "ledger_head": ledger.hashes[-1] if ledger.hashes else GENESIS,
        "ledger_records": len(ledger.records),
        "point_blocks": result.point_blocks,
        "blocks": {g.id: g.n_pairs for g in gates},
        "look": result.look if result.status == "decision" else None,
        "status": result.status,
        "decision": decision,
        "action": result.action,
        "nominal_alpha": {g.id: g.looks[k].nominal_alpha for g in result.gates},
        "spent_alpha": {g.id: g.looks[k].cumulative_alpha for g in result.gates},
        "pvalue": {g.id: g.pvalue for g in result.gates if g.pvalue is not None},
        "interval": record_intervals({g.id for g in result.gates}, gates) if result.status == "decision" else None,
    }
