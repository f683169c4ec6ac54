"""Why a gate, the comparator or the decision was refused: one typed reason per entry.

More in ``docs/internals.md``.
"""

from __future__ import annotations

from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

RefusalKind = Literal[
    "invalidator",
    "run",
    "data",
    "pairs",
    "comparator",
    "seal",
    "time_order",
    "predecessor",
    "code_identity",
    "interim",
    "aa_difference",
    "aa_unchecked",
]

#: each kind and what it means (the module doc, as data for docs and tests)
REFUSAL_KINDS: Final[dict[str, str]] = {
    "invalidator": "a preregistered invalidator blocking it fired (id: the invalidator)",
    "run": "runs it needs are missing, duplicated, unplanned or recorded under another plan hash",
    "data": "a recorded value is absent, not finite, not positive for a ratio, or outside the metric's range",
    "pairs": "too few complete units of analysis for the method at the gate's confidence",
    "comparator": "no comparator could be chosen from the calibration runs (or its contrast compares nothing)",
    "seal": "runs carry another lock seal than the lock's, or none, or an amendment hid that data existed",
    "time_order": "runs started before the plan version they are judged under (no pre-existing data declared)",
    "predecessor": "an earlier evaluation the plan builds on is missing or changed",
    "code_identity": "the runs' code identity differs between runs in a part the plan does not declare may differ",
    "interim": "a monitored plan evaluated at a point that is not a planned look: an interim reading, not a decision",
    "aa_difference": "an A/A pair (an arm and its control copy, the same configuration under two names) differs: "
    "its interval excludes no difference at the plan's level, so the pipeline itself manufactures differences",
    "aa_unchecked": "an A/A pair declared by the plan could not be checked (too few complete units, missing or "
    "unusable runs of either arm): the pipeline's own false-alarm rate is unmeasured",
}


class Refusal(BaseModel):
    """One reason for a refusal: what refused (``kind``), which invalidator (``id``, kind
    ``invalidator`` only) and the sentence reports print (``reason``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: RefusalKind = Field(description="What refused: " + "; ".join(f"{k}: {v}" for k, v in REFUSAL_KINDS.items()))
    id: str | None = Field(default=None, description="The invalidator's id for kind 'invalidator'; null otherwise.")
    reason: str = Field(description="The reason in words, as reports print it.")

    @model_validator(mode="after")
    def _id_only_for_invalidators(self) -> Refusal:
        if (self.kind == "invalidator") != (self.id is not None):
            raise ValueError("a refusal names an id exactly when its kind is 'invalidator'")
        return self

    def __str__(self) -> str:
        return self.reason


def invalidator_fired(check_id: str, where: str = "") -> Refusal:
    """The refusal of a fired invalidator: 'invalidator X fired' (+ ``where``, e.g. ' on the calibration runs')."""
    return Refusal(kind="invalidator", id=check_id, reason=f"invalidator {check_id} fired{where}")


def as_refusals(kind: RefusalKind, reasons: list[str]) -> list[Refusal]:
    """``reasons`` (sentences) as refusals of one ``kind`` other than ``invalidator``."""
    return [Refusal(kind=kind, reason=r) for r in reasons]


__all__ = ["REFUSAL_KINDS", "Refusal", "RefusalKind", "as_refusals", "invalidator_fired"]
