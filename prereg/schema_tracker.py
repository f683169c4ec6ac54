"""Which logged value of an experiment tracker a metric takes (part of ``prereg/v1``; used by :mod:`prereg.schema`)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StringConstraints, model_validator

from prereg.schema_types import StrictModel

#: a tracker's metric key: MLflow, TensorBoard and W&B keys hold letters, digits and ``_ - . / space``
TrackerKey = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_./ -]+$", min_length=1, max_length=250)]


class TrackerMetric(StrictModel):
    """How ``collect import`` reads this metric from a tracker run (MLflow, TensorBoard, W&B, Ray Tune).

    Frozen with the plan, so that "the last value" or "the best value" is a choice made before the data.
    """

    key: TrackerKey | None = Field(
        default=None, description="The key the run logged it under (unset: the metric's own name)."
    )
    take: Literal["last", "min", "max", "step"] = Field(
        default="last",
        description="last: the value at the highest step logged (the latest logged among equal steps); "
        "min / max: the smallest / largest value logged; step: the value logged at 'step' (the latest "
        "logged there, if several).",
    )
    step: Annotated[int, Field(ge=0)] | None = Field(default=None, description="The step, with take: step only.")

    @model_validator(mode="after")
    def _step_with_take(self) -> TrackerMetric:
        if (self.take == "step") != (self.step is not None):
            raise ValueError("tracker: give 'step' exactly when take is 'step' (e.g. take: step, step: 1000)")
        return self


__all__ = ["TrackerKey", "TrackerMetric"]
