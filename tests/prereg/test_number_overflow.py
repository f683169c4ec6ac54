"""prereg.jsoncodec on numbers past a double: marked, described by size, refused; never OverflowError."""

from __future__ import annotations

import math

import pytest

from prereg import jsoncodec
from prereg.jsoncodec import decode_float, loads


def test_a_float_literal_past_a_double_is_marked_only_when_asked():
    doc = loads('{"a": 1e400, "b": -2.5e999, "c": 1.5, "d": 1e308}', mark_overflow=True)
    assert isinstance(doc["a"], jsoncodec.OverflowedLiteral) and doc["a"] == math.inf and doc["a"].literal == "1e400"
    assert doc["b"] == -math.inf and doc["b"].literal == "-2.5e999"
    assert type(doc["c"]) is float and type(doc["d"]) is float
    assert type(loads('{"a": 1e400}')["a"]) is float  # the project's own formats: unchanged


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (10**400, "<a 401-digit integer>"),
        (-(10**400), "<a 401-digit integer>"),
        ("1e400", "1e400"),
        (" 1" + "0" * 400 + " ", "<a 401-digit number>"),
        ("9e9999", "9e9999"),
    ],
)
def test_oversized_numbers_are_described_by_their_size(value, shown):
    if value == "9e9999":
        value = jsoncodec.OverflowedLiteral(value)  # what loads(..., mark_overflow=True) gives
    assert (
        jsoncodec.oversized_number(value)
        == f"{shown} is beyond the range of a double (about 1.8e308), so not a number "
        "the formats hold"
    )


@pytest.mark.parametrize(
    "value", [10**300, 1.5, math.inf, "inf", "-Infinity", "NaN", "abc", None, True, 2**1023], ids=lambda v: repr(v)[:12]
)
def test_numbers_a_double_holds_and_non_numbers_are_not_oversized(value):
    assert jsoncodec.oversized_number(value) is None


def test_decode_float_refuses_an_integer_past_a_double_as_its_contract_says():
    with pytest.raises(ValueError, match="401-digit integer"):
        decode_float(10**400)
    assert decode_float(10**300) == 1e300 and decode_float("Infinity") == math.inf
