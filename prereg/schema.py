"""The ``prereg/v1`` plan schema: pydantic models that are the format's documentation.

Every model forbids unknown keys and validates strictly (no string-to-number coercion). Field
descriptions flow into ``prereg schema`` (JSON Schema for editors). Cross-references between
sections (a gate naming an unknown metric, a signal no metric is backed by...) are checked after
the models parse, in :mod:`prereg.checks`.
"""

from __future__ import annotations

import itertools
import math
from functools import cached_property
from typing import Annotated, Any, Literal

from pydantic import (
    Field,
    JsonValue,
    PlainSerializer,
    PlainValidator,
    StringConstraints,
    WithJsonSchema,
    model_validator,
)

from estimators.expressions import Contrast, parse_contrast
from estimators.vocabulary import AnalysisUnit, Evidence, Method, Multiplicity, Rule, min_resamples
from prereg.schema_failures import Failures
from prereg.schema_invalidators import (  # noqa: F401 - re-exported: the plan's invalidator models
    ControlsIdentical,
    CounterSupport,
    FailureRate,
    FaultsLanded,
    Invalidator,
    InvalidatorBase,
    LoggerCalibration,
    MetricBounds,
    SensorUpdatePeriod,
)
from prereg.schema_meter import Meter
from prereg.schema_monitoring import Monitoring  # noqa: F401 - re-exported: the plan's monitoring section
from prereg.schema_resources import Resources
from prereg.schema_tracker import TrackerMetric
from prereg.schema_types import Identifier, ItemId, Scalar, StrictModel, Text, level_key  # noqa: F401 - re-exported

SCHEMA_ID = "prereg/v1"


def _contrast(value: object) -> Contrast:
    if isinstance(value, Contrast):
        return value
    if not isinstance(value, str):
        raise ValueError("a contrast is a string such as 'a - b' or 'a / b'")
    return parse_contrast(value)


#: a gate's contrast: parsed once when the plan loads, written back in its canonical spelling
ContrastField = Annotated[
    Contrast,
    PlainValidator(_contrast),
    PlainSerializer(lambda c: c.text, return_type=str),
    WithJsonSchema({"type": "string"}),
]
#: a gate's pass rule: parsed once into the one :class:`estimators.vocabulary.Rule`, written back canonically
RuleField = Annotated[
    Rule,
    PlainValidator(Rule.parse),
    PlainSerializer(lambda r: r.text, return_type=str),
    WithJsonSchema({"type": "string"}),
]

RESAMPLING_METHODS = ("bootstrap", "bca", "signflip")
DEFAULT_RESAMPLES = {"bootstrap": 9999, "bca": 9999, "signflip": 100_000}
DEFAULT_SEED = 0
#: a gate's confidence below this is refused unless the plan says why (``confidence_reason``)
CONFIDENCE_FLOOR = 0.80


class Experiment(StrictModel):
    """What ``collect run`` executes. Omit it for plans whose runs are imported."""

    collector: Annotated[
        str,
        StringConstraints(
            pattern=r"^([a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*|[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*:[A-Za-z_][A-Za-z0-9_]*)$",
            max_length=200,
        ),
    ] = Field(
        description="The collector: a name registered in the entry-point group 'prereg_toolkit.collectors' "
        "(built in: 'command'; installed plugins add their own) "
        "or a class named directly as 'package.module:Class' (docs/extending.md)."
    )
    params: dict[Identifier, JsonValue] = Field(
        default_factory=dict,
        description="Default run parameters; stratum factor levels and arm settings override them.",
    )
    resources: Resources | None = Field(
        default=None,
        description="What each run needs to be placed (CPUs, GPUs, Ray custom resources), with per-cell "
        "overrides; never part of a run's parameters (prereg.schema_resources).",
    )
    failures: Failures | None = Field(
        default=None,
        description="Faults the collector puts into every run of the selected strata, drawn from the stratum's "
        "seed so every arm meets the same ones (prereg.schema_failures; collectors that support it: command).",
    )


class Strata(StrictModel):
    """Matched blocks: every arm runs once per stratum (a combination of factor levels) and replicate."""

    factors: dict[Identifier, Annotated[list[Scalar], Field(min_length=1)]] = Field(
        min_length=1, description="Factor name -> its levels; strata are all combinations."
    )
    replicates: int = Field(default=1, ge=1, le=10_000, description="Replicates per stratum and arm.")
    calibration: list[dict[Identifier, Scalar]] = Field(
        default_factory=list,
        description="Selectors (factor -> level) of strata reserved for calibration, not for claims.",
    )
    held_out: list[dict[Identifier, Scalar]] = Field(
        default_factory=list, description="Selectors (factor -> level) of strata held out until the final evaluation."
    )
    analysis_unit: AnalysisUnit | None = Field(
        default=None,
        description="The unit of analysis of every gate. 'stratum' (the default when omitted): one paired "
        "contrast per stratum, the mean of its replicates' contrasts (log scale for ratios), so the interval "
        "covers the average effect over conditions like these strata. 'replicate': every replicate pair is an "
        "independent block; valid only if the strata do not differ in their effect (otherwise it under-covers).",
    )
    controls: list[dict[Identifier, Scalar]] | None = Field(
        default=None,
        description="Selectors (factor -> level) of no-failure control strata. Controls are checked by "
        "invalidators (e.g. controls_identical) but give no pairs to gates, whose contrast they would pull toward "
        "zero, unless 'pair_controls: true'. Strata a controls_identical invalidator selects with 'where' are "
        "controls too.",
    )
    pair_controls: bool | None = Field(
        default=None,
        description="true: control strata also give pairs to the gates (say why in the hypothesis). Default: "
        "they do not.",
    )
    family_factor: Identifier | None = Field(
        default=None,
        description="The factor whose levels are stress families (e.g. 'family'). With it, every stratum is "
        "calibration or held out, no family is both, and every gate is judged on the held-out strata of each "
        "family by itself as well as pooled: the claim needs every family (no family disappears inside a "
        "pooled median).",
    )
    region_factors: dict[Identifier, Identifier] | None = Field(
        default=None,
        description="Factors whose levels label regions of infrastructure uncertainty (e.g. 'bandwidth_region'), "
        "each naming the metric that records where in its region a run's drawn infrastructure fell (e.g. "
        "'base_bandwidth_mbps'). The ranking is given per family x region; needs 'family_factor'.",
    )

    @cached_property
    def level_lookup(self) -> dict[str, tuple[dict[str, Scalar], dict[str, list[Scalar]]]]:
        """Factor -> (its first level per type-aware key, its levels per written text: ``true`` for
        booleans), computed once so reading a table's levels is linear in its rows."""
        out: dict[str, tuple[dict[str, Scalar], dict[str, list[Scalar]]]] = {}
        for name, levels in self.factors.items():
            by_key: dict[str, Scalar] = {}
            by_text: dict[str, list[Scalar]] = {}
            for level in levels:
                by_key.setdefault(level_key(level), level)
                by_text.setdefault(str(level).lower() if isinstance(level, bool) else str(level), []).append(level)
            out[name] = (by_key, by_text)
        return out

    def enumerate(self) -> list[dict[str, Scalar]]:
        """Every stratum as a factor -> level mapping, in the order the levels are written."""
        names = list(self.factors)
        return [dict(zip(names, combo, strict=True)) for combo in itertools.product(*(self.factors[n] for n in names))]

    @staticmethod
    def selects(selector: dict[str, Scalar], stratum: dict[str, Scalar]) -> bool:
        """Whether ``stratum`` matches every factor -> level pair of ``selector``."""
        return all(name in stratum and level_key(stratum[name]) == level_key(level) for name, level in selector.items())


class Metric(StrictModel):
    """A recorded quantity: its unit, its good direction and the class of its evidence."""

    unit: Annotated[str, StringConstraints(min_length=1, max_length=64)] = Field(description="e.g. nats, J, FLOP.")
    better: Literal["lower", "higher"] = Field(description="Which direction is an improvement.")
    evidence: Evidence = Field(description="measured | modeled | prior | unmeasured | unavailable.")
    signal: Identifier | None = Field(
        default=None, description="Telemetry signal backing this metric (e.g. energy_counter)."
    )
    range: Annotated[list[float], Field(min_length=2, max_length=2)] | None = Field(
        default=None,
        description="[min, max]: the values this metric can plausibly take, in its unit (e.g. [10, 1e7] for a "
        "run's energy in J). 'collect import' refuses rows outside it, naming them; a gate whose runs hold a "
        "value outside it is refused.",
    )
    deterministic: bool | None = Field(
        default=None,
        description="true when the metric's value is fixed by the design (e.g. exact work accounting in a "
        "simulator), so that a gate whose units all show one contrast could not have shown another: only then "
        "is such a gate 'vacuous' (passed as written). Otherwise a constant sample is judged on what it cannot "
        "rule out (with a 'range') or is unresolvable.",
    )
    meter: Meter | None = Field(
        default=None,
        description="What the logs of this metric's signal cannot say (counter update period, "
        "power averaging model); only on a signal-backed metric.",
    )
    tracker: TrackerMetric | None = Field(
        default=None,
        description="For 'collect import' from an experiment tracker: the key the metric was logged under and "
        "which of its values to take (unset: the metric's own name, the last value).",
    )
    description: Text | None = None

    @model_validator(mode="after")
    def _range_ordered(self) -> Metric:
        if self.range is not None:
            low, high = self.range
            if not (math.isfinite(low) and math.isfinite(high)):
                raise ValueError("range: both ends must be finite numbers")
            if not low < high:
                raise ValueError(f"range: min ({low:g}) must be below max ({high:g})")
        if self.meter is not None and self.signal is None:
            raise ValueError("meter: only a metric backed by a signal ('signal:') has a meter to describe")
        return self


class Gate(StrictModel):
    """A paired contrast of arms on one metric, an interval method, and the frozen rule it must meet."""

    id: ItemId
    metric: Identifier
    contrast: ContrastField = Field(
        description="Linear 'a - b', '(a - b) - (c - d)', 'a - 0.5*b - 0.5*c' or ratio 'a / b', '(a / b) / (c / d)'."
    )
    method: Method
    confidence: float = Field(
        gt=0.5,
        lt=1,
        description="Two-sided level; a one-sided test uses one bound of it. Below 0.80 it is "
        "refused unless 'confidence_reason' says why.",
    )
    confidence_reason: Text | None = Field(
        default=None,
        description="Why this gate's confidence is below 0.80 (required then; the reports print the level in "
        "words beside it).",
    )
    pass_if: RuleField = Field(
        description="'upper < X', 'upper <= X', 'lower > X', 'lower >= X', 'within [A, B]' (tests), or "
        "'estimate < X', 'estimate > X' (the point estimate alone: no test, allowed only on a sensitivity gate, "
        "reported as descriptive); ratio contrasts state X on the ratio scale."
    )
    role: Literal["primary", "sensitivity"] = Field(
        default="primary",
        description="Sensitivity gates are reported but never decide the claim and never enter the multiplicity "
        "family. A sensitivity gate with an 'estimate' rule is descriptive: judged on the point estimate, no "
        "p-value.",
    )
    group: Identifier | None = Field(default=None, description="A family of gates, e.g. 'mechanism'.")
    resamples: int | None = Field(
        default=None,
        ge=1,
        le=10_000_000,
        description="Resampling methods only (bootstrap, bca, signflip); at "
        "least 100, and at least 1 / alpha - 1 (199 at confidence 0.99) so the smallest p-value can clear alpha.",
    )
    seed: int | None = Field(default=None, ge=0, description="Resampling methods only; fixed at freeze time.")
    direction: Literal["first_arm_better", "first_arm_worse"] | None = Field(
        default=None,
        description="What a pass shows about the contrast's first arm(s) (positive coefficients, or the "
        "numerator of a ratio) by the metric's 'better': 'first_arm_better' (the default the rule is checked "
        "against) or 'first_arm_worse', to declare on purpose a gate that passes when the first arm is worse; "
        "prereg show prints it in words. Not for interactions (a difference of differences).",
    )
    description: Text | None = None

    @model_validator(mode="before")
    @classmethod
    def _resampling_defaults(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        method = data.get("method")
        if method in RESAMPLING_METHODS:
            data = dict(data)
            data.setdefault("resamples", DEFAULT_RESAMPLES[method])
            data.setdefault("seed", DEFAULT_SEED)
        elif isinstance(method, str):
            for key in ("resamples", "seed"):
                if data.get(key) is not None:
                    raise ValueError(f"'{key}' applies only to resampling methods {RESAMPLING_METHODS}, not '{method}'")
        return data

    @model_validator(mode="after")
    def _can_decide(self) -> Gate:
        """Refuse what cannot decide honestly: an untested rule on a primary gate, a confidence
        below :data:`CONFIDENCE_FLOOR` with no reason, fewer resamples than the estimators need."""
        rule = self.pass_if
        if self.role == "primary" and not rule.tested:
            better = {"<": "upper", ">": "lower"}.get(rule.op or "", "upper")
            suggestion = f"{better} {rule.op} {rule.threshold!r}" if rule.quantity == "estimate" else "upper < X"
            raise ValueError(
                f"gate {self.id!r}: '{rule}' compares the point estimate alone, which is no test (on pure noise "
                "it passes about half the time, at any n), so it cannot decide the claim; use "
                f"'{suggestion}' (a one-sided test at level (1 - confidence) / 2), or make the gate descriptive "
                "with 'role: sensitivity'"
            )
        if self.confidence < CONFIDENCE_FLOOR and self.confidence_reason is None:
            raise ValueError(
                f"gate {self.id!r}: confidence {self.confidence:g} is below the {CONFIDENCE_FLOOR:g} floor (its "
                f"one-sided test would be at level {(1 - self.confidence) / 2:.3g}); raise it, or state why in "
                "'confidence_reason'"
            )
        if self.resamples is not None and self.resamples < min_resamples(self.confidence):
            raise ValueError(
                f"gate {self.id!r}: resamples {self.resamples} is below the {min_resamples(self.confidence)} the "
                f"{self.method} estimator needs at confidence {self.confidence:g} (at least 100, and enough that "
                "the smallest p-value 1 / (resamples + 1) can clear alpha)"
            )
        return self


class Decision(StrictModel):
    """How gate verdicts decide the claim."""

    claim: Text = Field(description="The sentence the study claims when the decision is 'supported'.")
    require: Literal["all"] = Field(
        default="all", description="'all': every primary gate must pass (an intersection-union test)."
    )
    multiplicity: Multiplicity = Field(default="none", description="Adjustment applied to the gates' rule p-values.")


class RankingRule(StrictModel):
    """How the challenger and the comparator are ordered in each family x uncertainty region."""

    metric: Identifier | None = Field(
        default=None, description="The metric ranked (default: the comparator's selection metric)."
    )
    scale: Literal["ratio", "difference"] = Field(
        default="ratio", description="challenger / comparator (ratio of positive values) or challenger - comparator."
    )
    method: Method = Field(default="t", description="Paired interval method of the ranking (t, signflip, ...).")
    confidence: float = Field(default=0.90, gt=0.5, lt=1, description="Two-sided level of the ranking's intervals.")
    error_control: Literal["holm", "bonferroni", "per_cell"] = Field(
        default="holm",
        description="How the error of ordering a cell is held over all the ranking's cells: 'holm' (the "
        "family-wise error at 1 - confidence by Holm's step-down over the cells), 'bonferroni' (the same "
        "by a simultaneous band: every cell at (1 - confidence) / cells) or 'per_cell' (each cell alone at "
        "confidence; the chance that some cell is ordered by chance grows with the number of cells).",
    )


class ComparatorRule(StrictModel):
    """The frozen rule that picks the fixed comparator from the calibration strata only.

    The candidate with the best ``statistic`` (``median`` or ``mean``; best by the metric's ``better``)
    of ``metric`` over its runs on calibration strata is chosen; a tie is broken by each
    ``tie_break`` metric in turn (same statistic, each by its own ``better``), then by the order
    the candidates are listed. Held-out strata never enter the choice. Gates name the chosen arm
    by ``name`` in their contrasts (``adaptive / comparator``)."""

    name: Identifier = Field(default="comparator", description="The placeholder gate contrasts use for the chosen arm.")
    candidates: Annotated[list[Identifier], Field(min_length=2)] = Field(description="The fixed arms it chooses from.")
    challenger: Identifier = Field(description="The arm judged against the comparator (e.g. an adaptive policy).")
    metric: Identifier = Field(description="The selection metric, e.g. 'time_to_target'.")
    statistic: Literal["median", "mean"] = Field(
        default="median", description="Per candidate, over its calibration runs."
    )
    tie_break: list[Identifier] = Field(default_factory=list, description="Metrics that break a tie, in order.")
    ranking: RankingRule = Field(default_factory=RankingRule, description="The ranking under uncertainty.")


class Predecessor(StrictModel):
    """An earlier evaluation artifact of the same line of work, and what this plan changes about it."""

    path: Annotated[str, StringConstraints(min_length=1, max_length=4096)]
    sha256: Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]
    changes: Text


class DataDeclaration(StrictModel):
    """Where the runs come from in time. Without it every run must start after the plan was frozen."""

    pre_existing: bool = Field(
        description="true: the plan analyses runs that (may) have started before it was frozen; the decision "
        "still stands but every report says it is an analysis of pre-existing data."
    )
    reason: Text = Field(description="Why pre-existing data are analysed, shown to reviewers.")


#: the parts of a run's code identity ``gates evaluate`` compares across the runs of a study
#: (``gates.code_identity``): each name -> the record field(s) it reads
CODE_PARTS: dict[str, str] = {
    "files": "code.command.files_sha256 (the command collector's hashed code files)",
    "files_git": "code.command.files_git (commit and dirty flag of the repository holding the command's workdir)",
    "python": "code.command.python.version (the Python the command ran under)",
    "packages": "code.command.packages (the versions of the distributions the command collector reads)",
    "toolkit": "code.toolkit_version (the toolkit that recorded the run)",
    "git": "code.git (commit and dirty flag of the repository 'collect run' was started in)",
}
CodePart = Literal["files", "files_git", "python", "packages", "toolkit", "git"]


class CodeIdentityDeclaration(StrictModel):
    """Parts of the runs' code identity that may differ between runs, declared up front with why.
    Without it every part must be the same in every run, or the decision is refused."""

    may_differ: Annotated[list[CodePart], Field(min_length=1)] = Field(
        description="The parts that may differ between runs: "
        + "; ".join(f"{k}: {v}" for k, v in CODE_PARTS.items())
        + ". A part not named here that differs still refuses the decision."
    )
    reason: Text = Field(
        description="Why the code may differ between runs (e.g. a bug fix half-way through "
        "collection), shown to reviewers in every report."
    )

    @model_validator(mode="after")
    def _distinct(self) -> CodeIdentityDeclaration:
        if len(set(self.may_differ)) != len(self.may_differ):
            raise ValueError("may_differ: a part is named twice")
        return self


class Plan(StrictModel):
    """A preregistration in the ``prereg/v1`` format."""

    schema_version: Literal["prereg/v1"] = Field(alias="schema", description="Always 'prereg/v1'.")
    study: Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$", max_length=128)] = Field(
        description="A short slug naming the study."
    )
    title: Text
    hypothesis: Text
    experiment: Experiment | None = None
    arms: dict[Identifier, dict[Identifier, Scalar]] = Field(
        min_length=2, description="Arm name -> its settings (overriding experiment params)."
    )
    strata: Strata
    metrics: dict[Identifier, Metric] = Field(min_length=1)
    invalidators: list[Invalidator] = Field(default_factory=list)
    gates: list[Gate] = Field(min_length=1)
    decision: Decision
    scope: Text | None = Field(default=None, description="What the evidence will not cover, shown to reviewers.")
    comparator: ComparatorRule | None = Field(
        default=None, description="A fixed comparator chosen from the calibration strata by a frozen rule."
    )
    predecessors: list[Predecessor] = Field(default_factory=list)
    data: DataDeclaration | None = Field(
        default=None,
        description="Declare up front that the plan analyses pre-existing data (runs started before the "
        "freeze); otherwise such runs refuse the decision.",
    )
    code_identity: CodeIdentityDeclaration | None = Field(
        default=None,
        description="Declare up front which parts of the runs' code identity may differ between runs, and why; "
        "otherwise runs whose code identity differs refuse the decision (gates.code_identity).",
    )
    monitoring: Monitoring | None = Field(
        default=None,
        description="Preregistered interim looks (prereg.schema_monitoring): at each look a gate uses only the "
        "alpha its spending function has released; without it every evaluation is the final one.",
    )

    @model_validator(mode="before")
    @classmethod
    def _faults_checked(cls, data: Any) -> Any:
        """A plan whose experiment injects failures checks that they landed: a ``faults_landed``
        invalidator blocking every gate is added unless the plan declares one."""
        if not isinstance(data, dict):
            return data
        experiment = data.get("experiment")
        invalidators = data.get("invalidators", [])
        if not (
            isinstance(experiment, dict) and experiment.get("failures") is not None and isinstance(invalidators, list)
        ):
            return data
        if any(isinstance(inv, dict) and inv.get("kind") == "faults_landed" for inv in invalidators):
            return data
        return {
            **data,
            "invalidators": [*invalidators, {"id": "faults_landed", "kind": "faults_landed", "blocks": "all"}],
        }

    def control_selectors(self) -> list[dict[str, Scalar]]:
        """Selectors of the no-failure control strata: ``strata.controls`` and every
        ``controls_identical`` invalidator's ``where``."""
        selectors = list(self.strata.controls or [])
        selectors += [inv.where for inv in self.invalidators if isinstance(inv, ControlsIdentical)]
        return selectors

    def pairing_strata(self) -> list[dict[str, Scalar]]:
        """The strata that give pairs to the gates: not calibration, and not a control unless
        ``strata.pair_controls`` (enumerates every stratum)."""
        controls = [] if self.strata.pair_controls else self.control_selectors()
        excluded = list(self.strata.calibration) + controls
        return [s for s in self.strata.enumerate() if not any(Strata.selects(sel, s) for sel in excluded)]
