"""The ledger's record format (``collect/run/v2``): the models one line holds (part of ``collect.ledger.store``).

``collect.ledger.store`` documents the format and re-exports every name here; import them from there.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from estimators.vocabulary import Evidence
from prereg.jsoncodec import NonFiniteName, canonical_bytes, canonical_text, decode_float, encode_float
from prereg.schema_types import Scalar

RECORD_FORMAT: Final = "collect/run/v2"
#: record formats this toolkit no longer reads (a line in one: ``prereg.errors.RetiredFormat``, exit 2)
RETIRED_RECORD_FORMATS: Final = ("collect/run/v1",)
LEDGER_NAME = "ledger.jsonl"
TRACES_DIR = "traces"
GENESIS = "0" * 64  # prev_sha256 of a chain's first record
Sha256 = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]

NonFinite = NonFiniteName
RunId = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class PhaseSupport(_Strict):
    """How well one phase of a run is covered by the signal (``collect.telemetry.analysis.phases``)."""

    updates: int = Field(ge=0, description="Signal updates whose whole update window lies inside the phase.")
    intervals: int = Field(ge=0, description="How many separate intervals of the phase the run had.")
    duration_ms: float = Field(ge=0, description="Summed duration of the phase's intervals, ms.")


class TelemetrySummary(_Strict):
    """What a run's sensor delivered for one signal (see the telemetry issue for how it is measured)."""

    updates: int | None = Field(default=None, ge=0, description="Counter/sensor value changes seen in the run.")
    effective_period_ms: float | None = Field(default=None, ge=0, description="Median interval between updates, ms.")
    requested_poll_ms: float | None = Field(default=None, gt=0, description="Poll interval asked for, ms.")
    achieved_poll_ms: float | None = Field(default=None, ge=0, description="Median poll interval achieved, ms.")
    achieved_poll_worst_ms: float | None = Field(
        default=None,
        ge=0,
        description="Mean poll interval over the run's worst stretch (the polls the requested "
        "rate fits in one second, at least ten), ms; logger_calibration judges it when present.",
    )
    bound: float | None = Field(
        default=None, ge=0, description="Measurement bound of the backed metric's value, in that metric's unit."
    )
    evidence: Evidence = "measured"
    metric_bounds: dict[str, Annotated[float, Field(ge=0)]] | None = Field(
        default=None,
        description="Metric -> its own measurement bound (metric units). When recorded it is "
        "the whole list: a metric of this signal absent from it has no bound (its gates are unresolvable); "
        "``bound`` is then never used for it.",
    )
    phases: dict[str, PhaseSupport] | None = Field(
        default=None, description="Phase -> the signal's support in it (updates, intervals, duration)."
    )
    systematic_bound: float | None = Field(
        default=None,
        ge=0,
        description="The part of ``bound`` whose mean may differ by arm (edge power, a "
        "coarse averaging window); the rest is reading error independent of the arm, which the paired "
        "sampling variance carries (docs/estimators.md, measurement error). None: all of ``bound``.",
    )
    metric_systematic_bounds: dict[str, Annotated[float, Field(ge=0)]] | None = Field(
        default=None, description="Metric -> the arm-dependent part of its own bound (as ``metric_bounds``)."
    )
    counter_period_ms: float | None = Field(
        default=None,
        gt=0,
        description="The energy counter's update period the bounds were computed with, ms "
        "(declared in the plan, given on the command line or a default; None: undeclared).",
    )

    def bound_of(self, metric: str) -> float | None:
        """The measurement bound of ``metric`` (its unit), or None when it has none.

        With ``metric_bounds`` recorded, only that mapping answers (a metric absent from it has no
        bound; it never borrows another metric's). Without it the signal backs one metric and
        ``bound`` is that metric's.
        """
        if self.metric_bounds is not None:
            return self.metric_bounds.get(metric)
        return self.bound

    def systematic_bound_of(self, metric: str) -> float | None:
        """The arm-dependent part of ``metric``'s bound (its unit; never above :meth:`bound_of`), or
        None when it has no bound. Without a recorded split the whole bound is arm-dependent.
        ``systematic_bound`` speaks for the signal's one bound (no ``metric_bounds``, or one entry)."""
        whole = self.bound_of(metric)
        if whole is None:
            return None
        part: float | None = None
        if self.metric_systematic_bounds is not None:
            part = self.metric_systematic_bounds.get(metric)
        elif self.metric_bounds is None or len(self.metric_bounds) == 1:
            part = self.systematic_bound
        return whole if part is None else min(part, whole)


class Provenance(_Strict):
    """Where an imported tracker run came from (``collect.importing.trackers``): enough to read it again."""

    tracker: Literal["mlflow", "tensorboard", "wandb", "raytune"]
    uri: str = Field(description="The source as given to 'collect import', e.g. 'mlflow:sqlite:///mlflow.db'.")
    run_id: str = Field(description="The tracker's own id of the run.")
    started_at: str | None = Field(default=None, description="The tracker's start time (UTC ISO-8601).")
    finished_at: str | None = Field(default=None, description="The tracker's end time (UTC ISO-8601).")
    git_commit: str | None = Field(default=None, description="The git commit the tracker recorded, if any.")
    content_sha256: Sha256 = Field(description="SHA-256 of what was read (tags, params, values, times, status).")
    files: dict[str, Sha256] = Field(
        default_factory=dict, description="File read (path relative to the source) -> SHA-256 of its bytes."
    )


class RunRecord(_Strict):
    """One finished run."""

    record: Literal["collect/run/v2"] = RECORD_FORMAT
    run_id: RunId
    prereg_sha256: Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]
    lock_seal: Sha256 | None = Field(
        default=None,
        description="The seal of the lock version the run was collected or imported under "
        "(``prereg.lock_seal``: freeze time and amendment chain); None: collected without a lock (library use), "
        "which refuses any decision on it.",
    )
    stratum: dict[str, Scalar]
    arm: str
    replicate: int = Field(ge=0)
    status: Literal["complete", "failed"]
    metrics: dict[str, float | NonFinite | None]
    telemetry: dict[str, TelemetrySummary] = Field(default_factory=dict)
    evidence: dict[str, Evidence] | None = Field(
        default=None, description="Metric -> the evidence class the collector gives it (None: not recorded)."
    )
    started_at: str | None = Field(
        default=None, description="UTC ISO-8601 start of the run; None: not recorded (an imported table without it)."
    )
    finished_at: str | None = None
    seed: int | None = None
    code: dict[str, Any] = Field(default_factory=dict, description="Code identity (toolkit version, git commit).")
    env: dict[str, Any] = Field(default_factory=dict, description="Environment identity (python, platform, device).")
    source: str | None = Field(default=None, description="Where the run came from, e.g. 'import:runs.csv row 3'.")
    error: str | None = Field(
        default=None,
        description="Why a failed run failed: the toolkit's reason in words, or an "
        "exception of the collector's own code with its type and line.",
    )
    traces: list[str] = Field(default_factory=list, description="Trace files written beside the ledger (traces/).")
    trace_sha256: dict[str, Sha256] = Field(default_factory=dict, description="Trace path -> SHA-256 of its bytes.")
    provenance: Provenance | None = Field(
        default=None, description="For a run imported from an experiment tracker: its source and what was read."
    )
    looks_head: Sha256 | None = Field(
        default=None,
        description="The runs folder's look ledger head (its last "
        "look record's hash) when this record was appended; None: no look recorded "
        "yet (``collect.ledger.looks``: evidence that those looks existed).",
    )
    looks_count: int | None = Field(
        default=None,
        ge=1,
        description="How many look records the look ledger held "
        "then (``looks_head`` is record number ``looks_count``); None with it.",
    )
    prev_sha256: Sha256 | None = Field(
        default=None,
        description="The previous record's hash (the chain); None "
        "only before the record is appended (a stored line without it is refused).",
    )
    record_sha256: Sha256 | None = Field(
        default=None, description="SHA-256 of this record without this field; None only before the record is appended."
    )

    def metric(self, name: str) -> float | None:
        """A metric as a float (NaN/inf restored), or None when not recorded."""
        value = self.metrics.get(name)
        if isinstance(value, str):
            return decode_float(value)
        return value


def encode_metric(value: float | None) -> float | str | None:
    """A metric value as stored: non-finite floats become their string names (``prereg.jsoncodec``)."""
    return None if value is None else encode_float(value)


def parse_utc(text: str | None) -> datetime | None:
    """An ISO-8601 time (a record's ``started_at``, a lock's ``frozen_at``) as an aware UTC datetime
    (``Z`` accepted; no zone means UTC), or None when absent or unreadable."""
    if not text:
        return None
    try:
        value = datetime.fromisoformat(text.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def run_id(plan_sha256: str, stratum: dict[str, Any], arm: str, replicate: int, *, imported: bool = False) -> str:
    """The run id of one cell of the plan, the one rule every writer uses: ``run-`` and 20 hex digits
    of the SHA-256 of the canonical JSON of ``{plan, stratum, arm, replicate}`` for a collected run;
    for an imported row that names none, :func:`imported_run_id` of ``[plan, stratum, arm, replicate]``."""
    if imported:
        return imported_run_id(canonical_text([plan_sha256, stratum, arm, replicate]))
    key = canonical_bytes({"plan": plan_sha256, "stratum": stratum, "arm": arm, "replicate": replicate})
    return "run-" + hashlib.sha256(key).hexdigest()[:20]


def imported_run_id(key_text: str) -> str:
    """``imp-`` and 16 hex digits of the SHA-256 of ``key_text``, the canonical JSON text of
    ``[plan_sha256, stratum, arm, replicate]`` (the columnar importer assembles it from cell texts)."""
    return "imp-" + hashlib.sha256(key_text.encode()).hexdigest()[:16]
