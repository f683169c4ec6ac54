"""An interval end never prints equal to the rule's threshold unless it is equal to it."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from reports.words.evaluation import bound_num, fmt_num

finite = st.floats(min_value=-1e8, max_value=1e8, allow_nan=False)


def test_a_bound_just_below_the_threshold_shows_the_digits_that_differ():
    assert bound_num(0.29999999999999, [0.3]) == "0.29999999999999"
    assert bound_num(0.3, [0.3]) == "0.3"  # equal: printed equal
    assert bound_num(-0.0042, [0.02]) == fmt_num(-0.0042)  # far apart: the usual 4 digits


@given(finite, finite)
def test_printed_equal_only_when_equal(value, threshold):
    text = bound_num(value, [threshold])
    if value != threshold:
        assert text != fmt_num(threshold)  # 17 significant digits tell any two doubles apart
    assert abs(float(text) - value) <= abs(float(fmt_num(value)) - value)  # never less precise than usual
