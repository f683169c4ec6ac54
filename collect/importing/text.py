"""Canonical JSON text assembled from pieces (part of ``collect.importing.columns``).

The canonical encoder (``prereg.jsoncodec.canonical_text``: the settings of
``prereg.jsoncodec.canonical_bytes``) writes

More in ``docs/internals.md``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from json.encoder import encode_basestring
from typing import Any

from prereg.jsoncodec import canonical_text


def value_text(value: Any) -> str:
    """The canonical JSON of any value, from the encoder."""
    return canonical_text(value)


def string_text(value: str) -> str:
    """The canonical JSON of a string (what the encoder writes for it)."""
    return encode_basestring(value)


def float_text(value: float | str | None) -> str:
    """The canonical JSON of a stored metric value: a finite float, ``"NaN"``-style name, or None."""
    if type(value) is float and math.isfinite(value):
        return float.__repr__(value)
    return value_text(value)


def rows_of_objects(n: int, columns: Mapping[str, Sequence[str | None]]) -> list[str | None]:
    """For each of ``n`` rows, the JSON text of the object whose items are the row's entries of
    ``columns`` (key -> each row's item text ``"key":value``, None where the row lacks the key)."""
    ordered = [columns[k] for k in sorted(columns)]
    if not ordered:
        return ["{}"] * n
    return ["{" + ",".join(filter(None, parts)) + "}" for parts in zip(*ordered, strict=True)]


__all__ = ["float_text", "rows_of_objects", "string_text", "value_text"]
