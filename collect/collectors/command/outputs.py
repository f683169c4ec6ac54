"""What a ``command`` run's program leaves: its metrics file and its phase marks, read strictly.

**Metrics** (``$PREREG_METRICS``, ``metrics.json`` in the run's folder): one JSON object
``{"metric": number, ...}`` holding exactly the plan's metrics that the program writes (the energy
metrics come from the sensor when one is configured). A missing file, text that is not one JSON
object, a key written twice, a metric the plan does not declare, a declared metric missing, a value
that is not a number (``true``, ``"3"``, ``null``) or not finite (``NaN``, ``Infinity``, also as
strings) is a :class:`RunFailure` naming it: never a silent number. At most ``MAX_METRICS_BYTES``.

**Marks** (``$PREREG_MARKS``, ``marks.txt``): one line per mark, ``begin NAME T_BEFORE_NS
[T_AFTER_NS]`` or ``end NAME T_BEFORE_NS [T_AFTER_NS]`` (whitespace-separated; times the host's
``CLOCK_MONOTONIC`` in integer ns, the second optional and then equal to the first; ``NAME``
letters, digits, ``_``, ``-``, ``.``); blank lines and lines starting with ``#`` are skipped. An
``end`` closes the innermost open phase and must name it; a phase still open when the program
ends, a malformed line or times that go backwards fail the run. :mod:`collect.marks` writes them.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prereg.errors import ToolkitError
from prereg.jsoncodec import DuplicateKey, JSONFormatError, NonFiniteLiteral, loads

MAX_METRICS_BYTES = 1 << 20
MAX_MARKS_BYTES = 64 << 20
_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


class RunFailure(ToolkitError):
    """Why a run failed: raised from ``run``, recorded as the run's error by the engine (the other
    runs go on); never stops ``collect run`` itself."""


def read_metrics(path: Path, expected: list[str]) -> dict[str, float]:
    """The program's metrics, exactly ``expected`` (see the module doc)."""
    if not path.is_file():
        raise RunFailure(f"the program wrote no metrics file ({path.name}, at $PREREG_METRICS)")
    data = path.read_bytes()
    if len(data) > MAX_METRICS_BYTES:
        raise RunFailure(f"metrics file {path.name} is {len(data)} bytes, more than {MAX_METRICS_BYTES}")
    try:
        doc: Any = loads(data, limit_bytes=MAX_METRICS_BYTES)
    except NonFiniteLiteral as err:
        raise RunFailure(f"metrics file {path.name}: non-finite value ({err}); a metric must be a finite number") from None
    except DuplicateKey as err:
        raise RunFailure(f"metrics file {path.name}: metric {err} written twice") from None
    except JSONFormatError as err:
        raise RunFailure(f"metrics file {path.name} is not valid JSON ({err})") from None
    if not isinstance(doc, dict):
        raise RunFailure(f"metrics file {path.name} must hold one JSON object {{\"metric\": number, ...}}, "
                         f"not a {type(doc).__name__}")
    unknown = [k for k in doc if k not in expected]
    if unknown:
        raise RunFailure(f"metrics file {path.name}: metric(s) {', '.join(unknown)} not declared by the plan "
                         f"(it expects {', '.join(expected) or 'none from the program'})")
    missing = [k for k in expected if k not in doc]
    if missing:
        raise RunFailure(f"metrics file {path.name}: declared metric(s) {', '.join(missing)} missing")
    out: dict[str, float] = {}
    for name in expected:
        value = doc[name]
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise RunFailure(f"metrics file {path.name}: metric {name} = {value!r} is not a number")
        if not math.isfinite(value):
            raise RunFailure(f"metrics file {path.name}: metric {name} = {value!r} is not finite")
        out[name] = float(value)
    return out


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
    try:
        times = [int(t) for t in fields[2:]]
    except ValueError:
        raise RunFailure(f"{where}: times must be integer nanoseconds ({text.strip()[:80]!r})") from None
    before, after = times[0], times[-1]
    if before < 0 or after < before:
        raise RunFailure(f"{where}: T_AFTER_NS must be >= T_BEFORE_NS >= 0")
    return Mark(fields[0], fields[1], before, after, line)


def read_marks(path: Path) -> list[Mark]:
    """Every complete mark line of ``path`` (none when it does not exist), in file order."""
    if not path.is_file():
        return []
    data = path.read_bytes()
    if len(data) > MAX_MARKS_BYTES:
        raise RunFailure(f"marks file {path.name} is {len(data)} bytes, more than {MAX_MARKS_BYTES}")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise RunFailure(f"marks file {path.name} is not UTF-8 text") from None
    marks = []
    for number, line in enumerate(text.splitlines(), 1):
        mark = parse_mark(line, number)
        if mark is not None:
            marks.append(mark)
    return marks


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
            raise RunFailure(f"marks file line {m.line}: 'end {m.name}' but "
                             + (f"the open phase is {open_name!r}" if open_name else "no phase is open"))
        begin, at = stack.pop()
        out.append((at, MarkedPhase(m.name, begin.after_ns, m.before_ns, len(stack))))
    if stack:
        m = stack[-1][0]
        raise RunFailure(f"marks file line {m.line}: phase {m.name!r} begun but never ended")
    return [p for _, p in sorted(out, key=lambda item: item[0])]
