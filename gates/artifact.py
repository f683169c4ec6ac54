"""The evaluation artifact (``evaluation.json``, schema ``gates/evaluation/v2``): its pydantic models document it.

``write_evaluation`` writes it atomically and ``read_evaluation`` reads it back; a ``gates/evaluation/v1``
file is refused with one :class:`EvaluationError`. Non-finite numbers are stored as the strings
``"Infinity"`` / ``"-Infinity"`` (recorded values in the per-block rows may also be ``"NaN"``) and read
back by :func:`as_float`. The format's history: docs/integrity.md.
"""

from __future__ import annotations

import hashlib
import html
import os
from pathlib import Path
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, ValidationError, model_serializer

from estimators.vocabulary import AnalysisUnit, Decision, Evidence, Multiplicity, Scale, Verdict
from gates.artifact_aa import AAPairResult
from gates.artifact_families import ComparatorChoice, FamilyResult, RankingCell
from gates.artifact_monitoring import MonitoringResult
from gates.artifact_runs import DescriptiveMetric, FailedRunEntry
from gates.frame import evaluation_frame
from gates.htmlview import evaluation_view
from gates.numbers import DataNumber, Number
from gates.refusal import Refusal
from prereg.errors import InputError, RetiredFormat
from prereg.fileio import atomic_write, not_a_readable_file
from prereg.jsoncodec import JSONFormatError, canonical_bytes, loads, readable_json
from prereg.plan import read_input_file
from prereg.schema import CodePart, RuleField
from prereg.schema_types import Scalar

EVALUATION_SCHEMA: Final = "gates/evaluation/v2"
V1_SCHEMA: Final = "gates/evaluation/v1"
MAX_ARTIFACT_BYTES = 256 << 20


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Resolution(_Model):
    """Whether the metric's measurement bounds could change the rule's outcome."""

    interval_bound: Number = Field(description="How far an interval end can move (analysis scale; log for ratios).")
    could_change: bool
    extremes: list[list[Number]] = Field(description="The two extreme intervals checked, [lower, upper] each.")


class GateResult(_Model):
    """One gate's evaluation."""

    id: str
    metric: str
    unit: str
    contrast: str
    scale: Scale
    role: Literal["primary", "sensitivity"]
    group: str | None = None
    verdict: Verdict
    estimate: Number | None = None
    lower: Number | None = None
    upper: Number | None = None
    confidence: float
    attained_confidence: float | None = None
    method: str
    n_pairs: int
    rule: RuleField = Field(description="The frozen pass_if, canonical spelling.")
    margin: list[float] = Field(description="The rule's threshold [X], or [A, B] for within.")
    null: float = Field(description="The null on the reported scale: 0 (difference) or 1 (ratio).")
    analysis_unit: AnalysisUnit = Field(
        default="stratum", description="What one pair is: a stratum (replicates averaged) or a replicate."
    )
    pvalue: float | None = Field(
        default=None,
        description="One-sided p-value of the shifted null the rule implies; it decides the verdict (pass exactly "
        "when p <= (1 - confidence) / 2). None when there is no test: constant contrasts (vacuous) or an estimate rule.",
    )
    pvalue_adjusted: float | None = Field(default=None, description="After the plan's multiplicity rule.")
    evidence: Evidence = Field(description="The weakest of the plan's declaration and what the runs recorded.")
    evidence_declared: Evidence | None = Field(
        default=None, description="The class the plan declared for the metric (when it differs from 'evidence')."
    )
    direction: str | None = Field(default=None, description="The gate's declared direction intent, if any.")
    refused_by: list[Refusal] = Field(
        default_factory=list,
        description="Why the gate was refused, one typed reason each (gates.refusal: kind, id, reason).",
    )
    notes: list[str] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list, description="From the estimator.")
    resolution: Resolution | None = None
    arm_medians: dict[str, Number | None] = Field(
        default_factory=dict, description="Median of the metric per arm over the blocks (diagnostics)."
    )


class InvalidatorResult(_Model):
    """One invalidator's check."""

    id: str
    kind: str
    fired: bool
    observed: Number | str | None = None
    threshold: Number | str | None = None
    detail: str
    blocks: list[str] = Field(description="Gate ids this invalidator refuses when it fires.")


class BlockRow(_Model):
    """A block (stratum x replicate): each gate's contrast value there and the arms' values."""

    block: str
    stratum: dict[str, Scalar]
    replicate: int
    contrasts: dict[str, Number | None] = Field(description="Gate id -> the block's contrast (reported scale).")
    values: dict[str, dict[str, DataNumber | None]] = Field(description="Metric -> arm -> recorded value.")


class RunAccounting(_Model):
    """How the ledger matched the plan."""

    planned: int
    matched: int
    missing: list[str] = Field(default_factory=list)
    failed: list[str] = Field(default_factory=list)
    duplicate: list[str] = Field(default_factory=list)
    unplanned: list[str] = Field(default_factory=list)
    other_plan: list[str] = Field(default_factory=list)
    ledger_problems: list[str] = Field(default_factory=list)


class LedgerIdentity(_Model):
    """Which ledger was evaluated."""

    path: str
    sha256: str | None
    records: int
    torn_tail: bool
    chain: Literal["intact", "empty"] = Field(
        description="The ledger's hash chain: intact, or empty (no records); a broken chain refuses the evaluation."
    )
    head_sha256: str | None = Field(
        default=None, description="The chain's head hash (the last record's); null for an empty ledger."
    )


class AmendmentSummary(_Model):
    """One amendment of the plan, as reviewers need to see it."""

    version: int
    amended_at: str
    reason: str
    post_data: bool
    runs_checked: bool


class PredecessorCheck(_Model):
    """An earlier evaluation named by the plan, and whether its file still has the stated hash."""

    path: str
    sha256: str
    changes: str
    status: Literal["verified", "mismatch", "missing"]
    actual_sha256: str | None = Field(default=None, description="The file's SHA-256 when it does not match.")
    recorded_decision: Decision | None = Field(default=None, description="The predecessor's own decision.")
    recorded_claim: str | None = None
    recorded_at: str | None = Field(default=None, description="When the predecessor was evaluated.")
    recorded_note: str | None = Field(default=None, description="Why no conclusion could be read from it.")


class TimeOrder(_Model):
    """Runs against the time the plan (and each amendment) was fixed (``gates.timeorder``)."""

    pre_existing: bool = Field(default=False, description="The plan declares it analyses pre-existing data.")
    reason: str | None = Field(default=None, description="The plan's reason for analysing pre-existing data.")
    before_freeze: list[str] = Field(default_factory=list, description="Runs started before frozen_at.")
    before_amendment: list[str] = Field(
        default_factory=list, description="Runs started before an amendment they are judged under."
    )
    unknown_start: list[str] = Field(default_factory=list, description="Runs whose start was not recorded.")
    unreadable_start: list[str] = Field(default_factory=list, description="started_at values that are not times.")


class PlanYamlCheck(_Model):
    """The YAML beside the lock compared with the locked plan (as ``prereg verify`` does)."""

    path: str
    status: Literal["matches", "layout_changed", "changed", "invalid"]
    changed: list[str] = Field(default_factory=list, description="Field paths that differ from the lock.")
    notice: str


class Controls(_Model):
    """No-failure control blocks: checked by invalidators; pairs only when the plan says so."""

    blocks: list[str] = Field(description="Control blocks (stratum x replicate).")
    paired: bool = Field(description="Whether they gave pairs to the gates (strata.pair_controls).")


class GroupTally(_Model):
    """Verdict counts of one gate group."""

    total: int
    counts: dict[str, int]


class PhaseSupportRow(_Model):
    """How well one signal resolves one phase across the matched runs that had it (updates counted
    inside the phase's intervals; ``required``: the largest ``min_updates`` a ``counter_support``
    invalidator preregistered for this phase, None when none did)."""

    signal: str
    phase: str
    runs: int = Field(description="Matched runs in which the phase occurred.")
    runs_without: int = Field(description="Matched runs in which it never occurred.")
    min_updates: int | None = None
    median_updates: float | None = None
    max_updates: int | None = None
    median_duration_ms: float | None = None
    required: int | None = None
    enough: bool | None = Field(default=None, description="min_updates >= required (None: nothing required).")


class LockReference(_Model):
    """The lock an evaluation was made under: where it was given, its version and that version's seal."""

    path: str = Field(description="The lock as given to gates evaluate (where reports look for it first).")
    version: int = Field(ge=1, description="The plan version evaluated (1 = as first frozen).")
    seal: str = Field(description="That version's seal (prereg.lock_seal): compare it with the published one.")


class CodeDifference(_Model):
    """One part of the code identity that differs between runs, with two runs that differ in it."""

    part: CodePart = Field(description="The part (prereg.schema.CODE_PARTS names the record field it reads).")
    record_field: str = Field(description="The record field that differs, e.g. code.command.files_sha256.")
    runs: list[str] = Field(min_length=2, max_length=2, description="Two run ids whose values differ.")
    values: list[str] = Field(
        min_length=2,
        max_length=2,
        description="Their values in words (hashes shortened; 'not recorded' when a run lacks the part).",
    )
    declared: bool = Field(description="The plan declares this part may differ (code_identity.may_differ).")

    def words(self) -> str:
        """'files_sha256 differs (run-a: 1a2b3c4d5e6f, run-b: 3c4d5e6f7a8b)': the refusal's and reports' words."""
        (a, b), (va, vb) = self.runs, self.values
        return f"{self.record_field.removeprefix('code.').removeprefix('command.')} differs ({a}: {va}, {b}: {vb})"


class CodeIdentity(_Model):
    """Whether the matched runs were made by the same code (``gates.code_identity``)."""

    status: Literal["same", "differs", "differs_declared", "not_recorded"] = Field(
        description="same: every compared part is equal in every run carrying a code identity; differs: a part "
        "the plan does not declare differs (refuses the decision, kind code_identity); differs_declared: only "
        "parts the plan declares may differ differ; not_recorded: no matched run carries a code identity "
        "(imported runs: nothing to compare)."
    )
    parts: list[CodePart] = Field(default_factory=list, description="The parts that differ between runs.")
    compared: list[CodePart] = Field(default_factory=list, description="The parts recorded by some run, compared.")
    declared: list[CodePart] = Field(default_factory=list, description="The parts the plan declares may differ.")
    reason: str | None = Field(default=None, description="The plan's reason why the code may differ.")
    examples: list[CodeDifference] = Field(default_factory=list, description="Per differing part, two runs.")
    runs: int = Field(default=0, description="Matched runs carrying a code identity (the runs compared).")
    without_identity: int = Field(
        default=0, description="Matched runs carrying none (imported: made elsewhere); never compared."
    )
    notes: list[str] = Field(default_factory=list, description="What the comparison cannot show, in words.")


class Evaluation(_Model):
    """The whole artifact."""

    schema_: Literal["gates/evaluation/v2"] = Field(EVALUATION_SCHEMA, alias="schema")
    prereg_sha256: str
    genesis_plan_sha256: str
    study: str
    title: str
    claim: str
    scope: str | None = None
    frozen_at: str
    amendments: list[AmendmentSummary]
    ledger: LedgerIdentity
    runs: RunAccounting
    decision: Decision
    decision_reason: str
    multiplicity: Multiplicity
    gates: list[GateResult]
    groups: dict[str, GroupTally]
    invalidators: list[InvalidatorResult]
    blocks: list[BlockRow]
    predecessors: list[PredecessorCheck]
    toolkit_version: str
    evaluated_at: str
    decision_refused_by: list[Refusal] = Field(
        default_factory=list,
        description="Reasons outside the gates that refuse the decision (kinds seal, time_order, predecessor, "
        "code_identity, interim, aa_difference, aa_unchecked).",
    )
    time_order: TimeOrder | None = None
    plan_yaml: PlanYamlCheck | None = Field(default=None, description="None when no YAML lies beside the lock.")
    controls: Controls | None = None
    superseded_by: list[str] = Field(
        default_factory=list,
        description="Amendments made after the plan version evaluated (gates evaluate --plan-version).",
    )
    other_plan_note: str | None = Field(
        default=None, description="What to do about runs recorded under another plan hash, in one sentence."
    )
    phase_support: list[PhaseSupportRow] = Field(
        default_factory=list,
        description="Per signal and phase: the updates runs saw inside it (empty when the "
        "runs recorded no per-phase telemetry).",
    )
    comparator: ComparatorChoice | None = Field(
        default=None, description="The fixed comparator chosen from calibration runs only (plans with a comparator)."
    )
    families: list[FamilyResult] = Field(
        default_factory=list, description="Every gate judged on each held-out family alone (plans with family_factor)."
    )
    ranking: list[RankingCell] = Field(
        default_factory=list, description="Challenger vs comparator per family x uncertainty region."
    )
    lock: LockReference | None = Field(
        default=None, description="The lock evaluated under (gates verify and reports re-evaluate from it)."
    )
    code_identity: CodeIdentity | None = Field(
        default=None,
        description="Whether the matched runs were made by the same code (code files, git, Python, "
        "packages, toolkit); a difference the plan does not declare refuses the decision.",
    )
    monitoring: MonitoringResult | None = Field(
        default=None,
        description="Monitored plans only (absent otherwise): the point of the frozen run order "
        "evaluated, whether it is a planned look (a decision) or an interim reading (never a decision), what the "
        "plan says to do next, every gate's boundary per look and the looks recorded before "
        "(gates.artifact_monitoring).",
    )
    failed_runs: list[FailedRunEntry] = Field(
        default_factory=list,
        description="Every failed run of a planned cell, with its reason in words (gates.artifact_runs).",
    )
    descriptive_metrics: list[DescriptiveMetric] = Field(
        default_factory=list,
        description="Every declared metric per arm, then the undeclared ones the runs kept: "
        "descriptive, not a test (gates.artifact_runs).",
    )
    aa_pairs: list[AAPairResult] = Field(
        default_factory=list,
        description="Plans with A/A pairs (an arm and its control copy, 'control_of') only (absent otherwise): "
        "each pair's paired interval per primary gate's metric; one that excludes no difference, or cannot be "
        "computed, refuses the decision (gates.aa_pairs, gates.artifact_aa).",
    )
    seal_sha256: str | None = Field(
        default=None, description="SHA-256 of the artifact's canonical JSON without this field, set when written."
    )

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    @model_serializer(mode="wrap")
    def _without_absent_monitoring(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """An unmonitored plan's artifact carries no ``monitoring`` key at all, and a plan without A/A pairs no
        ``aa_pairs`` key (their bytes and seal as before)."""
        data: dict[str, Any] = handler(self)
        if data.get("monitoring", 0) is None:
            del data["monitoring"]
        if data.get("aa_pairs", 0) == []:
            del data["aa_pairs"]
        return data

    def to_frame(self) -> Any:
        """A pandas DataFrame, one row per gate (``gates.frame.COLUMNS``); needs pandas."""
        return evaluation_frame(self)

    def _repr_html_(self) -> str:
        """Jupyter's rendering: the view ``reports`` registers (:mod:`gates.htmlview`; a table of
        gates), or, before ``import reports``, the decision and gate verdicts as escaped text."""
        view = evaluation_view()
        if view is not None:
            return view(self)
        verdicts = ", ".join(f"{g.id} {g.verdict}" for g in self.gates) or "no gates"
        text = (
            f"{self.title} ({self.study})\ndecision: {self.decision.replace('_', ' ').upper()}: "
            f"{self.decision_reason}\ngates: {verdicts}\n(import reports for the table)"
        )
        return f'<pre class="prereg-evaluation">{html.escape(text, quote=True)}</pre>'


def seal_hash(data: dict[str, Any]) -> str:
    """SHA-256 of an artifact's canonical JSON (sorted keys, no whitespace) without ``seal_sha256``."""
    return hashlib.sha256(canonical_bytes({k: v for k, v in data.items() if k != "seal_sha256"})).hexdigest()


def write_evaluation(path: str | os.PathLike[str], evaluation: Evaluation) -> None:
    """Write the artifact atomically (temporary file, fsync, rename), sealed with ``seal_sha256``."""
    write_encoded(path, sealed_bytes(evaluation)[1])


def sealed_bytes(evaluation: Evaluation) -> tuple[Evaluation, bytes]:
    """``(sealed(evaluation), the file write_evaluation writes for it)`` from one dump and one hash: the
    artifact sealed and encoded in one pass (``write_encoded`` writes the bytes)."""
    data = evaluation.model_dump(mode="json", by_alias=True)
    data["seal_sha256"] = seal = seal_hash(data)
    return evaluation.model_copy(update={"seal_sha256": seal}), (readable_json(data) + "\n").encode()


def write_encoded(path: str | os.PathLike[str], encoded: bytes) -> None:
    """Write an artifact's bytes (from :func:`sealed_bytes`) atomically."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(target, encoded)


class EvaluationError(InputError, ValueError):
    """A file that is not a readable ``gates/evaluation/v2`` artifact (a v1 file included)."""


def v1_message(path: str | os.PathLike[str]) -> str:
    """The one message for a ``gates/evaluation/v1`` file (its history: docs/integrity.md), worded as
    every retired format's (``prereg.errors.RetiredFormat``)."""
    return str(
        RetiredFormat(
            path, V1_SCHEMA, EVALUATION_SCHEMA, "re-run 'gates evaluate LOCK RUNS' on its runs to write it again"
        )
    )


def read_evaluation(path: str | os.PathLike[str]) -> Evaluation:
    """Read and validate an artifact; raise ``EvaluationError`` with one clear message."""
    p = Path(path)
    expects = "expects an evaluation.json written by 'gates evaluate LOCK RUNS'"
    if p.is_dir():
        hint = f" ({p / 'evaluation.json'})" if (p / "evaluation.json").is_file() else " (none here yet)"
        raise EvaluationError(f"{p}: is a folder; this {expects}, by default RUNS/evaluation.json{hint}")

    problem = not_a_readable_file(p)
    if problem:
        raise EvaluationError(problem)
    try:
        raw = read_input_file(p, limit=MAX_ARTIFACT_BYTES)
    except ValueError as err:  # too large, unreadable, not a regular file
        raise EvaluationError(str(err)) from None
    if p.name == "ledger.jsonl" or b'"record":"collect/run/' in raw[:65536].split(b"\n", 1)[0]:
        raise EvaluationError(
            f"{p}: is a run ledger, not an evaluation; this {expects} "
            f"(gates evaluate writes {p.parent / 'evaluation.json'})"
        )
    if p.suffix.lower() in (".yaml", ".yml", ".csv") or p.name.endswith(".lock.json"):
        what = "a plan or lock" if p.suffix.lower() != ".csv" else "a table of runs"
        raise EvaluationError(f"{p}: is {what}, not an evaluation; this {expects}")
    return parse_evaluation(raw, str(p), hint=f"; this {expects}")


def parse_evaluation(raw: bytes, where: str, hint: str = "") -> Evaluation:
    """The artifact held by ``raw`` (the bytes of ``where``), validated; ``EvaluationError`` otherwise.
    The only parser of the format: :func:`read_evaluation` and a plan's predecessors use it."""
    if len(raw) > MAX_ARTIFACT_BYTES:
        raise EvaluationError(f"{where}: larger than {MAX_ARTIFACT_BYTES} bytes: not an evaluation artifact")
    try:
        data: Any = loads(raw)
    except JSONFormatError as err:
        raise EvaluationError(f"{where}: not an evaluation artifact ({err}){hint}") from None
    if isinstance(data, dict) and data.get("schema") == V1_SCHEMA:
        raise EvaluationError(v1_message(where))
    if not isinstance(data, dict) or data.get("schema") != EVALUATION_SCHEMA:
        raise EvaluationError(f'{where}: not an evaluation artifact (expected "schema": "{EVALUATION_SCHEMA}")')
    try:
        return Evaluation.model_validate(data)
    except ValidationError as err:
        first = err.errors(include_url=False)[0]
        loc = ".".join(str(x) for x in first["loc"])
        raise EvaluationError(f"{where}: malformed evaluation artifact: {loc}: {first['msg']}") from None


def seal_status(ev: Evaluation) -> Literal["sealed", "broken", "unsealed"]:
    """Whether the artifact still has the hash sealed when it was written (unsealed: built in memory and not yet
    written, or its ``seal_sha256`` was removed)."""
    if ev.seal_sha256 is None:
        return "unsealed"
    for exclude_unset in (True, False):  # as read back from a file; as built in memory
        if seal_hash(ev.model_dump(mode="json", by_alias=True, exclude_unset=exclude_unset)) == ev.seal_sha256:
            return "sealed"
    return "broken"


def sealed(ev: Evaluation) -> Evaluation:
    """A copy of ``ev`` with ``seal_sha256`` set (``write_evaluation`` seals what it writes too)."""
    return ev.model_copy(update={"seal_sha256": seal_hash(ev.model_dump(mode="json", by_alias=True))})


def is_evaluation_file(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is an evaluation artifact (a file the toolkit wrote, safe to replace)."""
    try:
        read_evaluation(path)
    except EvaluationError:
        return False
    return True
