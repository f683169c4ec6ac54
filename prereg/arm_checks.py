"""Checks of the plan's ``arms:`` that a single arm cannot see: A/A pairs (``control_of``).

An arm whose settings hold ``control_of: <arm>`` is a *control copy* of that arm: the same
configuration under a second name (an A/A pair). ``gates evaluate`` analyses each pair like a gate
whose expected difference is zero and refuses the decision when the pair differs
(:mod:`gates.aa_pairs`). ``control_of`` is a declaration, never a program parameter: the collectors
run a control copy with :func:`arm_params`, its settings without that key, so both arms of a pair
run with the same parameters.
"""

from __future__ import annotations

from typing import Any

from prereg.schema import Gate, Plan
from prereg.schema_types import Scalar, level_key

Problem = tuple[tuple[Any, ...], str]

#: the arm setting that declares an A/A pair
CONTROL_OF = "control_of"


def arm_params(settings: dict[str, Scalar]) -> dict[str, Scalar]:
    """An arm's settings as the program sees them: without ``control_of`` (a declaration, not a parameter)."""
    return {k: v for k, v in settings.items() if k != CONTROL_OF}


def aa_pairs(plan: Plan) -> list[tuple[str, str]]:
    """The plan's A/A pairs ``(control copy, original)`` in the order the arms are listed (declarations
    whose original is not a plain arm are left out: :func:`aa_problems` refuses them at freeze)."""
    pairs = []
    for arm, settings in plan.arms.items():
        original = settings.get(CONTROL_OF)
        if isinstance(original, str) and original in plan.arms and original != arm:
            if CONTROL_OF not in plan.arms[original]:
                pairs.append((arm, original))
    return pairs


def aa_checks(plan: Plan) -> list[tuple[str, str, list[Gate]]]:
    """``(control, original, the primary gates one check mirrors)`` for every A/A pair and every distinct
    primary gate (metric, scale, method, confidence, resamples, seed), in plan order: the checks
    ``gates.aa_pairs`` makes, each at confidence ``1 - (1 - c) / len(checks)``."""
    groups: dict[tuple[Any, ...], list[Gate]] = {}
    for gate in plan.gates:
        if gate.role == "primary":
            key = (gate.metric, gate.contrast.scale, gate.method, gate.confidence, gate.resamples, gate.seed)
            groups.setdefault(key, []).append(gate)
    return [(control, original, gates) for control, original in aa_pairs(plan) for gates in groups.values()]


def aa_power_problems(plan: Plan) -> list[Problem]:
    """A/A checks that the plan's units can never compute (the gates' level split over the checks needs
    more units than the gate itself): each refused at freeze, since it would refuse every decision."""
    from estimators.feasibility import insufficient_blocks  # lazy: numpy

    checks = aa_checks(plan)
    units = len(plan.pairing_strata()) * (plan.strata.replicates if plan.strata.analysis_unit == "replicate" else 1)
    words = "replicate pairs" if plan.strata.analysis_unit == "replicate" else "pairing strata"
    problems: list[Problem] = []
    for control, _, gates in checks:
        gate = gates[0]
        confidence = 1 - (1 - gate.confidence) / len(checks)
        why = insufficient_blocks(gate.method, confidence, units, gate.resamples, words)
        if why:
            split = f", the gates' level split over the plan's {len(checks)} A/A checks" if len(checks) > 1 else ""
            problems.append(
                (
                    ("arms", control, CONTROL_OF),
                    f"the A/A check of {control!r} on {gate.metric} (as gate {gate.id!r}{split}) cannot be "
                    f"computed: {why}",
                )
            )
    return problems


def _differing(copy: dict[str, Scalar], original: dict[str, Scalar]) -> list[str]:
    """The parameters whose values differ (type-aware: ``1``, ``1.0`` and ``true`` differ), sorted."""
    a, b = arm_params(copy), arm_params(original)
    names = sorted(set(a) | set(b))
    return [n for n in names if n not in a or n not in b or level_key(a[n]) != level_key(b[n])]


def _value(settings: dict[str, Scalar], name: str) -> str:
    return repr(settings[name]) if name in settings else "(not set)"


def aa_problems(plan: Plan) -> list[Problem]:
    """Problems of the plan's A/A pairs (an arm whose parameters hold ``control_of: <arm>``): the named
    arm must exist, be another arm and not itself a control copy; every other parameter must equal the
    original's; a control copy may not enter a primary gate's contrast or the comparator (its only use is
    the A/A check)."""
    problems: list[Problem] = []
    copies: dict[str, str] = {}
    for arm, settings in plan.arms.items():
        if CONTROL_OF not in settings:
            continue
        path = ("arms", arm, CONTROL_OF)
        original = settings[CONTROL_OF]
        if not isinstance(original, str):
            problems.append((path, f"control_of names an arm (a string), not {original!r}"))
        elif original == arm:
            problems.append((path, f"arm {arm!r} cannot be a control copy of itself"))
        elif original not in plan.arms:
            problems.append((path, f"unknown arm {original!r}; arms: {', '.join(a for a in plan.arms if a != arm)}"))
        elif CONTROL_OF in plan.arms[original]:
            problems.append(
                (
                    path,
                    f"arm {original!r} is itself a control copy (of {plan.arms[original][CONTROL_OF]!r}); "
                    f"name the original arm: control copies do not chain",
                )
            )
        else:
            copies[arm] = original
            differ = _differing(settings, plan.arms[original])
            if differ:
                name = differ[0]
                more = f" (and {', '.join(differ[1:])})" if differ[1:] else ""
                problems.append(
                    (
                        ("arms", arm, name) if name in settings else path,
                        f"arm {arm!r} is declared a control copy of {original!r} but parameter {name!r} "
                        f"differs ({arm}: {_value(settings, name)}, {original}: {_value(plan.arms[original], name)})"
                        f"{more}; an A/A pair runs the same configuration under two names",
                    )
                )
    for i, gate in enumerate(plan.gates):
        used = [a for a in gate.contrast.arms if a in copies]
        if gate.role == "primary" and used:
            problems.append(
                (
                    ("gates", i, "contrast"),
                    f"gate {gate.id!r} compares arm {used[0]!r}, a control copy of {copies[used[0]]!r}: a control "
                    "copy only checks the pipeline (the A/A check); it cannot decide the claim",
                )
            )
    if plan.comparator is not None:
        rule = plan.comparator
        for key, arms in (("candidates", rule.candidates), ("challenger", [rule.challenger])):
            for j, arm in enumerate(arms):
                if arm in copies:
                    where = ("comparator", key, j) if key == "candidates" else ("comparator", key)
                    problems.append((where, f"arm {arm!r} is a control copy of {copies[arm]!r}: it cannot be compared"))
    return problems or aa_power_problems(plan)


__all__ = ["CONTROL_OF", "aa_checks", "aa_pairs", "aa_power_problems", "aa_problems", "arm_params"]
