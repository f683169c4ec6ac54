"""The plan's ``monitoring:`` section: preregistered interim looks (part of the ``prereg/v1`` schema).

More in ``docs/internals.md``.
"""

from __future__ import annotations

import math
from typing import Annotated, Literal

from pydantic import Field, field_validator

from estimators.spending import parse_spending
from prereg.schema_types import StrictModel, Text

SPENDING_FUNCTIONS = ("obrien_fleming", "pocock", "power:RHO")
MAX_LOOKS = 20


def canonical_spending(text: str) -> str:
    """``obrien_fleming``, ``pocock`` or ``power:RHO`` (RHO > 0) in its canonical spelling
    (``power:2.0`` -> ``power:2``; ``estimators.spending.parse_spending``); ``ValueError`` otherwise."""
    spending = parse_spending(text)
    if spending.rho is not None and not (math.isfinite(spending.rho) and 0 < spending.rho <= 100):
        raise ValueError(f"spending {text!r}: RHO must be a number above 0 and at most 100 (Kim-DeMets alpha * t^RHO)")
    return spending.spec()


class Monitoring(StrictModel):
    """Preregistered interim looks: at each look the gates are evaluated with only the alpha the
    spending function has released; an evaluation anywhere else is an interim reading, never a decision."""

    looks: Annotated[list[Annotated[int, Field(ge=1)]], Field(min_length=2, max_length=MAX_LOOKS)] = Field(
        description="Complete pairing blocks per gate at each look (units of analysis: strata, or replicate pairs "
        "with 'analysis_unit: replicate'), strictly increasing; the last is the plan's full number of blocks."
    )
    spending: str = Field(
        description="The alpha-spending function over the information fractions looks / last look: "
        "'obrien_fleming' (Lan-DeMets O'Brien-Fleming type: little alpha early), 'pocock' (Lan-DeMets Pocock "
        "type: even), or 'power:RHO' (Kim-DeMets alpha * t^RHO, RHO > 0)."
    )
    futility: Literal["none", "nonbinding"] = Field(
        default="none",
        description="'nonbinding': a frozen futility bound per look; stopping for it never inflates the error "
        "(the efficacy bounds are computed as if it were never applied). 'none': stop early only for success.",
    )
    first_look_reason: Text | None = Field(
        default=None,
        description="Why a primary gate with a mean-targeting method (t, signflip, bootstrap, bca) may be decided "
        "at a first look of fewer units than the skew check needs (15): required then. Without it such a plan is "
        "refused: a small first look amplifies skew and rare events. 'method: betting' (a metric with a 'range') "
        "or 'wilcoxon' need no reason.",
    )
    seed: int = Field(
        default=0,
        ge=0,
        le=2**63 - 1,
        description="Seeds the order in which the strata are run (frozen at freeze, stored in the lock): "
        "calibration and control strata first, then the pairing strata in a seeded random order, every arm "
        "and replicate of a stratum together.",
    )

    @field_validator("spending")
    @classmethod
    def _spending(cls, value: str) -> str:
        return canonical_spending(value)

    @field_validator("looks")
    @classmethod
    def _increasing(cls, value: list[int]) -> list[int]:
        for before, after in zip(value, value[1:], strict=False):
            if after <= before:
                raise ValueError(f"looks must be strictly increasing: {after} follows {before}")
        return value
