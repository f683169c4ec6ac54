"""Strict, position-tracking YAML loading for plans.

More in ``docs/internals.md``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

import yaml
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.events import AliasEvent
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from yaml.parser import Parser
from yaml.reader import Reader
from yaml.resolver import BaseResolver
from yaml.scanner import Scanner

from prereg.errors import InputError

MAX_BYTES = 1 << 20  # 1 MiB: a plan is a few kilobytes
MAX_DEPTH = 32

Path = tuple[str | int, ...]
KEY_MARK = "@key"  # positions[(*path, KEY_MARK)] is where the key of ``path`` is written


class YamlError(InputError):
    """A plan that is not acceptable YAML. ``line``/``column`` are 1-based, or None."""

    def __init__(self, message: str, line: int | None = None, column: int | None = None) -> None:
        super().__init__(message)
        self.line = line
        self.column = column


@dataclass
class LoadedYaml:
    """The parsed document and the 1-based ``(line, column)`` of every value and key."""

    data: Any
    positions: dict[Path, tuple[int, int]] = field(default_factory=dict)

    def position(self, path: Path) -> tuple[int, int] | None:
        """The position of ``path``, or of its nearest ancestor that has one."""
        path = tuple(path)
        while True:
            if path in self.positions:
                return self.positions[path]
            if not path:
                return None
            path = path[:-1]


class _Resolver(BaseResolver):
    """YAML 1.2 core schema implicit resolution (no YAML 1.1 booleans, octals or sexagesimals)."""


_Resolver.yaml_implicit_resolvers = {}
_Resolver.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)
_Resolver.add_implicit_resolver(
    "tag:yaml.org,2002:int", re.compile(r"^(?:[-+]?[0-9]+|0x[0-9a-fA-F]+)$"), list("-+0123456789")
)
_Resolver.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(
        r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
        r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
    ),
    list("-+0123456789."),
)
_Resolver.add_implicit_resolver("tag:yaml.org,2002:null", re.compile(r"^(?:~|null|Null|NULL|)$"), ["~", "n", "N", ""])


class _Constructor(SafeConstructor):
    """Safe constructor with YAML 1.2 number parsing."""

    def construct_yaml_int(self, node: ScalarNode) -> int:
        value = str(self.construct_scalar(node))
        return int(value, 16) if value.lower().startswith("0x") else int(value)

    def construct_yaml_float(self, node: ScalarNode) -> float:
        value = str(self.construct_scalar(node)).lower()
        if value.endswith("inf") or value.endswith("nan"):
            raise YamlError(
                f"non-finite number {node.value!r} is not allowed in a plan",
                node.start_mark.line + 1,
                node.start_mark.column + 1,
            )
        return float(value)


_Constructor.add_constructor("tag:yaml.org,2002:int", _Constructor.construct_yaml_int)  # type: ignore[type-var]
_Constructor.add_constructor("tag:yaml.org,2002:float", _Constructor.construct_yaml_float)  # type: ignore[type-var]


class _StrictLoader(Reader, Scanner, Parser, Composer, _Constructor, _Resolver):
    """Loader that refuses aliases, anchors, explicit tags and excessive nesting while composing."""

    def __init__(self, stream: str) -> None:
        Reader.__init__(self, stream)
        Scanner.__init__(self)
        Parser.__init__(self)
        Composer.__init__(self)
        _Constructor.__init__(self)
        _Resolver.__init__(self)
        self._depth = 0

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        event = self.peek_event()
        line, column = event.start_mark.line + 1, event.start_mark.column + 1
        if self.check_event(AliasEvent):
            raise YamlError("YAML aliases (*name) are not allowed in a plan", line, column)
        if getattr(event, "anchor", None) is not None:
            raise YamlError("YAML anchors (&name) are not allowed in a plan", line, column)
        if getattr(event, "tag", None) is not None:
            raise YamlError(f"explicit YAML tags ({event.tag}) are not allowed in a plan", line, column)
        self._depth += 1
        if self._depth > MAX_DEPTH:
            raise YamlError(f"nesting deeper than {MAX_DEPTH} levels", line, column)
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def _construct(loader: _StrictLoader, node: Node, path: Path, positions: dict[Path, tuple[int, int]]) -> Any:
    positions[path] = (node.start_mark.line + 1, node.start_mark.column + 1)
    if isinstance(node, MappingNode):
        result: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, ScalarNode):
                raise YamlError(
                    "mapping keys must be plain scalars", key_node.start_mark.line + 1, key_node.start_mark.column + 1
                )
            key = loader.construct_object(key_node, deep=True)
            if not isinstance(key, (str, int, float, bool)) and key is not None:
                raise YamlError("unsupported mapping key", key_node.start_mark.line + 1, key_node.start_mark.column + 1)
            if isinstance(key, (int, float, bool)) or key is None:
                key = str(key_node.value)  # keys are names; keep the text as written
            if key in result:
                raise YamlError(
                    f"duplicate key {key!r} (YAML parsers keep only the last one; a plan must say it once)",
                    key_node.start_mark.line + 1,
                    key_node.start_mark.column + 1,
                )
            positions[(*path, key, KEY_MARK)] = (key_node.start_mark.line + 1, key_node.start_mark.column + 1)
            result[key] = _construct(loader, value_node, (*path, key), positions)
        return result
    if isinstance(node, SequenceNode):
        return [_construct(loader, child, (*path, i), positions) for i, child in enumerate(node.value)]
    value = loader.construct_object(node, deep=True)
    if isinstance(value, float) and not math.isfinite(value):  # pragma: no cover - constructor refuses first
        raise YamlError("non-finite number", node.start_mark.line + 1, node.start_mark.column + 1)
    return value


def load_yaml(raw: bytes) -> LoadedYaml:
    """Parse one YAML document from ``raw`` bytes (UTF-8) strictly; raise ``YamlError`` on any problem."""
    if len(raw) > MAX_BYTES:
        raise YamlError(f"file is {len(raw)} bytes; a plan must be under {MAX_BYTES} bytes")
    if b"\x00" in raw:
        raise YamlError("file contains NUL bytes: this is not a YAML text file")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise YamlError(f"file is not UTF-8 text (byte {err.start})") from None
    loader: _StrictLoader | None = None
    try:
        loader = _StrictLoader(text)  # the reader already refuses unprintable characters here
        node = loader.get_single_node()
        if node is None:
            raise YamlError("the file is empty: a plan is a YAML mapping starting with 'schema: prereg/v1'")
        positions: dict[Path, tuple[int, int]] = {}
        data = _construct(loader, node, (), positions)
    except YamlError:
        raise
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        problem = err.problem or err.context or "invalid YAML"
        if mark is not None:
            raise YamlError(f"invalid YAML: {problem}", mark.line + 1, mark.column + 1) from None
        raise YamlError(f"invalid YAML: {problem}") from None
    except yaml.YAMLError as err:
        raise YamlError(f"invalid YAML: {err}") from None
    except (ValueError, OverflowError, RecursionError) as err:
        raise YamlError(f"invalid YAML value: {err}") from None
    finally:
        if loader is not None:
            loader.dispose()
    return LoadedYaml(data, positions)
