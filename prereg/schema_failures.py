"""The plan's failures (``experiment.failures``): faults the collector puts into every run.

More in ``docs/internals.md``.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from prereg.schema_types import Identifier, Scalar, StrictModel

FACTOR_REF = re.compile(r"^\{([A-Za-z_][A-Za-z0-9_]*)\}$")
#: a number, or "{factor}": the stratum's level of a numeric factor
Number = float | int | Annotated[str, Field(pattern=FACTOR_REF.pattern)]
MAX_RESTARTS = 1000


class Failures(StrictModel):
    """Faults injected into every run of the selected strata (see the module doc)."""

    unit: Literal["step", "s"] = Field(
        default="step",
        description="'step': the program's reported progress (collect.marks.step); 's': wall "
        "seconds from the run's first start.",
    )
    at: list[Number] | None = Field(default=None, description="Fixed fault points, in 'unit'.")
    fractions: list[Number] | None = Field(
        default=None, description="Fault points as fractions in (0, 1) of 'horizon'."
    )
    poisson_rate: Number | None = Field(
        default=None,
        description="Faults per unit, drawn as a Poisson process over (0, horizon) from the stratum's seed (0: none).",
    )
    horizon: Number | None = Field(
        default=None, description="The run's length in 'unit' (needed by 'fractions' and 'poisson_rate')."
    )
    action: Literal["kill_tree", "kill_rank"] = Field(
        default="kill_tree",
        description="kill_tree: SIGKILL of the program's whole process tree; kill_rank: of the "
        "one process whose environment has RANK=<rank>.",
    )
    rank: int = Field(default=0, ge=0, description="kill_rank: the RANK of the process killed.")
    max_restarts: int = Field(
        default=10,
        ge=1,
        le=MAX_RESTARTS,
        description="At most this many faults (and restarts) per run; the schedule's later points are dropped.",
    )
    when: dict[Identifier, Annotated[list[Scalar], Field(min_length=1)]] | None = Field(
        default=None,
        description="Factor -> the levels whose strata meet faults; the other strata are controls "
        "(no fault). Absent: every stratum.",
    )

    @model_validator(mode="after")
    def _one_schedule(self) -> Failures:
        given = [name for name in ("at", "fractions", "poisson_rate") if getattr(self, name) is not None]
        if len(given) != 1:
            raise ValueError(
                "give exactly one schedule: 'at', 'fractions' or 'poisson_rate'"
                + (f" (got {', '.join(given)})" if given else "")
            )
        if given[0] != "at" and self.horizon is None:
            raise ValueError(f"'{given[0]}' needs 'horizon' (the run's length in {self.unit})")
        return self

    def factor_refs(self) -> dict[str, str]:
        """Field -> the factor a ``"{factor}"`` value names (``at[1]``, ``poisson_rate``, ...)."""
        refs: dict[str, str] = {}
        for name in ("at", "fractions"):
            for i, value in enumerate(getattr(self, name) or []):
                if isinstance(value, str):
                    refs[f"{name}[{i}]"] = _ref(value)
        for name in ("poisson_rate", "horizon"):
            value = getattr(self, name)
            if isinstance(value, str):
                refs[name] = _ref(value)
        return refs


def _ref(value: str) -> str:
    match = FACTOR_REF.match(value)
    assert match is not None  # the field's pattern
    return match.group(1)


def failure_problems(failures: Failures | None, factors: dict[str, list[Any]]) -> list[tuple[tuple[Any, ...], str]]:
    """Cross-reference problems: a ``"{factor}"`` naming no factor or one with a non-numeric level, a
    ``when`` naming an unknown factor or level, a fixed point out of range."""
    if failures is None:
        return []
    out: list[tuple[tuple[Any, ...], str]] = []
    where = ("experiment", "failures")
    for field, factor in failures.factor_refs().items():
        levels = factors.get(factor)
        if levels is None:
            out.append(
                (
                    (*where, field),
                    f"{field} names factor {factor!r}, which the strata do not have (factors: {', '.join(factors)})",
                )
            )
        elif any(isinstance(v, bool) or not isinstance(v, (int, float)) for v in levels):
            out.append(((*where, field), f"{field} names factor {factor!r}, whose levels are not all numbers"))
    for factor, levels in (failures.when or {}).items():
        known = factors.get(factor)
        if known is None:
            out.append(((*where, "when", factor), f"when names factor {factor!r}, which the strata do not have"))
        else:
            missing = [v for v in levels if v not in known]
            if missing:
                out.append(
                    ((*where, "when", factor), f"when: level(s) {missing} are not levels of {factor!r} ({known})")
                )
    for value in failures.fractions or []:
        if not isinstance(value, str) and not 0 < value < 1:
            out.append(((*where, "fractions"), f"fraction {value:g} must be in (0, 1)"))
    for value in failures.at or []:
        if not isinstance(value, str) and not value > 0:
            out.append(((*where, "at"), f"fault point {value:g} must be above 0"))
    for name in ("poisson_rate", "horizon"):
        value = getattr(failures, name)
        if value is not None and not isinstance(value, str) and (value < 0 if name == "poisson_rate" else value <= 0):
            out.append(((*where, name), f"{name} = {value:g} must be {'>= 0' if name == 'poisson_rate' else '> 0'}"))
    return out
