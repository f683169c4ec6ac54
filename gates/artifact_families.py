"""The comparator, held-out families and ranking parts of the evaluation artifact.

Owned with :mod:`gates.artifact` (which embeds these models in ``Evaluation``); nobody else parses
them. Sampling intervals and infrastructure uncertainty are separate fields, never merged into one number.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from estimators.vocabulary import Decision, Scale
from gates.numbers import Number
from gates.refusal import Refusal
from prereg.schema_types import Scalar

Ranking = Literal["challenger", "comparator", "flip", "abstain"]
ErrorControl = Literal["holm", "bonferroni", "per_cell"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ComparatorChoice(_Model):
    """Which fixed arm the frozen rule chose, from which runs, and how."""

    name: str = Field(description="The placeholder gate contrasts use for the chosen arm.")
    arm: str | None = Field(description="The chosen arm; None when the choice was refused.")
    challenger: str = Field(description="The arm judged against the comparator.")
    rule: str = Field(description="The frozen selection rule in words.")
    metric: str
    statistic: Literal["median", "mean"]
    better: Literal["lower", "higher"]
    tie_break: list[str] = Field(default_factory=list)
    values: dict[str, dict[str, Number | None]] = Field(
        description="Candidate arm -> {metric: its statistic over the calibration runs} (selection and tie-break metrics)."
    )
    ties_broken_by: str | None = Field(default=None, description="What settled a tie ('final_nll', 'candidate order').")
    calibration_strata: list[str] = Field(description="Labels of the calibration strata the choice used.")
    runs_used: int = Field(description="Calibration runs of the candidates with a finite selection metric.")
    family_factor: str | None = Field(default=None, description="The strata factor naming stress families.")
    refused_by: list[Refusal] = Field(default_factory=list, description="Why no arm could be chosen (gates.refusal).")


class Hindsight(_Model):
    """The best whole-policy choice in hindsight on one family's held-out runs: a yardstick, never a gate."""

    metric: str
    statistic: Literal["median", "mean"]
    best_arm: str | None = Field(description="The best fixed candidate on this family's held-out runs.")
    values: dict[str, Number | None] = Field(description="Arm (candidates and challenger) -> statistic.")
    note: str | None = None


class FamilyGate(_Model):
    """One gate judged on one held-out family alone."""

    id: str
    contrast: str
    role: Literal["primary", "sensitivity"]
    verdict: str
    estimate: Number | None = None
    lower: Number | None = None
    upper: Number | None = None
    confidence: float
    n_pairs: int
    pvalue_adjusted: float | None = None
    refused_by: list[Refusal] = Field(default_factory=list, description="Why it was refused (gates.refusal).")
    notes: list[str] = Field(default_factory=list)


class FamilyResult(_Model):
    """Every gate on one held-out family's strata, the family's own decision, and its yardstick."""

    family: Scalar
    blocks: int = Field(description="Held-out blocks (stratum x replicate) of this family.")
    decision: Decision
    decision_reason: str
    gates: list[FamilyGate]
    hindsight: Hindsight | None = None
    medians: dict[str, dict[str, Number | None]] = Field(
        default_factory=dict, description="Metric -> arm -> median over this family's held-out runs (descriptive)."
    )
    invalidators_fired: list[str] = Field(default_factory=list, description="Checks that fired on this family's runs.")


class RegionEnd(_Model):
    """The ranking contrast fitted at one end of the infrastructure a region's runs drew."""

    at: float = Field(description="The parameter value (the lowest or highest drawn in the cell).")
    estimate: Number
    lower: Number
    upper: Number


class InfrastructureSpread(_Model):
    """Where in its region the cell's drawn infrastructure fell, and the contrast at the two ends
    (least squares on the parameter -- its log when positive -- with a t interval of the fitted
    mean, df = n - 2): infrastructure uncertainty, kept apart from the sampling interval."""

    factor: str
    parameter: str = Field(description="The metric recording the drawn value (e.g. base_bandwidth_mbps).")
    drawn: list[float] = Field(description="The drawn values, one per pair (the same for both arms of a pair).")
    log_scale: bool | None = Field(default=None, description="Whether the line was fitted on log(parameter).")
    low_end: RegionEnd | None = None
    high_end: RegionEnd | None = None
    note: str | None = None


class RankingCell(_Model):
    """The ordering of the challenger and the comparator in one family x uncertainty region."""

    family: Scalar
    region: dict[str, Scalar] = Field(description="Region factor -> level.")
    ranking: Ranking = Field(
        description="challenger (the challenger is better), comparator, flip (the order changes "
        "across the region), or abstain (the paired interval cannot order them, or evidence is "
        "missing)."
    )
    reason: str
    metric: str
    contrast: str
    scale: Scale
    method: str
    confidence: float
    n_pairs: int
    estimate: Number | None = Field(default=None, description="Sampling: the paired interval over the cell's pairs.")
    lower: Number | None = None
    upper: Number | None = None
    infrastructure: list[InfrastructureSpread] = Field(default_factory=list)
    error_control: ErrorControl | None = Field(
        default=None,
        description="How the ordering error is held over the ranking's cells (the plan's ranking.error_control); "
        "None in artifacts written before the field existed (each cell alone).",
    )
    pvalue: float | None = Field(
        default=None, description="Two-sided p-value of the cell's paired test (method above), unadjusted."
    )
    flip_pvalue: float | None = Field(
        default=None,
        description="Smallest p-value of a flip claim over the region factors (the larger of the two ends' "
        "t tests when the fitted ends lie on opposite sides, else 1), unadjusted.",
    )
    claims: int | None = Field(
        default=None, description="Ordering claims tested in the cell: the paired order and one flip per fitted factor."
    )
    cells_tested: int | None = Field(default=None, description="Cells of the ranking with a test (the family).")
    pvalue_adjusted: float | None = Field(
        default=None,
        description="The cell's p-value (claims x its smallest claim p-value, capped at 1) adjusted over the "
        "ranking's cells (Holm or Bonferroni); the cell is ordered only when it is at most 1 - confidence.",
    )
    adjusted_level: float | None = Field(
        default=None, description="The error rate the cell was judged at (its Holm step or alpha / cells)."
    )
    adjusted_confidence: float | None = Field(
        default=None, description="1 - adjusted_level / claims: the two-sided level of each claim's interval."
    )
    adjusted_lower: Number | None = Field(default=None, description="The paired interval at adjusted_confidence.")
    adjusted_upper: Number | None = None
