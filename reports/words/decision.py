"""The decision in words: why it is what it is, the evidence it rests on, and the plan's scope.

Shared by the terminal, Markdown and HTML reports (built from :mod:`reports.words.evaluation`'s
vocabulary). For a plan with held-out families the explanation names what failed or was refused
pooled and in which families: the claim needs the pooled gates and every family.
"""

from __future__ import annotations

from gates.artifact import Evaluation
from reports.words import evaluation as et
from reports.words import provenance as pt
from reports.words.monitoring import INTERIM_WORD
from reports.words.palette import DECISION_WORDS

#: what a refusal of the A/A check means for the claim, after its own reason (gates.aa_pairs)
AA_MEANING = {
    "aa_difference": "two arms running the same configuration differ, so the measurement pipeline itself makes "
    "differences, and the gates' differences cannot be told from its own; find what differs between the two "
    "arms' runs (order, placement, warm-up, caching, logging) before reading any gate",
    "aa_unchecked": "the plan rests its claim on the A/A check, and without it the pipeline's own false-alarm "
    "rate is unmeasured",
}


def refusal_words(kind: str, reason: str) -> str:
    """A plan-level refusal in words: its reason, and for the A/A kinds what it means for the claim."""
    meaning = AA_MEANING.get(kind)
    return f"{reason} ({meaning})" if meaning else reason


def _gate_list(ids: list[str]) -> str:
    return ("gate " if len(ids) == 1 else "gates ") + ", ".join(ids)


def decision_explanation(ev: Evaluation) -> str:
    """Why the decision is what it is, in one clause built from the primary gates' verdicts."""
    primary = et.primary_gates(ev)
    n = len(primary)
    if ev.families and not ev.decision_refused_by:
        return families_explanation(ev)
    if ev.decision == "refused" and ev.other_plan_note and ev.runs.matched == 0 and not ev.decision_refused_by:
        return (
            "no claim either way: none of the runs in the ledger was collected under this plan version "
            "(see 'Other plan' for what happened and the next step)"
        )
    if ev.decision == "refused":
        parts = [refusal_words(r.kind, r.reason) for r in ev.decision_refused_by]
        for g in primary:
            if g.verdict == "refused":
                why = "; ".join(r.reason for r in g.refused_by) or "no reason recorded"
                parts.append(f"gate {g.id} was refused ({why})")
            elif g.verdict == "unresolvable":
                parts.append(f"gate {g.id} is unresolvable (the instrument cannot resolve its margin)")
        if not parts:
            return f"no claim either way: {ev.decision_reason}"
        return "no claim either way, because " + "; ".join(parts)
    if ev.decision == "not_supported":
        failed = [g.id for g in primary if g.verdict == "fail"]
        if not failed:
            return ev.decision_reason
        passed = sum(g.verdict in ("pass", "vacuous") for g in primary)
        return f"{_gate_list(failed)} failed ({passed} of {n} primary gates passed)"
    if any(g.verdict not in ("pass", "vacuous") for g in primary):  # an inconsistent artifact: say what it says
        return ev.decision_reason
    vacuous = sum(g.verdict == "vacuous" for g in primary)
    extra = f" ({vacuous} vacuous: could not have failed)" if vacuous else ""
    return f"all {n} primary gates passed{extra}"


def modeled_note(ev: Evaluation) -> str:
    """A sentence saying the claim rests on weaker-than-measured evidence, or ''."""
    classes = sorted({g.evidence for g in et.primary_gates(ev) if g.evidence != "measured"})
    if not classes:
        return ""
    return (
        "Evidence: this claim rests on "
        + ", ".join(et.EVIDENCE_WORDS[c] for c in classes)
        + " numbers, not measured ones only."
    )


def decision_sentence(ev: Evaluation) -> tuple[str, str]:
    """(decision word, the rest): 'SUPPORTED', ': "<claim>" — all 3 primary gates passed.'."""
    from gates.plausibility import decision_warning  # lazy: numpy

    explanation = decision_explanation(ev)
    if "WARNING:" not in explanation:  # a primary gate's likely unit mix-up is never left to the notes alone
        explanation += decision_warning(
            [(g.id, g.role, list(g.notes) + list(g.warnings)) for g in ev.gates],
            {g.id for g in ev.gates if g.verdict == "pass"},
        )
    rest = f': "{ev.claim.strip()}" {et.EM_DASH} {explanation}'
    if ev.monitoring is not None and ev.monitoring.status == "interim_reading":  # never a decision (gates.looks)
        return INTERIM_WORD + pt.decision_flag(ev), rest.rstrip(".") + "."
    return DECISION_WORDS[ev.decision] + pt.decision_flag(ev), rest.rstrip(".") + "."


def scope_text(ev: Evaluation) -> str:
    """The plan's scope line (or that it stated none)."""
    scope = " ".join(ev.scope.split()) if ev.scope else "none stated in the plan"
    return f"Scope (not covered by this evidence): {scope}"


def _primary_ids(gates: list, verdicts: tuple[str, ...]) -> list[str]:
    return [g.id for g in gates if g.role == "primary" and g.verdict in verdicts]


def families_explanation(ev: Evaluation) -> str:
    """One clause: what failed or was refused pooled and in which families (the claim needs all)."""
    n_primary = sum(g.role == "primary" for g in ev.gates)
    k = len(ev.families)
    word = {"refused": ("refused", "unresolvable"), "not_supported": ("fail",)}.get(ev.decision)
    if word is None:
        vacuous = [(f.family, _primary_ids(f.gates, ("vacuous",))) for f in ev.families]
        pooled_vacuous = _primary_ids(ev.gates, ("vacuous",))
        flags = ([f"pooled: {', '.join(pooled_vacuous)}"] if pooled_vacuous else []) + [
            f"family {fam}: {', '.join(ids)}" for fam, ids in vacuous if ids
        ]
        extra = f" (vacuous, could not have failed -- {'; '.join(flags)})" if flags else ""
        return f"all {n_primary} primary gates passed, pooled and in each of the {k} held-out families{extra}"
    parts = []
    pooled = _primary_ids(ev.gates, word)
    if pooled:
        parts.append(f"pooled: {', '.join(pooled)}")
    hit = [(f.family, _primary_ids(f.gates, word)) for f in ev.families]
    hit = [(fam, ids) for fam, ids in hit if ids]
    parts += [f"family {fam}: {', '.join(ids)}" for fam, ids in hit]
    if ev.comparator is not None and ev.comparator.arm is None:
        parts.insert(0, "no comparator could be chosen from the calibration runs")
    verb = "refused or unresolvable" if ev.decision == "refused" else "failed"
    if not parts:
        return ev.decision_reason
    return (
        f"primary gates {verb} -- " + "; ".join(parts) + f" ({len(hit)} of {k} held-out families; the claim needs "
        "the pooled gates and every family)"
    )
