"""The plan's invalidators (``invalidators:`` in ``prereg/v1``): checks that refuse the gates they
block when they fire. Each model's docstring says when it fires; :mod:`gates.invalidators` runs them.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from prereg.schema_failures import Number
from prereg.schema_types import Identifier, ItemId, Scalar, StrictModel, Text


class InvalidatorBase(StrictModel):
    """What every invalidator has: its id, the gates it blocks, a description."""

    id: ItemId
    blocks: Literal["all"] | Annotated[list[ItemId], Field(min_length=1)] = Field(
        description="'all', or the ids of the gates this invalidator refuses when it fires."
    )
    description: Text | None = None


class CounterSupport(InvalidatorBase):
    """Fires when any run saw fewer than ``min_updates`` updates of the signal's counter (in the
    whole run, or inside one ``phase``'s intervals: runs in which that phase never occurred are
    not counted, since a phase that did not happen has no energy to resolve)."""

    kind: Literal["counter_support"]
    signal: Identifier
    min_updates: int = Field(ge=1)
    phase: Identifier | None = Field(
        default=None,
        description="Count updates inside this phase only (compute, replay, checkpoint, restore, "
        "stall, idle); absent: the whole run.",
    )


class SensorUpdatePeriod(InvalidatorBase):
    """Fires when any run's effective sensor update period exceeds ``max_ms`` milliseconds."""

    kind: Literal["sensor_update_period"]
    signal: Identifier
    max_ms: float = Field(gt=0)


class LoggerCalibration(InvalidatorBase):
    """Fires when any run's achieved / requested poll interval exceeds ``max_ratio``: the logger did
    not keep the rate it was asked for. The achieved interval is the mean poll gap over the run's
    worst stretch of about one second where the run records it (a logger that fell behind during a
    checkpoint shows there, though its median poll gap does not), else its median poll gap."""

    kind: Literal["logger_calibration"]
    signal: Identifier
    max_ratio: float = Field(ge=1)


class MetricBounds(InvalidatorBase):
    """Fires on a non-finite value or a value outside [``min``, ``max``] (give at least one)."""

    kind: Literal["metric_bounds"]
    metric: Identifier
    min: float | None = None
    max: float | None = None

    @model_validator(mode="after")
    def _one_bound(self) -> MetricBounds:
        if self.min is None and self.max is None:
            raise ValueError("metric_bounds needs 'min', 'max' or both")
        if self.min is not None and self.max is not None and not self.min < self.max:
            raise ValueError(f"min ({self.min:g}) must be below max ({self.max:g})")
        return self


class ControlsIdentical(InvalidatorBase):
    """Fires unless all arms agree exactly on ``metric`` in the control strata selected by ``where``."""

    kind: Literal["controls_identical"]
    metric: Identifier
    where: dict[Identifier, Scalar] = Field(min_length=1, description="Selector of the no-failure strata.")


class FaultsLanded(InvalidatorBase):
    """Fires unless, in every stratum that meets planned failures (``experiment.failures``), every arm
    met the same planned faults and each of them landed: it fired while the program ran, and the
    program restarted (or carried on) after it. A plan with ``experiment.failures`` gets one
    (``faults_landed``, blocking all gates) unless it declares its own."""

    kind: Literal["faults_landed"]


class FailureRate(InvalidatorBase):
    """Fires when the failures the runs met are implausible under the planned Poisson rate: the exact
    two-sided Poisson test (R's ``poisson.test``) of each arm's total count against ``rate`` x its
    total exposure, and of all runs pooled when no two runs share a seed, each at ``level`` divided
    by the number of tests (Bonferroni); also when a run lacks its count or exposure, when a run
    planned to meet no failure (rate 0) met some, and when fewer than ``landed_share_min`` of the
    planned faults landed. Runs are assumed independent Poisson counts given their exposure."""

    kind: Literal["failure_rate"]
    count: Identifier | None = Field(
        default=None,
        description="The metric holding each run's failure count; absent: the faults that landed, as the "
        "command collector records them for a plan with experiment.failures.",
    )
    exposure: Identifier | float | None = Field(
        default=None,
        description="The metric holding each run's exposure (seconds, steps, worker-seconds: the unit 'rate' "
        "is per), or one number for every run; absent: experiment.failures.horizon.",
    )
    rate: Number | None = Field(
        default=None,
        description="Planned failures per unit of exposure (> 0), or '{factor}': the stratum's level (0: "
        "the stratum plans none); absent: experiment.failures.poisson_rate (faults per its 'unit').",
    )
    level: float = Field(
        default=0.05,
        gt=0,
        le=0.5,
        description="Family-wise level over the per-arm and pooled tests (Bonferroni split).",
    )
    landed_share_min: float | None = Field(
        default=None,
        gt=0,
        le=1,
        description="Fire when a smaller share of the planned faults landed (runs of experiment.failures only).",
    )

    @model_validator(mode="after")
    def _positive(self) -> FailureRate:
        if isinstance(self.exposure, float) and not self.exposure > 0:
            raise ValueError(f"exposure {self.exposure:g} must be > 0 (or name the metric that holds it)")
        if isinstance(self.rate, int | float) and not isinstance(self.rate, bool) and not self.rate > 0:
            raise ValueError(f"rate {self.rate:g} must be > 0 failures per unit of exposure")
        return self


Invalidator = Annotated[
    CounterSupport
    | SensorUpdatePeriod
    | LoggerCalibration
    | MetricBounds
    | ControlsIdentical
    | FaultsLanded
    | FailureRate,
    Field(discriminator="kind"),
]
