"""The collector interface: one run in, metrics (and optional traces and telemetry) out.

More in ``docs/internals.md``.
"""

from __future__ import annotations

import abc
import difflib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from prereg.errors import InputError

#: in :attr:`ParamError.retry`: drop the parameter (its default applies) when the checks go on
DROP: Any = type("Drop", (), {"__repr__": lambda self: "DROP"})()
MAX_PROBLEMS_PER_RUN = 50  # ``param_problems`` stops after this many (a loop guard, never reached in practice)
_DURATION = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*(ms|s|sec|m|min|h|hr)\s*$", re.IGNORECASE)
_UNIT_S = {"ms": 1e-3, "s": 1.0, "sec": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0, "hr": 3600.0}


class ParamError(InputError, ValueError):
    """A run parameter the collector does not know, or a value it cannot use.

    ``retry``: how the remaining checks can go on past this problem (parameter name -> the value to
    check instead, or :data:`DROP` to leave it out), so that :func:`param_problems` lists every problem
    of a run at once; ``None`` when the checks cannot go on (a required parameter is missing)."""

    def __init__(self, message: str, *, retry: Mapping[str, Any] | None = None) -> None:
        super().__init__(message)
        self.retry = dict(retry) if retry is not None else None


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
    #: what the run holds while it executes: {num_cpus, num_gpus, custom} (``prereg.schema_resources``)
    resources: Mapping[str, Any] = field(default_factory=dict)

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
    def param_problems(
        cls, params: Mapping[str, Any], stratum: Mapping[str, Any]
    ) -> tuple[dict[str, Any] | None, list[str]]:
        """``(checked, problems)``: every problem ``check_run`` finds in one run's merged parameters, each
        once (what ``prereg validate`` and ``prereg freeze`` list before a plan is locked), and the
        parameters as checked once the problems were stepped over (None if one could not be).
        Default: :func:`param_problems`."""
        return param_problems(cls, params, stratum)

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


def param_problems(
    collector: type[Collector], params: Mapping[str, Any], stratum: Mapping[str, Any]
) -> tuple[dict[str, Any] | None, list[str]]:
    """Every problem of one run's parameters: ``collector.check_run`` again and again, each time past
    the problem it raised (its ``ParamError.retry``), until the parameters pass or a problem cannot be
    stepped over. ``(the parameters as checked at the end, or None; each message once, in the order found)``."""
    current = dict(params)
    problems: list[str] = []
    while len(problems) < MAX_PROBLEMS_PER_RUN:
        try:
            return collector.check_run(current, stratum), problems
        except ParamError as err:
            if str(err) in problems:
                return None, problems  # stepping over it did not help: stop rather than loop
            problems.append(str(err))
            if not err.retry:
                return None, problems
            for name, value in err.retry.items():
                if value is DROP:
                    current.pop(name, None)
                else:
                    current[name] = value
    return None, problems


def duration_hint(name: str, value: Any) -> str:
    """For a number-of-seconds (``*_s``) or milliseconds (``*_ms``) parameter given a duration string
    (``"10m"``): the sentence saying what to write (``"timeout_s is in seconds: write 600"``); else ''."""
    if not isinstance(value, str) or not name.endswith(("_s", "_ms")):
        return ""
    match = _DURATION.match(value)
    if match is None:
        return ""
    seconds = float(match.group(1)) * _UNIT_S[match.group(2).lower()]
    in_ms = name.endswith("_ms")
    number = seconds * 1000.0 if in_ms else seconds
    return f"{name} is in {'milliseconds' if in_ms else 'seconds'}: write {number:g}"


def check_params(collector: type[Collector], params: Mapping[str, Any]) -> dict[str, Any]:
    """Defaults filled, unknown names refused, types and checks applied; raises ``ParamError``."""
    unknown = sorted(set(params) - set(collector.PARAMS))
    if unknown:
        close = [
            f"{name} (did you mean {match[0]}?)" if match else name
            for name in unknown
            for match in [difflib.get_close_matches(name, list(collector.PARAMS), 1)]
        ]
        raise ParamError(
            f"collector {collector.name} does not read parameter(s) {', '.join(close)}; "
            f"it reads {', '.join(sorted(collector.PARAMS))}",
            retry={name: DROP for name in unknown},
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
            retry = None if spec.default is None else {name: DROP}  # a required one cannot be stepped over
            if isinstance(value, bool) and bool not in kinds or not isinstance(value, kinds):
                hint = duration_hint(name, value)
                if hint:
                    raise ParamError(f"parameter {name} = {value!r} is a duration string; {hint}", retry=retry)
                raise ParamError(
                    f"parameter {name} = {value!r} must be {' or '.join(k.__name__ for k in kinds)}", retry=retry
                )
            if spec.check is not None and not spec.check(value):
                raise ParamError(f"parameter {name} = {value!r} {spec.check_text or 'is out of range'}", retry=retry)
        out[name] = value
    return out
