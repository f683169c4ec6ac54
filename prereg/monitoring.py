"""Interim looks of a monitored plan: the frozen run order, each look's strata, the freeze-time checks.

More in ``docs/internals.md``.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import lru_cache
from statistics import NormalDist
from typing import Any

from estimators.spending import information_fractions, parse_spending
from prereg.family_checks import power_problem
from prereg.jsoncodec import canonical_bytes
from prereg.schema import Plan, Scalar, level_key

Problem = tuple[tuple[Any, ...], str]


def units_per_stratum(plan: Plan) -> int:
    """Pairing blocks one pairing stratum gives each gate: its replicates with ``analysis_unit: replicate``, else 1."""
    return plan.strata.replicates if plan.strata.analysis_unit == "replicate" else 1


def stratum_id(stratum: dict[str, Scalar]) -> tuple[str, ...]:
    """A type-aware key of a stratum (factor order as written)."""
    return tuple(f"{name}={level_key(level)}" for name, level in stratum.items())


def run_order(plan: Plan) -> list[dict[str, Scalar]]:
    """Every stratum of a monitored plan in the order it is run (module doc)."""
    assert plan.monitoring is not None
    seed = plan.monitoring.seed
    pairing = plan.pairing_strata()
    pairing_ids = {stratum_id(s) for s in pairing}
    first = [s for s in plan.strata.enumerate() if stratum_id(s) not in pairing_ids]

    def key(item: tuple[int, dict[str, Scalar]]) -> tuple[str, int]:
        index, stratum = item
        return hashlib.sha256(canonical_bytes({"seed": seed, "stratum": stratum})).hexdigest(), index

    return first + [s for _, s in sorted(enumerate(pairing), key=key)]


def look_prefix(plan: Plan, order: list[dict[str, Scalar]], blocks: int) -> int:
    """How many strata of ``order`` (from the start) hold ``blocks`` pairing blocks; the whole order
    when it holds fewer."""
    pairing = {stratum_id(s) for s in plan.pairing_strata()}
    per, count = units_per_stratum(plan), 0
    for i, stratum in enumerate(order):
        if count >= blocks:
            return i
        if stratum_id(stratum) in pairing:
            count += per
    return len(order)


def pairing_blocks_in(plan: Plan, strata: list[dict[str, Scalar]]) -> int:
    """Pairing blocks per gate the given strata hold."""
    pairing = {stratum_id(s) for s in plan.pairing_strata()}
    return sum(units_per_stratum(plan) for s in strata if stratum_id(s) in pairing)


def _structure_problems(plan: Plan) -> list[Problem]:
    monitoring = plan.monitoring
    assert monitoring is not None
    path = ("monitoring",)
    problems: list[Problem] = []
    unsupported = [
        (
            "strata",
            "family_factor",
            plan.strata.family_factor is not None,
            "held-out families are judged one by one at the final evaluation",
        ),
        ("comparator", None, plan.comparator is not None, "the comparator is chosen once from every calibration run"),
        ("strata", "held_out", bool(plan.strata.held_out), "held-out strata are kept until the final evaluation"),
    ]
    for section, key, declared, why in unsupported:
        if declared:
            where = f"{section}.{key}" if key else section
            problems.append(
                (path, f"monitoring cannot be combined with '{where}' ({why}); run such a plan without interim looks")
            )
    if problems:
        return problems
    total = len(plan.pairing_strata()) * units_per_stratum(plan)
    unit = "replicate pairs" if plan.strata.analysis_unit == "replicate" else "pairing strata"
    if monitoring.looks[-1] != total:
        problems.append(
            (
                (*path, "looks", len(monitoring.looks) - 1),
                f"the last look must be the plan's full "
                f"{total} {unit} (complete pairing blocks per gate), not {monitoring.looks[-1]}",
            )
        )
    per = units_per_stratum(plan)
    for i, look in enumerate(monitoring.looks):
        if per > 1 and look % per:
            problems.append(
                (
                    (*path, "looks", i),
                    f"look {i + 1} at {look} replicate pairs does not fall on whole "
                    f"strata: every replicate of a stratum runs together, so a look is a multiple of "
                    f"{per}",
                )
            )
        elif look > total:
            problems.append(((*path, "looks", i), f"look {i + 1} at {look} blocks is beyond the plan's {total}"))
    return problems


def _power_problems(plan: Plan) -> list[Problem]:
    """A primary gate whose method could never pass at a look with the alpha spent there."""
    monitoring = plan.monitoring
    assert monitoring is not None
    unit = "pairing blocks"
    problems: list[Problem] = []
    for gate in plan.gates:
        if gate.role != "primary":
            continue
        levels = look_levels(plan, gate)
        for k, (look, level) in enumerate(zip(monitoring.looks, levels, strict=True)):
            if level.confidence is None:
                why: str | None = _unspendable(level.nominal_alpha)
            else:
                why = power_problem(plan, gate.model_copy(update={"confidence": level.confidence}), look, unit)
            if why:
                problems.append(
                    (
                        ("monitoring", "looks", k),
                        f"gate {gate.id!r} could never pass at look {k + 1} "
                        f"({look} blocks), where the {monitoring.spending} spending gives it the nominal "
                        f"one-sided level {level.nominal_alpha:.4g}: {why}; move the look later, spend "
                        "more alpha early, or drop it",
                    )
                )
                break
    return problems


def _unspendable(nominal_alpha: float) -> str:
    """Why a look without a confidence cannot pass (``estimators.look_levels.look_confidence``)."""
    if nominal_alpha <= 0:
        return "the spending releases no alpha at this look"
    return (
        "too little for any interval to be computed at it (1 - 2 x that level is 1 in double precision), "
        "so no data could pass it"
    )


def monitoring_problems(plan: Plan) -> list[Problem]:
    """Every problem of a monitored plan's ``monitoring:`` section (empty without one)."""
    if plan.monitoring is None:
        return []
    problems = _structure_problems(plan)
    return problems or _power_problems(plan)


__all__ = ["look_prefix", "monitoring_problems", "pairing_blocks_in", "run_order", "stratum_id", "units_per_stratum"]


@dataclass(frozen=True)
class LookLevel:
    """What one gate may use at one look (one-sided levels), from ``estimators.look_levels.gate_levels``.

    ``nominal_alpha``: the level its rule's p-value must clear at this look (``confidence`` = 1 - 2
    nominal_alpha, None when nothing is spent: the look cannot pass); ``cumulative_alpha``: the
    alpha the spending function has released up to and including it; ``z_bound``: the nominal level
    on the z scale, ``Phi^-1(1 - nominal_alpha)``, for the group-sequential ``boundary`` basis (None
    for ``increment``);
    ``futility_p``: with ``futility: nonbinding``, the rule p-value above which the gate is futile
    at this look (None: no futility stop); ``reason``: the basis in words."""

    look: int
    blocks: int
    fraction: float
    nominal_alpha: float
    confidence: float | None
    cumulative_alpha: float
    z_bound: float | None
    futility_p: float | None
    kind: str  # "boundary" (the group-sequential boundary), "increment" (alpha increments) or "anytime" (betting)
    reason: str


def gate_alpha(gate: Any) -> float:
    """A gate's one-sided level as frozen: (1 - confidence) / 2."""
    return (1 - gate.confidence) / 2


@lru_cache(maxsize=256)
def _levels(
    method: str, confidence: float, looks: tuple[int, ...], spending: str, futility: str
) -> tuple[LookLevel, ...]:
    from estimators.look_levels import gate_levels  # lazy: scipy

    alpha = (1 - confidence) / 2
    spent = parse_spending(spending).cumulative(information_fractions(looks), alpha)
    out = []
    for level, cumulative in zip(gate_levels(method, confidence, looks, spending, futility), spent, strict=True):
        # Phi^-1(1 - a) as -Phi^-1(a): exact in the far tail, where 1 - a rounds to 1
        z = (
            -NormalDist().inv_cdf(level.nominal_alpha)
            if level.basis == "boundary" and level.nominal_alpha > 0
            else None
        )
        out.append(
            LookLevel(
                look=level.look,
                blocks=int(level.blocks or 0),
                fraction=level.fraction,
                nominal_alpha=level.nominal_alpha,
                confidence=level.confidence,
                cumulative_alpha=alpha if level.basis == "anytime" else cumulative,
                z_bound=z,
                futility_p=level.futility_p if futility == "nonbinding" and level.look < len(looks) else None,
                kind=level.basis,
                reason=level.reason,
            )
        )
    return tuple(out)


def look_levels(plan: Plan, gate: Any) -> list[LookLevel]:
    """The per-look levels of ``gate`` (one per planned look) from its frozen alpha, its method and
    the plan's spending function (``estimators.look_levels.gate_levels``; cached per design)."""
    monitoring = plan.monitoring
    assert monitoring is not None
    return list(
        _levels(gate.method, gate.confidence, tuple(monitoring.looks), monitoring.spending, monitoring.futility)
    )
