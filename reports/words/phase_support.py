"""The report's words on how well the meter resolved each phase (``Evaluation.phase_support``)."""

from __future__ import annotations

from gates.artifact import Evaluation, PhaseSupportRow

PHASE_ORDER = ("compute", "replay", "checkpoint", "restore", "stall", "idle")


def _order(row: PhaseSupportRow) -> tuple[str, int, str]:
    rank = PHASE_ORDER.index(row.phase) if row.phase in PHASE_ORDER else len(PHASE_ORDER)
    return row.signal, rank, row.phase


def support_sentence(rows: list[PhaseSupportRow]) -> str | None:
    """One sentence over the phases a ``counter_support`` invalidator named (None if none did)."""
    judged = [r for r in rows if r.enough is not None]
    if not judged:
        return None
    good = [f"{r.phase} ({r.signal})" for r in judged if r.enough]
    bad = [f"{r.phase} ({r.signal})" for r in judged if not r.enough]
    parts = []
    if good:
        parts.append(f"{', '.join(good)} phases have enough updates for their preregistered counter support")
    if bad:
        parts.append(f"{', '.join(bad)} phases do not: their energies are mostly power-range bounds")
    return "; ".join(parts) + "."


def phase_support_lines(ev: Evaluation) -> list[str]:
    """Plain lines: the sentence, then one line per signal and phase (empty without phase data)."""
    rows = sorted(ev.phase_support, key=_order)
    if not rows:
        return []
    lines = []
    sentence = support_sentence(rows)
    if sentence:
        lines.append(sentence)
    for r in rows:
        if r.runs == 0:
            lines.append(f"- {r.phase} ({r.signal}): never occurred ({r.runs_without} runs)")
            continue
        need = "" if r.required is None else (f"; required >= {r.required}: {'enough' if r.enough else 'NOT ENOUGH'}")
        absent = f"; absent in {r.runs_without} runs" if r.runs_without else ""
        duration = f", median {r.median_duration_ms:.4g} ms" if r.median_duration_ms is not None else ""
        lines.append(
            f"- {r.phase} ({r.signal}): {r.min_updates}-{r.max_updates} updates per run "
            f"(median {r.median_updates:g}) over {r.runs} runs{duration}{need}{absent}"
        )
    return lines
