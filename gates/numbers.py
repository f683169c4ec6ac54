"""How the evaluation artifact stores numbers: infinities (and a recorded NaN) as JSON strings.

JSON has no infinity: an interval end at infinity is stored as ``"Infinity"`` / ``"-Infinity"``,
and a recorded value of a diverged run as ``"NaN"``; :func:`as_float` reads any of them back.
"""

from __future__ import annotations

import math
from typing import Literal, cast

from prereg.jsoncodec import decode_float, encode_float

Number = float | Literal["Infinity", "-Infinity"]
DataNumber = float | Literal["Infinity", "-Infinity", "NaN"]  # a recorded value may be NaN


def encode_number(value: float | None) -> Number | None:
    """A float as stored: infinities become strings; NaN is refused (it must never be a result)."""
    if value is None:
        return None
    if math.isnan(value):
        raise ValueError("NaN has no place in an evaluation artifact")
    return cast(Number, encode_float(value))  # never "NaN": refused above


def encode_value(value: float | None) -> DataNumber | None:
    """A recorded metric value as stored: like ``encode_number`` but NaN is kept as ``"NaN"``."""
    if value is not None and math.isnan(value):
        return "NaN"
    return encode_number(value)


def as_float(value: DataNumber | None) -> float | None:
    """A stored number back as a float (``"Infinity"`` -> ``inf``, ``"NaN"`` -> nan)."""
    return None if value is None else decode_float(value)


__all__ = ["DataNumber", "Number", "as_float", "encode_number", "encode_value"]
