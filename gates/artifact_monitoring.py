"""The evaluation artifact's ``monitoring`` section (part of ``gates/evaluation/v2``, owned by :mod:`gates.artifact`).

More in ``docs/internals.md``.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from estimators.vocabulary import Decision
from gates.numbers import Number


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class LookBoundary(_Model):
    """One gate at one planned look (one-sided levels)."""

    look: int = Field(ge=1)
    blocks: int = Field(description="Complete pairing blocks per gate at this look.")
    fraction: float = Field(description="Information fraction: blocks / the last look's blocks.")
    nominal_alpha: float = Field(description="The level the gate's rule p-value must clear at this look.")
    cumulative_alpha: float = Field(description="Alpha spent up to and including this look.")
    z_bound: Number | None = Field(
        default=None,
        description="The nominal level on the z scale, "
        "Phi^-1(1 - nominal_alpha), for gates on the group-sequential boundary (t); null "
        "for alpha increments (exact and resampling methods).",
    )
    futility_p: float | None = Field(
        default=None,
        description="With non-binding futility: the gate is futile at "
        "this look when its rule p-value is above this; null: no futility stop.",
    )


class RepeatedInterval(_Model):
    """A primary gate's repeated confidence interval at one look taken (reported scale)."""

    look: int = Field(ge=1)
    blocks: int = Field(description="Complete pairing blocks per gate at this look.")
    nominal_alpha: float = Field(description="The look's one-sided level: the interval is two-sided 1 - 2 x this.")
    estimate: Number
    lower: Number
    upper: Number
    source: Literal["this evaluation", "look ledger"] = Field(
        description="Computed by this evaluation, or as the look ledger recorded it at that look."
    )


class AfterStopEstimate(_Model):
    """What a primary gate reports once the study stopped (estimators.after_stop; reported scale)."""

    stop_look: int = Field(ge=1, description="The look the study stopped at (the final look when it ran to the end).")
    stopped_early: bool
    confidence: float = Field(description="Two-sided level of the final interval: 1 - 2 x the gate's alpha.")
    null: float = Field(description="The value tested (the rule's threshold), reported scale.")
    ordering_pvalue: float = Field(
        description="Stage-wise ordering p-value: the chance under the threshold of stopping at an earlier look, "
        "or at this look with a statistic at least as extreme."
    )
    median_unbiased: Number = Field(description="Median-unbiased estimate under the stage-wise ordering.")
    final_lower: Number
    final_upper: Number
    naive_estimate: Number = Field(description="The stopping look's own estimate (biased away from the null).")
    meaning: str = Field(description="What these numbers mean, in one sentence.")


class GateLooks(_Model):
    """A primary gate's boundaries over the planned looks."""

    id: str
    method: str
    alpha: float = Field(
        description="The gate's one-sided level as frozen, (1 - confidence) / 2: what the looks spend in all."
    )
    kind: Literal["boundary", "increment", "anytime"] = Field(
        description="boundary: the group-sequential boundary on the information fractions (t); increment: each "
        "look tests at the alpha increment the spending releases, valid for any level-alpha test (exact methods; "
        "conservative); anytime: the whole alpha at every look, for an anytime-valid p-value (betting)."
    )
    looks: list[LookBoundary]
    pvalue: float | None = Field(default=None, description="The gate's rule p-value at this point.")
    futile: bool = Field(default=False, description="Above its futility bound at this look (non-binding futility).")
    repeated_intervals: list[RepeatedInterval] = Field(
        default_factory=list,
        description="Repeated confidence intervals at every planned look taken so far (Jennison & Turnbull): each "
        "at its look's level, jointly covering the effect with probability at least 1 - 2 alpha.",
    )
    after_stop: AfterStopEstimate | None = Field(
        default=None, description="At a stop for success or the final look: the estimates that account for the stop."
    )
    after_stop_note: str | None = Field(
        default=None, description="Why after_stop is absent at a stop or final look (the gate's method or rule)."
    )


class LookEntry(_Model):
    """A look recorded in the look ledger before this evaluation."""

    seq: int
    evaluated_at: str
    look: int | None
    status: Literal["decision", "interim_reading"]
    point_blocks: int
    decision: Decision
    action: str
    ledger_records: int
    pvalues: dict[str, float] = Field(default_factory=dict, description="Gate id -> its rule p-value at that look.")
    intervals: dict[str, list[float]] = Field(
        default_factory=dict,
        description="Gate id -> [estimate, lower, upper] at that look's level (reported scale), where recorded.",
    )


class MonitoringResult(_Model):
    """Where in a monitored plan this evaluation stands (module doc)."""

    looks: list[int] = Field(description="The planned looks: complete pairing blocks per gate.")
    spending: str
    futility: Literal["none", "nonbinding"]
    status: Literal["decision", "interim_reading"] = Field(
        description="decision: the evaluated point is a planned look; interim_reading: it is not (never a decision)."
    )
    look: int | None = Field(default=None, description="The planned look this point is (1-based), if any.")
    point_blocks: int = Field(description="Pairing blocks per gate in the evaluated prefix of the frozen run order.")
    total_blocks: int
    levels_from_look: int = Field(
        description="The planned look whose nominal levels the gates used (an interim "
        "reading is read against the next planned look's)."
    )
    action: Literal["stop_success", "stop_futility", "continue", "final", "none"] = Field(
        description="What the plan says now: stop for success, stop for (non-binding) futility, continue to the next "
        "look, final (the last look), or none (an interim reading decides nothing)."
    )
    reason: str = Field(description="The status and action in words.")
    strata_evaluated: int = Field(description="Strata of the frozen run order evaluated (the prefix).")
    strata_total: int
    runs_evaluated: int = Field(description="Planned runs in the evaluated prefix.")
    runs_planned: int = Field(description="Planned runs of the whole plan.")
    runs_saved: int = Field(
        default=0,
        description="Planned runs not needed because the plan stops here (stop_success or stop_futility); 0 otherwise.",
    )
    sequence: int = Field(ge=1, description="This evaluation's record number in the look ledger (looks.jsonl).")
    looks_head: str | None = Field(
        default=None,
        description="The look ledger's head once this look is "
        "recorded: this look record's SHA-256 (publish it with the ledger head; "
        "gates verify --looks-head checks it). None: an artifact made before it existed.",
    )
    history: list[LookEntry] = Field(default_factory=list, description="The looks recorded before this one.")
    gates: list[GateLooks] = Field(default_factory=list)
    sensitivity_note: str | None = Field(default=None, description="How sensitivity gates were read.")
    estimates_note: str | None = Field(
        default=None, description="What the repeated intervals and the after-stop estimates mean, in one sentence."
    )

    def without_estimates(self) -> MonitoringResult:
        """This section without the repeated intervals and after-stop estimates: what an artifact made
        before they existed holds (``gates verify`` compares such an artifact without them)."""
        gates = [
            g.model_copy(update={"repeated_intervals": [], "after_stop": None, "after_stop_note": None})
            for g in self.gates
        ]
        history = [e.model_copy(update={"intervals": {}}) for e in self.history]
        return self.model_copy(update={"gates": gates, "history": history, "estimates_note": None})
