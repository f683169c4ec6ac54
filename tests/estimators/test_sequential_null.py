"""Stopping at the first pass of five planned looks holds the error: the project's own estimators,
decided at the toolkit's per-look levels, on null sequences (seeded; the full 10 000-sequence run is
``benchmarks/bench_sequential.py``)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from estimators import Rule, decide_rule
from estimators.look_levels import gate_levels

RULE = Rule("upper", "<", 0.0)


def _false_supported(
    method: str, looks: list[int], spending: str, sequences: int, seed: int, naive: bool = False
) -> float:
    levels = gate_levels(method, 0.90, looks, spending)
    rng = np.random.default_rng(seed)
    passes = 0
    for _ in range(sequences):
        d = rng.standard_normal(looks[-1])
        for lv in levels:
            conf = 0.90 if naive else lv.confidence
            if conf is None:
                continue
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                if decide_rule(RULE, d[: lv.blocks], conf, method).holds:
                    passes += 1
                    break
    return passes / sequences


@pytest.mark.slow
@pytest.mark.parametrize(
    ("method", "looks", "sequences"),
    [
        ("t", [6, 12, 18, 24, 30], 3000),
        ("signflip", [8, 10, 12, 14, 16], 2000),
        ("wilcoxon", [8, 10, 12, 14, 16], 2000),
    ],
)
def test_five_looks_hold_alpha(method: str, looks: list[int], sequences: int) -> None:
    rate = _false_supported(method, looks, "pocock", sequences, seed=sequences + len(method))
    assert rate <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / sequences)


@pytest.mark.slow
def test_naive_looks_inflate_the_error() -> None:
    """The contrast: the fixed level at every look lets far more than 5% through."""
    rate = _false_supported("t", [6, 12, 18, 24, 30], "pocock", 2000, seed=9, naive=True)
    assert rate > 0.10
