"""What each run needs to be placed: ``experiment.resources`` of a ``prereg/v1`` plan.

More in ``docs/internals.md``.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from prereg.schema_types import Identifier, Scalar, StrictModel, level_key

MAX_AMOUNT = 1_000_000.0  # of any resource: more is a typo


class ResourceAmounts(StrictModel):
    """Amounts of resources; a field left out takes the default (top level) or is left as it was (override)."""

    num_cpus: float | int | None = Field(
        default=None, ge=0, le=MAX_AMOUNT, description="CPUs each run holds (default 1; 0 for a run that only waits)."
    )
    num_gpus: float | int | None = Field(
        default=None, ge=0, le=MAX_AMOUNT, description="GPUs each run holds (default 0; a fraction shares one GPU)."
    )
    custom: dict[Identifier, float | int] | None = Field(
        default=None, description="Ray custom resource name -> amount each run holds (e.g. {site_a: 1})."
    )


class ResourceOverride(ResourceAmounts):
    """Amounts for the runs of the cells ``when`` selects."""

    when: dict[Identifier, Scalar] = Field(
        min_length=1, description="Stratum factor -> level, and/or 'arm' -> arm name: the cells this applies to."
    )


class Resources(ResourceAmounts):
    """``experiment.resources``: what each run needs, per cell if overrides say so."""

    overrides: list[ResourceOverride] = Field(
        default_factory=list, max_length=1000, description="Per-cell amounts, later entries winning."
    )


DEFAULT_DEMAND: dict[str, Any] = {"num_cpus": 1.0, "num_gpus": 0.0, "custom": {}}


def _apply(demand: dict[str, Any], amounts: ResourceAmounts) -> None:
    if amounts.num_cpus is not None:
        demand["num_cpus"] = float(amounts.num_cpus)
    if amounts.num_gpus is not None:
        demand["num_gpus"] = float(amounts.num_gpus)
    if amounts.custom is not None:
        demand["custom"] = {**demand["custom"], **{k: float(v) for k, v in amounts.custom.items()}}


def _matches(when: dict[str, Scalar], stratum: dict[str, Scalar], arm: str) -> bool:
    for key, value in when.items():
        if key == "arm":
            if value != arm:
                return False
        elif key not in stratum or level_key(stratum[key]) != level_key(value):
            return False
    return True


def run_demand(resources: Resources | None, stratum: dict[str, Scalar], arm: str) -> dict[str, Any]:
    """One cell's demand ``{num_cpus, num_gpus, custom}`` (floats): defaults, the top level, then each
    matching override in order. A custom amount of 0 is dropped (it asks for nothing)."""
    demand: dict[str, Any] = {**DEFAULT_DEMAND, "custom": {}}
    if resources is not None:
        _apply(demand, resources)
        for override in resources.overrides:
            if _matches(override.when, stratum, arm):
                _apply(demand, override)
    demand["custom"] = {k: v for k, v in sorted(demand["custom"].items()) if v > 0}
    return demand


def resource_problems(
    resources: Resources | None, factors: dict[str, list[Scalar]], arms: list[str]
) -> list[tuple[tuple[Any, ...], str]]:
    """Cross-references of ``experiment.resources``: each ``when`` key a factor or ``arm``, each value one
    of its levels or arms; no factor named ``arm`` (it would be ambiguous). ``(path, message)`` pairs."""
    problems: list[tuple[tuple[Any, ...], str]] = []
    if resources is None:
        return problems
    base = ("experiment", "resources")
    if resources.overrides and "arm" in factors:
        problems.append(
            (
                (*base, "overrides"),
                "a stratum factor is named 'arm': 'when: {arm: ...}' would be ambiguous; rename the factor",
            )
        )
    for i, override in enumerate(resources.overrides):
        for key, value in override.when.items():
            path = (*base, "overrides", i, "when", key)
            if key == "arm":
                if value not in arms:
                    problems.append((path, f"unknown arm {value!r}; known: {', '.join(arms)}"))
            elif key not in factors:
                problems.append(
                    (
                        path,
                        f"unknown factor {key!r}; 'when' names a stratum factor or 'arm' "
                        f"(factors: {', '.join(sorted(factors))})",
                    )
                )
            elif level_key(value) not in {level_key(v) for v in factors[key]}:
                problems.append((path, f"{value!r} is not a level of factor {key!r}"))
        if override.num_cpus is None and override.num_gpus is None and override.custom is None:
            problems.append(((*base, "overrides", i), "this override sets no amount (num_cpus, num_gpus or custom)"))
    return problems


__all__ = ["DEFAULT_DEMAND", "ResourceAmounts", "ResourceOverride", "Resources", "resource_problems", "run_demand"]
