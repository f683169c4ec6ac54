"""Why a controller study's decision is what it is: the pooled gates and every held-out family."""

from __future__ import annotations

from gates.artifact import Evaluation


def _primary_ids(gates: list, verdicts: tuple[str, ...]) -> list[str]:
    return [g.id for g in gates if g.role == "primary" and g.verdict in verdicts]


def families_explanation(ev: Evaluation) -> str:
    """One clause: what failed or was refused pooled and in which families (the claim needs all)."""
    n_primary = sum(g.role == "primary" for g in ev.gates)
    k = len(ev.families)
    word = {"refused": ("refused", "unresolvable"), "not_supported": ("fail",)}.get(ev.decision)
    if word is None:
        return f"all {n_primary} primary gates passed, pooled and in each of the {k} held-out families"
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
    return (f"primary gates {verb} -- " + "; ".join(parts) + f" ({len(hit)} of {k} held-out families; the claim needs "
            "the pooled gates and every family)")
