"""The plan file format: load a ``prereg/v1`` YAML, validate it, canonicalise it, hash it.

This module owns the plan format; nothing else parses plan YAML.

More in ``docs/internals.md``.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from prereg.checks import check_plan
from prereg.direction import plan_warnings
from prereg.errors import InputError
from prereg.fileio import read_regular_file
from prereg.jsoncodec import canonical_bytes
from prereg.schema import Plan

if TYPE_CHECKING:
    from prereg.yamlsafe import LoadedYaml

_PATTERN_HELP = {
    r"^[A-Za-z_][A-Za-z0-9_]*$": "names are identifiers: letters, digits and '_', not starting with a digit",
    r"^[A-Za-z][A-Za-z0-9_.-]*$": "ids start with a letter and use letters, digits, '_', '.' or '-'",
    r"^[0-9a-f]{64}$": "a SHA-256 is 64 lowercase hexadecimal digits",
    r"^[A-Za-z0-9][A-Za-z0-9._-]*$": "a study slug uses letters, digits, '.', '_' or '-'",
}


@dataclass(frozen=True)
class Problem:
    """One problem in a plan: field path, 1-based position (when known) and message."""

    path: tuple[Any, ...]
    message: str
    line: int | None = None
    column: int | None = None

    @property
    def field(self) -> str:
        """The field path as written in messages: ``gates[1].pass_if``."""
        return format_path(self.path)

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready description."""
        return {"field": self.field, "line": self.line, "column": self.column, "message": self.message}


@dataclass
class PlanError(InputError):
    """A plan that cannot be accepted (exit 2); ``problems`` lists every problem found.

    Its ``message`` is :meth:`render` (every problem with its line), its ``details`` the problems
    as JSON objects: what ``run_main`` prints and puts in a ``--json`` error.
    """

    source: str
    problems: list[Problem] = field(default_factory=list)

    def __str__(self) -> str:
        return self.render()

    @property
    def message(self) -> str:
        """Every problem, one line each (at most 20)."""
        return self.render()

    @message.setter
    def message(self, value: str) -> None:  # derived from ``problems``: nothing to store
        pass

    @property
    def details(self) -> Any:
        """Every problem as a JSON-ready object."""
        return [p.to_json() for p in self.problems]

    @details.setter
    def details(self, value: Any) -> None:  # derived from ``problems``: nothing to store
        pass

    def render(self, limit: int = 20) -> str:
        """One line per problem: ``file:line:col: field: message``."""
        lines = []
        for p in self.problems[:limit]:
            where = self.source + (f":{p.line}:{p.column}" if p.line is not None else "")
            lines.append(f"{where}: {p.field + ': ' if p.path else ''}{p.message}")
        if len(self.problems) > limit:
            lines.append(f"... and {len(self.problems) - limit} more problems")
        return "\n".join(lines)


@dataclass(frozen=True)
class LoadedPlan:
    """A validated plan with its canonical form and hashes."""

    plan: Plan
    canonical: dict[str, Any]
    plan_sha256: str
    yaml_sha256: str
    source: str
    warnings: list[Problem] = field(default_factory=list)  # accepted, but worth a second look


def format_path(path: tuple[Any, ...]) -> str:
    """``("gates", 1, "pass_if")`` -> ``gates[1].pass_if``."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


def sha256_hex(data: bytes) -> str:
    """Hex SHA-256 of ``data``."""
    return hashlib.sha256(data).hexdigest()


def _normalise(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _normalise(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_normalise(v) for v in value]
    if isinstance(value, float) and value == 0.0:
        return 0.0  # -0.0 and 0.0 are the same number
    return value


def canonical_plan(plan: Plan) -> dict[str, Any]:
    """The plan as JSON data: defaults filled, unset optional fields omitted, numbers normalised."""
    return _normalise(plan.model_dump(mode="json", by_alias=True, exclude_none=True))


def plan_hash(canonical: dict[str, Any]) -> str:
    """The plan hash: SHA-256 of the canonical bytes of the canonical plan."""
    return sha256_hex(canonical_bytes(canonical))


def _data_path(loc: tuple[Any, ...], data: Any) -> tuple[tuple[Any, ...], str | None]:
    """Map a pydantic error location onto the document path; also return a bad key, if any."""
    path: list[Any] = []
    current = data
    for i, part in enumerate(loc):
        last = i == len(loc) - 1
        if part == "[key]":
            return tuple(path), str(path[-1]) if path else None
        if isinstance(current, dict) and part not in current and current.get("kind") == part:
            continue  # the discriminator tag pydantic inserts for a union member
        if isinstance(current, dict) and part in current:
            path.append(part)
            current = current[part]
        elif isinstance(current, list) and isinstance(part, int) and 0 <= part < len(current):
            path.append(part)
            current = current[part]
        elif last or not isinstance(current, dict):
            path.append(part)
            current = None
        # else: a union tag or validator name that pydantic inserts; it is not in the document
    return tuple(path), None


def _problems_from_validation(err: ValidationError, loaded: LoadedYaml) -> list[Problem]:
    from prereg.yamlsafe import KEY_MARK  # lazy: yaml (reading a lock needs no YAML)

    problems = []
    for e in err.errors(include_url=False):
        path, bad_key = _data_path(tuple(e["loc"]), loaded.data)
        kind, msg = e["type"], e["msg"]
        if kind == "extra_forbidden":
            msg = f"unknown key {path[-1]!r}" if path else "unknown key"
            problems.append(_positioned((*path, KEY_MARK), msg, loaded, display=path))
            continue
        elif kind == "missing":
            msg = f"missing required key {path[-1]!r}" if path else "missing required key"
        elif bad_key is not None:
            msg = f"invalid name {bad_key!r}: {_PATTERN_HELP.get(str(e.get('ctx', {}).get('pattern')), msg)}"
            problems.append(_positioned((*path, KEY_MARK), msg, loaded, display=path))
            continue
        elif kind == "string_type" and isinstance(e.get("input"), (int, float, bool)):
            msg = f"{msg} (YAML read {e['input']!r} as a {type(e['input']).__name__}; put the value in quotes)"
        elif kind == "string_pattern_mismatch":
            msg = f"{e['input']!r}: {_PATTERN_HELP.get(str(e.get('ctx', {}).get('pattern')), msg)}"
        elif path and path[-1] == "confidence" and _looks_like_percent(e.get("input")):
            msg = (
                f"{e['input']!r} looks like a percentage: confidence is a two-sided level written as a "
                f"fraction in (0.5, 1), e.g. {e['input'] / 100:g} for {e['input']:g}%"
            )
        elif kind in ("value_error", "assertion_error") and msg.startswith("Value error, "):
            msg = msg[len("Value error, ") :]
        problems.append(_positioned(path, msg, loaded))
    return problems


def _looks_like_percent(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and 50 < value < 100


def _positioned(
    path: tuple[Any, ...], message: str, loaded: LoadedYaml, display: tuple[Any, ...] | None = None
) -> Problem:
    pos = loaded.position(path)
    return Problem(path if display is None else display, message, *(pos if pos else (None, None)))


#: the list sections an element of which can be set aside to check the rest (``salvaged_problems``)
_ELEMENT_LISTS = ("gates", "invalidators")
#: the mapping sections an entry of which can be set aside
_ELEMENT_MAPS = ("metrics",)


def salvaged_problems(data: dict[str, Any], found: list[Problem]) -> list[tuple[tuple[Any, ...], str]]:
    """The cross-reference problems (:func:`prereg.checks.check_plan`, reference checks only) of the rest
    of a plan some of whose parts failed the schema (``found``): each failing gate, invalidator or metric
    set aside (an optional section left out), the rest validated and checked, so independent mistakes
    are reported together rather than one per round trip. A problem that could come from a part set
    aside (it names a removed gate, invalidator or metric; "no primary gate" once a gate is set aside)
    is not reported; when a required section failed, nothing is (the schema's problems say it all)."""
    lists: dict[str, set[int]] = {name: set() for name in _ELEMENT_LISTS}
    maps: dict[str, set[str]] = {name: set() for name in _ELEMENT_MAPS}
    dropped: set[str] = set()
    fields = {info.alias or name: info for name, info in Plan.model_fields.items()}
    optional = {key for key, info in fields.items() if not info.is_required()} | {k for k in data if k not in fields}
    for problem in found:
        path = problem.path
        if len(path) >= 2 and path[0] in lists and isinstance(path[1], int) and isinstance(data.get(path[0]), list):
            lists[path[0]].add(path[1])
        elif len(path) >= 2 and path[0] in maps and isinstance(data.get(path[0]), dict) and path[1] in data[path[0]]:
            maps[path[0]].add(str(path[1]))
        elif path and isinstance(path[0], str) and path[0] in optional and path[0] in data:
            dropped.add(path[0])
        else:
            return []
    rest = {k: v for k, v in data.items() if k not in dropped}
    index: dict[str, list[int]] = {}  # section -> original index of each kept element
    removed_names: set[str] = set()
    for name, bad_items in lists.items():
        if name in rest and isinstance(rest[name], list):
            index[name] = [i for i in range(len(rest[name])) if i not in bad_items]
            removed_names |= {
                str(e["id"]) for i, e in enumerate(rest[name]) if i in bad_items and isinstance(e, dict) and "id" in e
            }
            rest[name] = [rest[name][i] for i in index[name]]
    for name, bad_keys in maps.items():
        if bad_keys:
            rest[name] = {k: v for k, v in rest[name].items() if str(k) not in bad_keys}
            removed_names |= bad_keys
    try:
        partial = Plan.model_validate(rest)
    except ValidationError:
        return []
    out = []
    for path, message in check_plan(partial, references_only=True):
        if lists["gates"] and path == ("gates",) or any(f"'{n}'" in message for n in removed_names):
            continue
        if len(path) >= 2 and path[0] in index and isinstance(path[1], int) and path[1] < len(index[path[0]]):
            path = (path[0], index[path[0]][path[1]], *path[2:])
        out.append((path, message))
    return out


def _in_file_order(problems: list[Problem]) -> list[Problem]:
    """Problems ordered by their line (those without one last, in the order found)."""
    return sorted(problems, key=lambda p: (p.line is None, p.line or 0, p.column or 0))


def parse_plan(raw: bytes, source: str = "<plan>") -> LoadedPlan:
    """Validate raw YAML bytes as a plan; raise ``PlanError`` with every problem found."""
    from prereg.yamlsafe import YamlError, load_yaml  # lazy: yaml (reading a lock needs no YAML)

    try:
        loaded = load_yaml(raw)
    except YamlError as err:
        raise PlanError(source, [Problem((), err.message, err.line, err.column)]) from None
    if not isinstance(loaded.data, dict):
        kind = type(loaded.data).__name__
        raise PlanError(source, [Problem((), f"a plan is a YAML mapping (got a {kind})", 1, 1)])
    if "schema" in loaded.data and loaded.data["schema"] != "prereg/v1":
        message = f"unsupported schema {loaded.data['schema']!r}; this toolkit reads 'prereg/v1'"
        raise PlanError(source, [_positioned(("schema",), message, loaded)])
    try:
        plan = Plan.model_validate(loaded.data)
    except ValidationError as err:
        found = _problems_from_validation(err, loaded)
        found += [_positioned(path, msg, loaded) for path, msg in salvaged_problems(loaded.data, found)]
        raise PlanError(source, _in_file_order(found)) from None
    problems = [_positioned(path, msg, loaded) for path, msg in check_plan(plan)]
    if problems:
        raise PlanError(source, problems)
    canonical = canonical_plan(plan)

    warned = [_positioned(path, msg, loaded) for path, msg in plan_warnings(plan)]
    return LoadedPlan(plan, canonical, plan_hash(canonical), sha256_hex(raw), source, warned)


def read_input_file(path: str | os.PathLike[str], limit: int | None = None) -> bytes:
    """Read a small regular file (``prereg.fileio.read_regular_file``: never a FIFO or device, never
    more than ``limit`` bytes, by default a plan's ``prereg.yamlsafe.MAX_BYTES``); a ``ValueError``
    with one message otherwise."""
    if limit is None:
        from prereg.yamlsafe import MAX_BYTES  # lazy: yaml (only a plan is read without a limit)

        limit = MAX_BYTES
    return read_regular_file(path, limit)


def load_plan(path: str | os.PathLike[str]) -> LoadedPlan:
    """Read and validate a plan file; raise ``PlanError`` (unreadable files included)."""
    try:
        raw = read_input_file(path)
    except ValueError as err:
        raise PlanError(str(path), [Problem((), str(err).split(": ", 1)[-1])]) from None
    return parse_plan(raw, str(path))


def plan_from_canonical(canonical: dict[str, Any]) -> Plan:
    """Rebuild the model from canonical data (as stored in a lock); raises ``ValidationError``."""
    return Plan.model_validate(canonical)
