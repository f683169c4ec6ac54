"""Parts of the evaluation artifact (``gates.artifact``) that describe the runs rather than test them.

More in ``docs/internals.md``.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from estimators.vocabulary import Evidence
from gates.numbers import Number
from prereg.schema_types import Scalar


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class FailedRunEntry(_Model):
    """One failed run of a planned cell."""

    run_id: str
    arm: str
    stratum: dict[str, Scalar]
    replicate: int
    reason: str = Field(
        description="The error's first line, without a source location or the quoted stderr "
        "(the ledger keeps the whole error)."
    )
    stderr_tail: list[str] = Field(
        default_factory=list,
        description="The last lines (at most 3) of the stderr the "
        "error quotes (command runs whose program failed); empty otherwise.",
    )
    cell_complete: bool = Field(
        description="A complete run of the same cell is in the ledger (a retry): this "
        "failure refuses nothing. False: the cell is missing, and gates using the arm are "
        "refused for it."
    )


class ArmSummary(_Model):
    """One metric over one arm's matched complete runs (the metric's unit)."""

    n: int = Field(ge=0, description="Runs with a finite value.")
    mean: Number | None = None
    median: Number | None = None
    sd: Number | None = Field(default=None, description="Sample standard deviation (n - 1); None below 2 values.")
    min: Number | None = None
    max: Number | None = None
    non_finite: int = Field(
        default=0,
        ge=0,
        description="Runs whose value is NaN or infinite, or (an undeclared metric) was not a number (not summarised).",
    )
    missing: int = Field(default=0, ge=0, description="Runs that recorded no value (not summarised).")


class DescriptiveMetric(_Model):
    """A metric per arm, descriptive: not a test."""

    metric: str
    unit: str | None = Field(default=None, description="The plan's unit; None for an undeclared metric.")
    declared: bool = Field(
        description="Declared by the plan; False: written by the program, kept as descriptive "
        "(code.undeclared_metrics of its records), never analysed."
    )
    evidence: Evidence | None = Field(default=None, description="The plan's evidence class (declared metrics).")
    gates: list[str] = Field(default_factory=list, description="The gates on this metric (none: descriptive only).")
    arms: dict[str, ArmSummary] = Field(description="Arm -> its summary, arms by name.")


__all__ = ["ArmSummary", "DescriptiveMetric", "FailedRunEntry"]
