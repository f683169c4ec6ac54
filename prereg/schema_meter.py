"""A signal-backed metric's meter: what its logs cannot say (part of ``prereg/v1``; used by :mod:`prereg.schema`)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from prereg.schema_types import StrictModel


class Meter(StrictModel):
    """What a signal-backed metric's logs cannot say about the meter (docs/plan-format.md, meter).

    Frozen with the plan, so that the bounds an energy gate is judged with follow from a choice
    made before the data: ``collect import --telemetry`` uses it, and refuses a command-line option
    that contradicts it.
    """

    counter_period_ms: Annotated[float, Field(gt=0, le=3_600_000)] | None = Field(
        default=None,
        description="The energy counter's longest interval between updates (ms), e.g. as "
        "'collect probe' measured it on the same GPU model; unset: the cited default of "
        "collect/telemetry/logs/periods.py.",
    )
    power_model: Literal["average", "part-time"] | None = Field(
        default=None,
        description="How a driver-averaged power signal (nvidia-smi power.draw, DCGM POWER) "
        "covers time: 'average' (a true 1 s mean, NVML's documentation) or 'part-time' (each average covers "
        "part of its period, Yang et al., SC24: energy is bounded by the power range alone). Unset: average.",
    )
    run_s: Annotated[float, Field(gt=0, le=31_536_000)] | None = Field(
        default=None,
        description="For planning only: a run's expected length (s), so that 'prereg validate' and "
        "'prereg power' say which logs reach the bound the gate's margin needs (unset: 60 s, 10 min and 1 h).",
    )
    power_w: Annotated[float, Field(gt=0, le=100_000)] | None = Field(
        default=None, description="For planning only: the device's expected mean power (W; unset: 300 W)."
    )


__all__ = ["Meter"]
