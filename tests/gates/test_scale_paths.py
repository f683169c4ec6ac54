"""The fast paths added for scale give exactly what the plain ones gave."""

from __future__ import annotations

import json

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from estimators import signflip
from gates.verdicts import _unit_means
from prereg.jsoncodec import readable_json


@settings(max_examples=60, deadline=None)
@given(k=st.integers(1, 40), units=st.integers(1, 30), seed=st.integers(0, 2**32 - 1))
def test_unit_means_equal_the_per_unit_loop(k, units, seed):
    rng = np.random.default_rng(seed)
    values = rng.normal(size=k * units) * 10 ** rng.uniform(-8, 8)
    values[rng.random(values.size) < 0.02] = np.nan
    groups = [list(range(i * k, (i + 1) * k)) for i in range(units)]
    loop = np.array([float(np.mean(values[idx])) for idx in groups])
    assert np.array_equal(_unit_means(values, groups), loop, equal_nan=True)


def _old_sampled_means(d, resamples, seed):
    """The sign-flip Monte Carlo as first written (``rng.random() < 0.5``, bool matmul), on one BLAS
    thread: multi-threaded OpenBLAS products differ in the last bit with the thread count (see
    ``estimators.signflip._sampled_means``), so the first implementation was machine-dependent."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1, user_api="blas"):
        return _old_sampled_means_unpinned(d, resamples, seed)


def _old_sampled_means_unpinned(d, resamples, seed):
    rng = np.random.default_rng(seed)
    out, sizes = np.empty(resamples), np.empty(resamples)
    step = max(1, signflip._CHUNK_ELEMENTS // d.size)
    for start in range(0, resamples, step):
        b = min(step, resamples - start)
        mask = rng.random((b, d.size)) < 0.5
        out[start:start + b] = mask @ d
        sizes[start:start + b] = mask.sum(axis=1)
    empty = sizes == 0
    return out[~empty] / sizes[~empty], int(np.count_nonzero(empty))


@settings(max_examples=25, deadline=None)
@given(n=st.integers(21, 3000), resamples=st.integers(100, 3000), seed=st.integers(0, 2**32 - 1),
       scale=st.floats(-6, 6))
def test_signflip_draws_are_the_same_draws(n, resamples, seed, scale):
    d = np.random.default_rng(seed ^ 1).normal(size=n) * 10**scale
    new, new_empty = signflip._sampled_means(d, resamples, seed)
    old, old_empty = _old_sampled_means(d, resamples, seed)
    assert new_empty == old_empty and np.array_equal(new, old)


@given(st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
                    | st.text(max_size=5),
                    lambda kids: st.lists(kids, max_size=30) | st.dictionaries(st.text(max_size=4), kids, max_size=5),
                    max_leaves=60))
def test_readable_json_reads_back_as_the_same_value(value):
    assert json.loads(readable_json(value)) == value
