"""The artifact's A/A section (``Evaluation.aa_pairs``): each A/A pair's interval per primary metric.

An A/A pair is an arm and its control copy (``control_of``, :mod:`prereg.arm_checks`): the same
configuration under two names, so its true difference is zero (1 for a ratio). Computed by
:mod:`gates.aa_pairs`.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from estimators.vocabulary import Scale
from gates.numbers import Number

AAVerdict = Literal["same", "differs", "unchecked"]


class AAPairResult(BaseModel):
    """One A/A pair on one primary gate's metric, scale, method and confidence: the paired interval of
    ``control`` against ``original`` over the gates' units, and whether it excludes no difference."""

    model_config = ConfigDict(extra="forbid")

    control: str = Field(description="The control copy (the arm declaring control_of).")
    original: str = Field(description="The arm it copies.")
    contrast: str = Field(description="'control - original' (difference) or 'control / original' (ratio).")
    metric: str
    unit: str
    scale: Scale
    method: str
    gates: list[str] = Field(description="The primary gates whose metric, scale, method and confidence it mirrors.")
    gate_confidence: float = Field(description="Those gates' two-sided confidence.")
    confidence: float = Field(
        description="The A/A interval's two-sided confidence: 1 - (1 - gate_confidence) / checks (Bonferroni over "
        "the plan's A/A checks, so that all of them together refuse a true A/A at most at the gates' level)."
    )
    checks: int = Field(ge=1, description="How many A/A checks the plan's pairs and primary metrics make.")
    verdict: AAVerdict = Field(
        description="same: the interval holds the null (no difference); differs: it excludes it (refuses the "
        "decision, kind aa_difference); unchecked: it could not be computed (refuses the decision, kind "
        "aa_unchecked; 'reason' says why)."
    )
    estimate: Number | None = None
    lower: Number | None = None
    upper: Number | None = None
    null: float = Field(description="0 (difference) or 1 (ratio).")
    pvalue: float | None = Field(default=None, description="Two-sided p-value of the null (None when undefined).")
    n_pairs: int = Field(default=0, description="Complete units of analysis the interval used.")
    reason: str | None = Field(default=None, description="Why it is unchecked, in words.")


__all__ = ["AAPairResult", "AAVerdict"]
