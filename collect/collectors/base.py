"""The collector interface: one run in, metrics (and optional traces and telemetry) out.

A collector is a class with a ``name`` (the plan's ``experiment.collector``), a table of the
parameters it reads (``PARAMS``: name -> ``Param``), and ``run(ctx) -> RunResult``. The engine
(``collect run``) merges a run's parameters -- the plan's ``experiment.params`` (defaults),
overridden by the stratum's factor levels, overridden by the arm's settings -- checks them with
``check_run`` (by default :func:`check_params`: unknown names are refused; types and ranges
checked), derives the seed from
the stratum and replicate (never the arm: common random numbers), and calls ``run``.

Collectors are deterministic given ``ctx.params`` and ``ctx.seed``. They may write files only
under ``ctx.trace_dir`` and only with names starting ``f"{ctx.run_id}."`` (see ``trace_path``).
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from prereg.errors import InputError


class ParamError(InputError, ValueError):
    """A run parameter the collector does not know, or a value it cannot use."""


@dataclass(frozen=True)
class Param:
    """One documented parameter: its type, default (None = required) and a check."""

    kind: type | tuple[type, ...]
    default: Any
    help: str
    check: Callable[[Any], bool] | None = None
    check_text: str = ""


@dataclass(frozen=True)
class SharedInputs:
    """What the runs read from the driver's disk beyond their parameters (``Collector.shared_inputs``),
    for an executor that assumes no shared filesystem (Ray): it sends them to each worker, which checks
    every file's SHA-256 and places it under its private runs folder."""

    #: name (a relative POSIX path under the worker's private runs folder) -> the file on the driver
    files: dict[str, Path] = field(default_factory=dict)
    #: plain data learnt on the driver that a run reports (e.g. the git identity of the program's code)
    facts: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Shipped:
    """On a worker away from the driver's disk: where the shared inputs lie (``root``, the run's private
    runs folder: ``trace_dir.parent``), each file already checked against its SHA-256, and the facts."""

    root: Path
    facts: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class RunContext:
    """Everything a collector needs for one run."""

    run_id: str
    params: Mapping[str, Any]
    seed: int
    stratum: Mapping[str, Any]
    arm: str
    replicate: int
    trace_dir: Path
    plan_sha256: str = ""  # the plan the run belongs to (empty when run outside the engine)
    shipped: Shipped | None = None  # set when the run executes away from the driver's disk (Ray)

    def trace_path(self, suffix: str) -> Path:
        """``trace_dir / f"{run_id}.{suffix}"``; ``suffix`` may not contain a path separator."""
        if "/" in suffix or "\\" in suffix or suffix.startswith("."):
            raise ValueError(f"bad trace suffix {suffix!r}")
        return self.trace_dir / f"{self.run_id}.{suffix}"


@dataclass
class RunResult:
    """What a run produced: metrics by name (floats), optional telemetry summaries and trace files."""

    metrics: dict[str, float]
    telemetry: dict[str, dict[str, Any]] = field(default_factory=dict)
    traces: list[str] = field(default_factory=list)  # file names written under trace_dir
    info: dict[str, Any] = field(default_factory=dict)  # extra identity (e.g. data hash), kept in ``code``


class Collector(abc.ABC):
    """Base class of the built-in collectors."""

    name: ClassVar[str] = ""
    PARAMS: ClassVar[dict[str, Param]] = {}
    METRICS: ClassVar[dict[str, str]] = {}  # metric name -> unit, for documentation and checks
    EVIDENCE: ClassVar[str] = "modeled"  # the evidence class of every metric (simulators: modeled)
    #: True for a collector that produces whatever metrics the plan declares (``command``): the engine
    #: then accepts every plan metric and passes their names, in plan order, as the parameter ``metrics``
    #: (which the plan itself may not set); ``METRICS`` is then only documentation
    PLAN_METRICS: ClassVar[bool] = False

    @classmethod
    def check_run(cls, params: Mapping[str, Any], stratum: Mapping[str, Any]) -> dict[str, Any]:
        """One run's merged parameters checked before any run starts (``ParamError`` otherwise); the
        run's stratum (blocking factors included) is given for checks that refer to the cell.
        Default: :func:`check_params`."""
        return check_params(cls, params)

    @classmethod
    def metric_evidence(cls, params: Mapping[str, Any]) -> dict[str, str]:
        """The strongest evidence class each metric can have with these run parameters."""
        return {metric: cls.EVIDENCE for metric in cls.METRICS}

    @classmethod
    def signals(cls, params: Mapping[str, Any]) -> set[str]:
        """The telemetry signals whose summaries every record of a run with these (checked) params
        carries; a plan naming any other signal is refused before a run starts. Default: none."""
        return set()

    @classmethod  # noqa: B027 - an optional hook: empty by default
    def prepare(cls, params: list[Mapping[str, Any]], runs_dir: Path) -> None:
        """Make the study's shared inputs once, before any run (e.g. torch's warm start), under
        ``runs_dir``; ``params`` are the checked params of the runs about to start. Default: none."""

    @classmethod
    def shared_inputs(cls, params: list[Mapping[str, Any]], runs_dir: Path) -> SharedInputs:
        """The files (and facts) the runs with these params read from the driver's disk, after
        ``prepare``: what a worker without the driver's filesystem is sent (see :class:`SharedInputs`;
        the run then finds them through ``ctx.shipped``). Default: none."""
        return SharedInputs()

    @abc.abstractmethod
    def run(self, ctx: RunContext) -> RunResult:
        """Do one run (deterministic given ``ctx.params`` and ``ctx.seed``)."""


def check_params(collector: type[Collector], params: Mapping[str, Any]) -> dict[str, Any]:
    """Defaults filled, unknown names refused, types and checks applied; raises ``ParamError``."""
    unknown = sorted(set(params) - set(collector.PARAMS))
    if unknown:
        raise ParamError(
            f"collector {collector.name} does not read parameter(s) {', '.join(unknown)}; "
            f"it reads {', '.join(sorted(collector.PARAMS))}"
        )
    out: dict[str, Any] = {}
    for name, spec in collector.PARAMS.items():
        value = params.get(name, spec.default)
        if value is None and spec.default is None and name not in params:
            raise ParamError(f"collector {collector.name} needs parameter {name} ({spec.help})")
        kinds = spec.kind if isinstance(spec.kind, tuple) else (spec.kind,)
        if value is not None:
            if float in kinds and isinstance(value, int) and not isinstance(value, bool):
                value = float(value)
            if isinstance(value, bool) and bool not in kinds or not isinstance(value, kinds):
                raise ParamError(f"parameter {name} = {value!r} must be {' or '.join(k.__name__ for k in kinds)}")
            if spec.check is not None and not spec.check(value):
                raise ParamError(f"parameter {name} = {value!r} {spec.check_text or 'is out of range'}")
        out[name] = value
    return out
