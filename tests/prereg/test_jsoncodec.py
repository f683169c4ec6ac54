"""The one JSON codec: canonical bytes as the standard encoder gives them, and every refusal."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prereg.jsoncodec import (
    DuplicateKey,
    JSONTooLarge,
    NestedTooDeep,
    NonFiniteLiteral,
    NotJSON,
    canonical_bytes,
    decode_float,
    encode_float,
    loads,
    readable_bytes,
    readable_json,
)

values = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(10**20), 10**20),
        st.floats(allow_nan=False, allow_infinity=False),
        st.text(max_size=8),
    ),
    lambda inner: st.one_of(st.lists(inner, max_size=25), st.dictionaries(st.text(max_size=5), inner, max_size=4)),
    max_leaves=30,
)


@pytest.mark.slow  # many generated cases or a reference library: the slow tier
@settings(max_examples=200, deadline=None)
@given(value=values)
def test_every_form_reads_back_to_the_value_and_canonical_is_the_reference_encoding(value):
    try:
        reference = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except UnicodeEncodeError:  # a lone surrogate
        return
    assert canonical_bytes(value) == reference.encode()
    assert loads(canonical_bytes(value)) == value
    assert loads(readable_bytes(value)) == value
    assert loads(readable_json(value)) == value


@pytest.mark.parametrize(
    "text, error, words",
    [
        ('{"a": 1, "a": 2}', DuplicateKey, "a"),
        ('{"x": {"k": 1, "k": 1}}', DuplicateKey, "k"),
        ('{"a": NaN}', NonFiniteLiteral, "NaN"),
        ("[Infinity]", NonFiniteLiteral, "Infinity"),
        ("[-Infinity]", NonFiniteLiteral, "-Infinity"),
        ('{"a": 1', NotJSON, "not JSON"),
        (b"\xff\xfe", NotJSON, "not UTF-8"),
        ("[" * 100_000 + "]" * 100_000, NestedTooDeep, "nested too deeply"),
    ],
)
def test_what_the_codec_refuses(text, error, words):
    with pytest.raises(error) as err:
        loads(text)
    assert words in str(err.value) and isinstance(err.value, ValueError)


def test_a_size_limit_is_checked_before_parsing():
    with pytest.raises(JSONTooLarge):
        loads(b"[" + b"1," * 100 + b"1]", limit_bytes=50)
    assert loads(b"[1]", limit_bytes=3) == [1]


def test_another_tools_nan_literal_is_read_only_when_asked():
    row = loads('{"a": NaN, "b": Infinity, "c": -Infinity}', allow_nonfinite=True)
    assert math.isnan(row["a"]) and row["b"] == math.inf and row["c"] == -math.inf
    with pytest.raises(DuplicateKey):  # duplicates stay refused
        loads('{"a": NaN, "a": 1}', allow_nonfinite=True)


@given(st.floats())
def test_stored_numbers_round_trip_with_their_names(x):
    stored = encode_float(x)
    assert isinstance(stored, float) == math.isfinite(x)
    back = decode_float(stored)
    assert (math.isnan(back) and math.isnan(x)) or back == x
    assert canonical_bytes(stored)  # always storable: never a bare NaN literal


@pytest.mark.parametrize("junk", ["nan", "inf", True, "1.5"])
def test_decode_refuses_what_is_not_a_stored_number(junk):
    with pytest.raises(ValueError):
        decode_float(junk)


def test_canonical_refuses_non_finite_numbers():
    with pytest.raises(ValueError):
        canonical_bytes({"x": math.nan})
