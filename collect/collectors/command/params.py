"""The ``command`` collector's parameters: its own (``PARAMS``), the program's, and the argv template.

More in ``docs/internals.md``.
"""

from __future__ import annotations

import difflib
import math
import os
import string
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from collect.collectors.base import DROP, Param, ParamError
from collect.telemetry.analysis.energy import ENERGY_METRICS, ENERGY_SIGNALS, NET_METRICS
from prereg.jsoncodec import canonical_text

#: the run's own placeholders (never program parameters)
RUN_FIELDS = ("seed", "run_id", "arm", "replicate", "run_dir")
MAX_TIMEOUT_S = 7 * 24 * 3600.0


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) and v for v in value)


def _p(kind: Any, default: Any, help: str, check: Any = None, text: str = "") -> Param:
    return Param(kind, default, help, check, text)


PARAMS: dict[str, Param] = {
    "argv": _p(
        list,
        None,
        "the program's command line: a non-empty list of strings with {name} placeholders",
        lambda v: bool(v) and _strings(v),
        "must be a non-empty list of non-empty strings",
    ),
    "timeout_s": _p(
        float,
        3600.0,
        "wall-clock limit of one run (s); past it the program's process group is killed and the run recorded as failed",
        lambda v: 0 < v <= MAX_TIMEOUT_S,
        f"must be in (0, {MAX_TIMEOUT_S:g}] s",
    ),
    "code": _p(
        list,
        [],
        "files hashed into every record (globs relative to workdir; '**' recurses)",
        _strings,
        "must be a list of non-empty strings (globs)",
    ),
    "workdir": _p(
        str,
        "",
        "folder the program runs in and code globs are relative to (default: the working directory of collect run)",
    ),
    "packages": _p(
        list,
        ["numpy", "torch"],
        "distributions whose installed versions every record carries (read from their metadata, never imported)",
        _strings,
        "must be a list of names",
    ),
    "sensor": _p(
        str,
        "none",
        "telemetry sensor sampled outside the program: none, sim:..., nvml[:index=N], replay:PATH or a sensor plugin",
    ),
    "energy_signal": _p(
        str,
        "energy_counter",
        "signal the energy metrics come from: energy_counter | power_average | power_instant",
        lambda v: v in ENERGY_SIGNALS,
        f"must be one of {', '.join(ENERGY_SIGNALS)}",
    ),
    "poll_ms": _p(
        float,
        50.0,
        "requested telemetry poll interval (ms)",
        lambda v: 0.1 <= v <= 60_000,
        "must be in [0.1, 60000] ms",
    ),
    "idle_baseline_ms": _p(
        float,
        0.0,
        "idle window recorded before the program starts: the baseline of "
        "idle_power and the *_net energies (ms; 0: none)",
        lambda v: 0 <= v <= 600_000,
        "must be in [0, 600000] ms",
    ),
    "metrics": _p(
        list,
        None,
        "the plan's metric names (set by the engine from the plan, never by the plan)",
        lambda v: bool(v) and _strings(v),
        "must be a non-empty list of names",
    ),
}


def _plain(value: Any) -> bool:
    if value is None or isinstance(value, (str, bool, int)):
        return True
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, list):
        return all(_plain(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _plain(v) for k, v in value.items())
    return False


def split_params(params: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(collector's own, program's)`` parameters of a run."""
    own = {k: v for k, v in params.items() if k in PARAMS}
    return own, {k: v for k, v in params.items() if k not in PARAMS}


def check_program_params(program: Mapping[str, Any]) -> None:
    """Program parameters are plain data and do not shadow the run's own fields."""
    for name, value in program.items():
        if name in RUN_FIELDS:
            raise ParamError(
                f"parameter {name!r} is the run's own placeholder ({', '.join(RUN_FIELDS)}), set by "
                "the collector; give the program parameter another name",
                retry={name: DROP},
            )
        if not _plain(value):
            raise ParamError(
                f"program parameter {name} = {value!r} must be a string, finite number, boolean, "
                "null, or a list or mapping of them",
                retry={name: DROP},
            )


def _literal(template: str) -> str:
    """``template`` with every brace doubled: the same text, no placeholder."""
    return template.replace("{", "{{").replace("}", "}}")


def _argv_without(argv: list[str], i: int, field: str | None = None) -> list[str]:
    """``argv`` with placeholder ``{field}`` of element ``i`` made literal (the whole element when None):
    what the checks go on with past a problem in it."""
    out = list(argv)
    out[i] = _literal(argv[i]) if field is None else argv[i].replace("{" + field + "}", "{{" + field + "}}")
    return out


def placeholders(template: str, where: str) -> list[str]:
    """The field names of one argv element (``ParamError`` for anything but ``{name}`` and ``{{``/``}}``)."""
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as err:
        raise ParamError(f"{where} = {template!r}: {err} (write '{{{{' or '}}}}' for a literal brace)") from None
    names = []
    for _, field, spec, conversion in parsed:
        if field is None:
            continue
        if not field.isidentifier() or spec or conversion:
            shown = "{" + field + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "") + "}"
            raise ParamError(f"{where} = {template!r}: placeholder {shown} must be a plain {{name}}")
        names.append(field)
    return names


def check_argv(argv: list[str], known: set[str]) -> None:
    """Every placeholder of ``argv`` names a known value (``ParamError`` naming the first that does not,
    with the closest known name; its ``retry`` makes that placeholder literal so the checks go on)."""
    for i, element in enumerate(argv):
        try:
            names = placeholders(element, f"argv[{i}]")
        except ParamError as err:
            raise ParamError(str(err), retry={"argv": _argv_without(argv, i)}) from None
        for name in names:
            if name not in known:
                close = difflib.get_close_matches(name, sorted(known), n=1)
                hint = f" (did you mean {{{close[0]}}}?)" if close else ""
                raise ParamError(
                    f"argv[{i}] = {element!r}: unknown placeholder {{{name}}}{hint}; known: {', '.join(sorted(known))}",
                    retry={"argv": _argv_without(argv, i, name)},
                )


def render(value: Any) -> str:
    """A placeholder's text: a string as it is, anything else as canonical JSON."""
    return value if isinstance(value, str) else canonical_text(value)


def format_argv(argv: list[str], values: Mapping[str, Any]) -> list[str]:
    """``argv`` with its placeholders replaced (checked before: every name is in ``values``)."""
    out = []
    for element in argv:
        parts = []
        for literal, field, _, _ in string.Formatter().parse(element):
            parts.append(literal)
            if field is not None:
                parts.append(render(values[field]))
        out.append("".join(parts))
    return out


def code_files(patterns: list[str], root: Path) -> list[Path]:
    """The files the ``code`` globs match under ``root``, sorted, each once (``ParamError`` for a glob
    matching no file, an absolute one, one with ``..``, or a match outside ``root``)."""
    root = root.resolve()
    found: set[Path] = set()
    for pattern in patterns:
        rest = {"code": [p for p in patterns if p != pattern]}  # the checks go on without this glob
        parts = Path(pattern).parts
        if Path(pattern).is_absolute() or ".." in parts:
            raise ParamError(f"code glob {pattern!r} must be relative to {root} and stay inside it", retry=rest)
        try:
            matches = [p for p in root.glob(pattern) if p.is_file()]
        except (ValueError, OSError) as err:
            raise ParamError(f"code glob {pattern!r}: {err}", retry=rest) from None
        if not matches:
            raise ParamError(f"code glob {pattern!r} matches no file under {root} ({where_globs()})", retry=rest)
        for path in matches:
            real = path.resolve()
            if not real.is_relative_to(root):
                raise ParamError(
                    f"code glob {pattern!r} reaches {real}, outside {root} (through a symbolic link)", retry=rest
                )
            found.add(path.absolute())
    return sorted(found)


def check_metrics(own: Mapping[str, Any]) -> None:
    """The plan's metrics as the collector gives them: energy metrics need a sensor, ``*_net`` an idle window."""
    if own["sensor"] == "none":
        return
    net = [m for m in own["metrics"] if m in NET_METRICS or m == "idle_power"]
    if net and own["idle_baseline_ms"] <= 0:
        raise ParamError(f"metric(s) {', '.join(net)} need an idle baseline: set idle_baseline_ms > 0")


def energy_metrics(own: Mapping[str, Any]) -> list[str]:
    """The plan metrics the collector computes from the telemetry (none without a sensor)."""
    if own["sensor"] == "none":
        return []
    return [m for m in own["metrics"] if m in ENERGY_METRICS]


def where_globs() -> str:
    """Where ``code`` globs and a relative ``workdir`` are read from, in words (for messages)."""
    return (
        f"code globs are relative to workdir, and a relative workdir (or none) to the folder the command "
        f"is started from, here {os.getcwd()}"
    )


def resolve_workdir(value: str) -> str:
    """``workdir`` made absolute ('' is the current working directory); ``ParamError`` if it is no folder."""
    folder = Path(value or os.getcwd()).absolute()
    if not folder.is_dir():
        raise ParamError(
            f"workdir {folder} is not a folder (a relative workdir is read from the folder the "
            f"command is started from, here {os.getcwd()})"
        )
    return str(folder)
