"""The one JSON codec of the project's file formats (plan hash, lock, ledger, traces, evaluation).

More in ``docs/internals.md``.
"""

from __future__ import annotations

import json
import math
import sys
from typing import Any, Literal

from prereg.errors import InputError

NonFiniteName = Literal["NaN", "Infinity", "-Infinity"]
_NAMES: dict[str, float] = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}

#: the canonical encoder, made once (sorted keys, compact separators, UTF-8, finite numbers only)
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


class JSONFormatError(InputError, ValueError):
    """Bytes that are not a well-formed document of a project format (bad input, exit 2)."""


class DuplicateKey(JSONFormatError):
    """A JSON object holding a key twice (``str(err)`` is the key)."""


class NonFiniteLiteral(JSONFormatError):
    """A bare ``NaN``/``Infinity`` literal (not JSON; the formats store them as strings)."""


class JSONTooLarge(JSONFormatError):
    """An input larger than the limit its format allows."""


class NestedTooDeep(JSONFormatError):
    """Arrays or objects nested deeper than the parser's recursion limit."""


class NotJSON(JSONFormatError):
    """Bytes that are not UTF-8 JSON text at all (a torn or corrupted line, another kind of file)."""


def canonical_text(data: Any) -> str:
    """The canonical JSON text of ``data`` (``ValueError`` for a NaN or infinity)."""
    return _CANONICAL.encode(data)


def canonical_bytes(data: Any) -> bytes:
    """The canonical JSON of ``data`` as UTF-8 bytes: what every hash of the project is computed over."""
    return _CANONICAL.encode(data).encode()


def as_json_data(value: Any) -> Any:
    """``value`` as JSON data, exactly what reading its canonical text gives: keys made strings and
    sorted, tuples made lists (``ValueError`` for a NaN or infinity)."""
    return json.loads(canonical_text(value))


def readable_bytes(data: Any) -> bytes:
    """``data`` as a file people read: sorted keys, two-space indent, UTF-8, a final newline."""
    return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False).encode() + b"\n"


#: a list longer than this is written one compact item per line by :func:`readable_json`
LONG_LIST = 20


def readable_json(value: object, level: int = 0) -> str:
    """Indented JSON (2 spaces, keys in their order, no NaN) that stays fast for large artifacts.

    Objects and short lists are indented like ``json.dumps(indent=2)``; a list of more than
    :data:`LONG_LIST` items is written one item per line, each compact through the C encoder
    (``indent=`` forces Python's pure encoder, 10x slower on a 100k-row artifact). Any JSON reader
    reads both the same; the file stays diff-able row by row.
    """
    pad = "  " * level
    if isinstance(value, dict) and value:
        items = (f"{pad}  {json.dumps(k, ensure_ascii=False)}: {readable_json(v, level + 1)}" for k, v in value.items())
        return "{\n" + ",\n".join(items) + f"\n{pad}}}"
    if (
        isinstance(value, list)
        and value
        and (len(value) > LONG_LIST or any(isinstance(v, (dict, list)) for v in value))
    ):
        if len(value) > LONG_LIST:
            lines = (pad + "  " + json.dumps(v, ensure_ascii=False, allow_nan=False) for v in value)
        else:
            lines = (pad + "  " + readable_json(v, level + 1) for v in value)
        return "[\n" + ",\n".join(lines) + f"\n{pad}]"
    return json.dumps(value, ensure_ascii=False, allow_nan=False)


def encode_float(value: float) -> float | NonFiniteName:
    """A float as the formats store it: finite as itself, NaN and infinities as their names."""
    if math.isfinite(value):
        return value  # as given (an int stays an int: its canonical text is unchanged)
    return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")


def decode_float(value: float | int | str) -> float:
    """A stored number back as a float (``"Infinity"`` -> inf, ``"NaN"`` -> nan); ``ValueError`` otherwise."""
    if isinstance(value, str):
        try:
            return _NAMES[value]
        except KeyError:
            raise ValueError(f"{value!r} is not a number") from None
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a number")
    try:
        return float(value)
    except OverflowError:  # an integer past a double (10**400)
        raise ValueError(oversized_number(value)) from None


class OverflowedLiteral(float):
    """A JSON number literal beyond the range of a double (``1e400``), read with ``mark_overflow``:
    its value is the infinity ``float`` reads, and ``literal`` keeps the text as written."""

    literal: str

    def __new__(cls, literal: str) -> OverflowedLiteral:
        value = super().__new__(cls, -math.inf if literal.startswith("-") else math.inf)
        value.literal = literal
        return value


#: the largest finite double, for messages
MAX_DOUBLE_TEXT = "1.8e308"


def _shown_number(text: str) -> str:
    """A number's text as a message shows it: itself when short, else its size."""
    digits = sum(c.isdigit() for c in text)
    return text if len(text) <= 24 else f"<a {digits}-digit number>"


def brief_integer(n: int) -> str:
    """An integer as a message shows it: itself, or its size past 24 digits (a 400-digit value is named,
    not printed)."""
    return f"<a {len(str(abs(n)))}-digit integer>" if abs(n) > 10**24 else str(n)


def oversized_number(value: Any) -> str | None:
    """Why ``value``, written as a finite number, is no finite double (an ``int`` beyond about
    1.8e308, an :class:`OverflowedLiteral`, or text such as ``"1e400"`` that ``float`` reads as
    infinity), in words naming its size; None for anything else (a double, a non-finite name, junk)."""
    if isinstance(value, OverflowedLiteral):
        shown = _shown_number(value.literal)
    elif isinstance(value, int) and not isinstance(value, bool):
        try:
            float(value)
            return None
        except OverflowError:
            shown = brief_integer(value)  # below the int-string limit: it was read
    elif isinstance(value, str):
        text = value.strip()
        if text.lower().lstrip("+-") in ("inf", "infinity", "nan"):
            return None
        try:
            number = float(text)
        except ValueError:
            return None
        if not math.isinf(number):
            return None
        shown = _shown_number(text)
    else:
        return None
    return f"{shown} is beyond the range of a double (about {MAX_DOUBLE_TEXT}), so not a number the formats hold"


def _float_literal(text: str) -> float:
    value = float(text)
    return OverflowedLiteral(text) if math.isinf(value) else value


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)  # in C; a key written twice leaves fewer entries than pairs
    if len(out) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise DuplicateKey(key)
            seen.add(key)
    return out


def _refuse_literal(name: str) -> Any:
    raise NonFiniteLiteral(f"non-finite number {name} (stored as the string {name!r} in these formats)")


def _keep_literal(name: str) -> float:
    return _NAMES[name]


#: the readers, made once (``json.loads`` with arguments builds a decoder per call), by
#: ``(allow_nonfinite, mark_overflow)``
_DECODERS = {
    (nonfinite, overflow): json.JSONDecoder(
        object_pairs_hook=_no_duplicates,
        parse_constant=_keep_literal if nonfinite else _refuse_literal,
        parse_float=_float_literal if overflow else None,
    )
    for nonfinite in (False, True)
    for overflow in (False, True)
}


def _int_digit_limit() -> int:
    """Python's limit on the digits of an integer read from text (0: none)."""
    get = getattr(sys, "get_int_max_str_digits", None)
    return int(get()) if get is not None else 4300


def loads(
    data: bytes | str, *, limit_bytes: int | None = None, allow_nonfinite: bool = False, mark_overflow: bool = False
) -> Any:
    """Parse one JSON document (or JSON Lines row) of a project format; see the module doc for
    what is refused. ``allow_nonfinite`` reads bare ``NaN``/``Infinity`` literals as floats (inputs
    made by other tools only, never the project's own formats); ``mark_overflow`` reads a float
    literal past a double as an :class:`OverflowedLiteral` (module doc)."""
    if limit_bytes is not None and len(data) > limit_bytes:
        raise JSONTooLarge(f"larger than {limit_bytes} bytes")
    try:
        text = data.decode("utf-8") if isinstance(data, bytes) else data
        if text.startswith("\ufeff"):  # as json.loads says it
            raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
        return _DECODERS[allow_nonfinite, mark_overflow].decode(text)
    except JSONFormatError:
        raise
    except UnicodeDecodeError:
        raise NotJSON("not JSON: not UTF-8 text") from None
    except RecursionError:
        raise NestedTooDeep(
            f"nested too deeply (arrays or objects deeper than about {sys.getrecursionlimit()} levels)"
        ) from None
    except json.JSONDecodeError as err:
        raise NotJSON(f"not JSON ({err.msg} at line {err.lineno} column {err.colno})") from None
    except ValueError as err:  # an integer literal past Python's int-string limit (4300 digits)
        if "digits" in str(err):
            raise NotJSON(
                f"an integer with more than {_int_digit_limit()} digits; not a number the formats hold"
            ) from None
        raise NotJSON(f"not JSON ({err})") from None


__all__ = [
    "as_json_data",
    "DuplicateKey",
    "JSONFormatError",
    "JSONTooLarge",
    "NestedTooDeep",
    "NonFiniteLiteral",
    "NotJSON",
    "OverflowedLiteral",
    "canonical_bytes",
    "canonical_text",
    "decode_float",
    "encode_float",
    "loads",
    "brief_integer",
    "oversized_number",
    "readable_bytes",
    "readable_json",
]
