"""The forest bar as a pure function: hand-checked placements of interval, estimate, margin, null."""

from __future__ import annotations

import math
import random

import pytest

from reports.words.forest import forest_axis, forest_bar

# width 23: finite values map to columns 1 .. 21 (20 steps); columns 0 and 22 are for arrows.


def test_interval_estimate_null_and_margin_outside_the_interval():
    # axis 0 .. 20: lower 2 -> col 3, estimate 6 -> col 7, upper 10 -> col 11, null -> 1, margin 20 -> 21
    assert forest_bar(2, 10, 6, [20], 0.0, 23) == ".0.[---*---].........|."


def test_margin_inside_the_interval():
    # axis -10 .. 10: estimate 0 -> col 11 (the estimate hides the null there), margin 5 -> col 16
    assert forest_bar(-10, 10, 0, [5], 0.0, 23) == ".[---------*----|----]."


def test_minus_infinite_lower_end_is_an_arrow_at_the_left_edge():
    # finite values 0 .. 2: upper 1 -> col 11, estimate 0.5 -> col 6, null 0 -> col 1, margin 2 -> col 21
    assert forest_bar(-math.inf, 1, 0.5, [2], 0.0, 23) == "<0----*----].........|."


def test_plus_infinite_upper_end_on_a_ratio_log_axis():
    # log axis ln 0.5 .. ln 1: lower 0.5 -> col 1, estimate 0.8 -> col 15, margin 1 (= null) -> col 21
    bar = forest_bar(0.5, math.inf, 0.8, [1.0], 1.0, 23, log=True)
    assert bar == ".[" + "-" * 13 + "*" + "-" * 5 + "|>"


def test_ratio_null_is_drawn_as_1_and_equivalence_margins_both_drawn():
    # log axis 0.8 .. 1.25 is symmetric around 1: null at the middle column 11
    bar = forest_bar(0.9, 1.1, 1.0, [0.8, 1.25], 1.0, 23, log=True)
    assert bar[1] == "|" and bar[21] == "|"
    assert bar.index("[") < bar.index("*") < bar.index("]")
    assert bar[11] == "*"  # the estimate 1.0 sits on the null's column and wins
    bar = forest_bar(1.05, 1.2, 1.1, [0.8, 1.25], 1.0, 23, log=True)
    assert bar[11] == "1" and bar.count("|") == 2


def test_no_interval_draws_only_the_reference_marks():
    assert forest_bar(None, None, None, [1.0], 0.0, 23) == ".0" + "." * 19 + "|."


def test_both_ends_infinite():
    bar = forest_bar(-math.inf, math.inf, 0.0, [0.5], 0.0, 23)
    assert bar[0] == "<" and bar[-1] == ">" and "|" in bar and "*" in bar


def test_single_value_interval_still_shows_both_ends():
    bar = forest_bar(3.0, 3.0, 3.0, [10.0], 0.0, 23)
    assert "]" in bar and "*" in bar and bar.index("*") < bar.index("]")


def test_axis_range_holds_every_finite_value():
    assert forest_axis(-math.inf, 1.0, 0.5, [2.0], 0.0) == (0.0, 2.0)
    lo, hi = forest_axis(0.5, math.inf, 0.8, [1.0], 1.0, log=True)
    assert lo == pytest.approx(0.5) and hi == pytest.approx(1.0)
    assert forest_axis(0.0, 0.0, 0.0, [0.0], 0.0) == (-0.5, 0.5)  # a point widened to a range


def test_width_is_exact_and_marks_always_visible():
    rng = random.Random(7)
    for _ in range(500):
        a, b = sorted(rng.uniform(-5, 5) for _ in range(2))
        lower = -math.inf if rng.random() < 0.2 else a
        upper = math.inf if rng.random() < 0.2 else b
        margin = rng.uniform(-8, 8)
        width = rng.randint(7, 60)
        bar = forest_bar(lower, upper, (a + b) / 2, [margin], 0.0, width)
        assert len(bar) == width
        assert "|" in bar  # the margin is never hidden
        assert (bar[0] == "<") == (lower == -math.inf)
        assert (bar[-1] == ">") == (upper == math.inf)


def test_too_narrow_is_refused():
    with pytest.raises(ValueError):
        forest_bar(0, 1, 0.5, [1], 0.0, 6)
