"""What a ``command`` run's program leaves: its metrics file and its phase marks, read strictly.

More in ``docs/internals.md``.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prereg.errors import ToolkitError
from prereg.fileio import UnreadableFile, read_regular_file
from prereg.jsoncodec import DuplicateKey, JSONFormatError, NonFiniteLiteral, loads, oversized_number

MAX_METRICS_BYTES = 1 << 20
MAX_UNDECLARED = 64  # undeclared metrics a record keeps (the rest counted)
MAX_UNDECLARED_NAME = 128  # characters of an undeclared metric's name a record keeps (longer: counted)
MAX_MARKS_BYTES = 64 << 20
MAX_TIME_NS = 1 << 63  # a CLOCK_MONOTONIC time, ns, fits a signed 64-bit integer
MAX_TIME_DIGITS = 19
_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


class RunFailure(ToolkitError):
    """Why a run failed: raised from ``run``, recorded as the run's error by the engine (the other
    runs go on); never stops ``collect run`` itself."""


def _number(name: str, value: Any, where: str) -> float:
    """``value`` as a finite float, or ``RunFailure`` in words (never an ``OverflowError``)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        shown = repr(value)
        shown = shown if len(shown) <= 80 else f"{shown[:60]}... ({len(shown)} characters)"
        raise RunFailure(f"{where}: metric {name} = {shown} is not a number")
    too_large = oversized_number(value)  # 10**400 (read exactly) or 1e400 (read with mark_overflow)
    if too_large is not None:
        raise RunFailure(f"{where}: metric {name} = {too_large}")
    if not math.isfinite(value):
        raise RunFailure(f"{where}: metric {name} = {value!r} is not finite")
    return float(value)


def _metrics_object(data: bytes | None, name: str) -> dict[str, Any]:
    """The metrics file's one JSON object; ``RunFailure`` in words when there is none."""
    if data is None:
        raise RunFailure(f"the program wrote no metrics file ({name}, at $PREREG_METRICS)")
    if len(data) > MAX_METRICS_BYTES:
        raise RunFailure(f"metrics file {name} is {len(data)} bytes, more than {MAX_METRICS_BYTES}")
    try:
        doc: Any = loads(data, limit_bytes=MAX_METRICS_BYTES, mark_overflow=True)
    except NonFiniteLiteral as err:
        raise RunFailure(f"metrics file {name}: non-finite value ({err}); a metric must be a finite number") from None
    except DuplicateKey as err:
        raise RunFailure(f"metrics file {name}: metric {str(err)[:80]!r} written twice") from None
    except JSONFormatError as err:
        raise RunFailure(f"metrics file {name} is not valid JSON ({err})") from None
    if not isinstance(doc, dict):
        raise RunFailure(
            f'metrics file {name} must hold one JSON object {{"metric": number, ...}}, not a {type(doc).__name__}'
        )
    return doc


def written_names(data: bytes | None, name: str = "metrics.json") -> set[str]:
    """The metric names the metrics file holds (``RunFailure`` as :func:`parse_metrics` when it is unreadable)."""
    return set(_metrics_object(data, name))


def parse_metrics(data: bytes | None, expected: list[str], name: str = "metrics.json") -> dict[str, float]:
    """The program's declared metrics, ``expected``, from the bytes of its metrics file (None: no
    file); other keys are left to :func:`undeclared_info`."""
    doc = _metrics_object(data, name)
    missing = [k for k in expected if k not in doc]
    if missing:
        raise RunFailure(f"metrics file {name}: declared metric(s) {', '.join(missing)} missing")
    return {key: _number(key, doc[key], f"metrics file {name}") for key in expected}


def _kept_value(value: Any) -> float | None:
    """An undeclared metric's value as kept: a finite float, else None (text, booleans, NaN, 1e400)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or oversized_number(value) is not None:
        return None
    return float(value) if math.isfinite(value) else None


def undeclared_info(
    data: bytes | None, expected: list[str], sensor_metrics: Collection[str] = (), name: str = "metrics.json"
) -> dict[str, Any]:
    """What the run's record keeps of the metrics the program wrote but the plan does not declare
    (``expected``: the declared ones it writes): ``{}`` when none, else ``{"undeclared_metrics": {name:
    finite float or None}}`` in file order (``None``: not a finite number, not kept), the first
    ``MAX_UNDECLARED`` whose names have at most ``MAX_UNDECLARED_NAME`` characters, plus
    ``"undeclared_metrics_more": N`` counting the rest (not kept). Descriptive values:
    no gate or contrast reads them. A metric of ``sensor_metrics`` (computed from the telemetry) that
    the program wrote is a ``RunFailure``: the sensor's number is the one the plan declares."""
    doc = _metrics_object(data, name)
    clash = [k for k in doc if k in sensor_metrics]
    if clash:
        raise RunFailure(
            f"metrics file {name}: metric(s) {', '.join(clash)} come from the sensor; the program must not write them"
        )
    unknown = [k for k in doc if k not in expected]
    if not unknown:
        return {}
    kept = [k for k in unknown if len(k) <= MAX_UNDECLARED_NAME][:MAX_UNDECLARED]
    info: dict[str, Any] = {"undeclared_metrics": {k: _kept_value(doc[k]) for k in kept}}
    if len(unknown) > len(kept):
        info["undeclared_metrics_more"] = len(unknown) - len(kept)
    return info


def read_metrics(path: Path, expected: list[str]) -> dict[str, float]:
    """The program's declared metrics, ``expected`` (see the module doc); a link is never followed."""
    try:
        data = read_regular_file(path, MAX_METRICS_BYTES, follow_links=False)
    except UnreadableFile as err:
        if not os.path.lexists(path):
            return parse_metrics(None, expected, path.name)
        raise RunFailure(f"metrics file: {err}") from None
    return parse_metrics(data, expected, path.name)


@dataclass(frozen=True)
class Mark:
    """One line of the marks file."""

    kind: str  # begin | end
    name: str
    before_ns: int
    after_ns: int
    line: int


@dataclass(frozen=True)
class MarkedPhase:
    """A closed phase: from its begin line's second time to its end line's first (host monotonic ns)."""

    name: str
    start_ns: int
    end_ns: int
    depth: int  # 0: outermost of the program's marks


def parse_mark(text: str, line: int) -> Mark | None:
    """One line (None for a blank or ``#`` line); ``RunFailure`` when malformed."""
    fields = text.split()
    if not fields or fields[0].startswith("#"):
        return None
    where = f"marks file line {line}"
    if len(fields) not in (3, 4) or fields[0] not in ("begin", "end"):
        raise RunFailure(f"{where}: {text.strip()[:80]!r} is not 'begin|end NAME T_BEFORE_NS [T_AFTER_NS]'")
    if not _NAME.match(fields[1]):
        raise RunFailure(f"{where}: phase name {fields[1][:80]!r} must be 1-64 letters, digits, '_', '-' or '.'")
    if any(len(t) > MAX_TIME_DIGITS for t in fields[2:]):
        raise RunFailure(f"{where}: a time has more than {MAX_TIME_DIGITS} digits; times are CLOCK_MONOTONIC ns")
    try:
        times = [int(t) for t in fields[2:]]
    except ValueError:
        raise RunFailure(f"{where}: times must be integer nanoseconds ({text.strip()[:80]!r})") from None
    before, after = times[0], times[-1]
    if after >= MAX_TIME_NS:
        raise RunFailure(f"{where}: time {after} ns is past the 64-bit range of CLOCK_MONOTONIC")
    if before < 0 or after < before:
        raise RunFailure(f"{where}: T_AFTER_NS must be >= T_BEFORE_NS >= 0")
    return Mark(fields[0], fields[1], before, after, line)


def parse_marks(data: bytes) -> list[Mark]:
    """Every mark line of the marks file's bytes, in file order (``RunFailure`` when malformed)."""
    if len(data) > MAX_MARKS_BYTES:
        raise RunFailure(f"marks file is {len(data)} bytes, more than {MAX_MARKS_BYTES}")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise RunFailure("marks file is not UTF-8 text") from None
    marks = []
    for number, line in enumerate(text.splitlines(), 1):
        mark = parse_mark(line, number)
        if mark is not None:
            marks.append(mark)
    return marks


def read_marks(path: Path) -> list[Mark]:
    """Every complete mark line of ``path`` (none when it does not exist), in file order; a link is
    never followed and a file over ``MAX_MARKS_BYTES`` is refused before it is read."""
    if not os.path.lexists(path):
        return []
    try:
        return parse_marks(read_regular_file(path, MAX_MARKS_BYTES, follow_links=False))
    except UnreadableFile as err:
        raise RunFailure(f"marks file: {err}") from None


def phases_of(marks: list[Mark]) -> list[MarkedPhase]:
    """The closed phases the marks describe, in the order they began (``RunFailure`` when they do not nest)."""
    stack: list[tuple[Mark, int]] = []
    out: list[tuple[int, MarkedPhase]] = []
    last = -1
    for order, m in enumerate(marks):
        if m.before_ns < last:
            raise RunFailure(f"marks file line {m.line}: time goes backwards (before the previous mark)")
        last = m.before_ns
        if m.kind == "begin":
            stack.append((m, order))
            continue
        if not stack or stack[-1][0].name != m.name:
            open_name = stack[-1][0].name if stack else None
            raise RunFailure(
                f"marks file line {m.line}: 'end {m.name}' but "
                + (f"the open phase is {open_name!r}" if open_name else "no phase is open")
            )
        begin, at = stack.pop()
        out.append((at, MarkedPhase(m.name, begin.after_ns, m.before_ns, len(stack))))
    if stack:
        m = stack[-1][0]
        raise RunFailure(f"marks file line {m.line}: phase {m.name!r} begun but never ended")
    return [p for _, p in sorted(out, key=lambda item: item[0])]
