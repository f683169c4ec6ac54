"""The fast paths added for scale give exactly what the plain ones gave."""

from __future__ import annotations

import json

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from gates.verdicts import unit_means
from prereg.jsoncodec import readable_json


@settings(max_examples=60, deadline=None)
@given(k=st.integers(1, 40), units=st.integers(1, 30), seed=st.integers(0, 2**32 - 1))
def test_unit_means_equal_the_per_unit_loop(k, units, seed):
    rng = np.random.default_rng(seed)
    values = rng.normal(size=k * units) * 10 ** rng.uniform(-8, 8)
    values[rng.random(values.size) < 0.02] = np.nan
    groups = [list(range(i * k, (i + 1) * k)) for i in range(units)]
    loop = np.array([float(np.mean(values[idx])) for idx in groups])
    assert np.array_equal(unit_means(values, groups), loop, equal_nan=True)


def _plain_sampled_means(d, resamples, seed):
    """The packed-bit stream of ``estimators._signs`` spelled out: pattern j is words j W .. j W + W - 1,
    block i flipped when bit i of them (least significant first) is set; sums by a float mask."""
    n, words = d.size, (d.size + 63) // 64
    raw = np.random.default_rng(seed).bit_generator.random_raw((resamples, words))
    mask = np.unpackbits(raw.astype("<u8").view(np.uint8), axis=1, bitorder="little")[:, :n].astype(np.float64)
    sums, sizes = mask @ d, mask.sum(axis=1)
    empty = sizes == 0
    return sums[~empty] / sizes[~empty], int(np.count_nonzero(empty))


@settings(max_examples=25, deadline=None)
@given(
    n=st.integers(21, 3000), resamples=st.integers(100, 3000), seed=st.integers(0, 2**32 - 1), scale=st.floats(-6, 6)
)
def test_signflip_draws_are_the_documented_patterns(n, resamples, seed, scale):
    """The lookup-table sums are the plain mask sums (up to rounding: another order of additions)."""
    from estimators._signs import sampled_means

    d = np.random.default_rng(seed ^ 1).normal(size=n) * 10**scale
    new, new_empty = sampled_means(d, resamples, seed)
    plain, plain_empty = _plain_sampled_means(d, resamples, seed)
    assert new_empty == plain_empty and new.shape == plain.shape
    assert np.allclose(new, plain, rtol=1e-9, atol=1e-12 * 10**scale * np.abs(d).max() * n)


@given(
    st.recursive(
        st.none()
        | st.booleans()
        | st.integers()
        | st.floats(allow_nan=False, allow_infinity=False)
        | st.text(max_size=5),
        lambda kids: st.lists(kids, max_size=30) | st.dictionaries(st.text(max_size=4), kids, max_size=5),
        max_leaves=60,
    )
)
def test_readable_json_reads_back_as_the_same_value(value):
    assert json.loads(readable_json(value)) == value
