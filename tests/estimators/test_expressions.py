"""Contrast and pass_if parsing: a real grammar, canonical spellings, clear refusals."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from estimators.expressions import ExpressionError, parse_contrast
from estimators.vocabulary import Rule, RuleError

parse_pass_if = Rule.parse


@pytest.mark.parametrize(
    "text, scale, coefs, canonical",
    [
        ("adaptive - fixed", "difference", {"adaptive": 1, "fixed": -1}, "adaptive - fixed"),
        ("adaptive-fixed", "difference", {"adaptive": 1, "fixed": -1}, "adaptive - fixed"),
        ("(a - b) - (c - d)", "difference", {"a": 1, "b": -1, "c": -1, "d": 1}, "(a - b) - (c - d)"),
        ("a - 0.5*b - 0.5*c", "difference", {"a": 1, "b": -0.5, "c": -0.5}, "a - 0.5*b - 0.5*c"),
        ("2*(a - b) - (c - d)*2", "difference", {"a": 2, "b": -2, "c": -2, "d": 2}, "2*(a - b) - (c - d)*2"),
        ("-a + b", "difference", {"a": -1, "b": 1}, "-a + b"),
        ("a / b", "ratio", {"a": 1, "b": -1}, "a / b"),
        ("(a / b) / (c / d)", "ratio", {"a": 1, "b": -1, "c": -1, "d": 1}, "(a / b) / (c / d)"),
        ("a*b / (c*d)", "ratio", {"a": 1, "b": 1, "c": -1, "d": -1}, "a*b / (c*d)"),
        ("a - b + c - c", "difference", {"a": 1, "b": -1}, "a - b + c - c"),
    ],
)
def test_contrasts(text, scale, coefs, canonical):
    c = parse_contrast(text, known_arms={"a", "b", "c", "d", "adaptive", "fixed"})
    assert c.scale == scale
    assert c.coefficients == pytest.approx(coefs)
    assert c.text == canonical
    assert parse_contrast(c.text).coefficients == c.coefficients  # canonical text re-parses the same


@pytest.mark.parametrize(
    "text, words",
    [
        ("a - b/2", "0.5*b"),
        ("a*b - c", "mixes"),
        ("a / b - 1", "mixes"),
        ("a - b + 1", "constant"),
        ("a", "sum to zero"),
        ("a + b", "sum to zero"),
        ("a / b * c", "sum to zero"),
        ("2*a / b", "numbers are not allowed"),
        ("a - a", "identically zero"),
        ("a - zz", "unknown arm"),
        ("a $ b", "unexpected character"),
        ("(a - b", "expected ')'"),
        ("a - b)", "unexpected ')'"),
        ("", "empty"),
        ("a b", "unexpected 'b'"),
        ("__import__('os') - b", "unexpected character"),
    ],
)
def test_contrast_refusals(text, words):
    with pytest.raises(ExpressionError) as info:
        parse_contrast(text, known_arms={"a", "b", "c"})
    assert words in str(info.value)


@pytest.mark.parametrize(
    "text, fields, canonical",
    [
        ("upper < 0.02", ("upper", "<", 0.02), "upper < 0.02"),
        ("upper<=0.020", ("upper", "<=", 0.02), "upper <= 0.02"),
        ("lower > 0", ("lower", ">", 0.0), "lower > 0.0"),
        ("lower >= -1e-2", ("lower", ">=", -0.01), "lower >= -0.01"),
        ("estimate < 5", ("estimate", "<", 5.0), "estimate < 5.0"),
        ("estimate > .5", ("estimate", ">", 0.5), "estimate > 0.5"),
    ],
)
def test_bound_rules(text, fields, canonical):
    rule = parse_pass_if(text)
    assert (rule.quantity, rule.op, rule.threshold) == fields
    assert rule.text == canonical
    assert parse_pass_if(rule.text) == rule


def test_within_rule():
    rule = parse_pass_if("within [ -0.1 , 0.1 ]")
    assert (rule.quantity, rule.low, rule.high) == ("within", -0.1, 0.1)
    assert rule.text == "within [-0.1, 0.1]"


@pytest.mark.parametrize(
    "text, words",
    [
        ("upper > 0", "'upper <"),
        ("lower < 0", "'lower >"),
        ("estimate <= 1", "'estimate <"),
        ("within [1, 1]", "A < B"),
        ("upper < inf", "not a rule"),
        ("upper < 1 and lower > 0", "not a rule"),
        ("median < 3", "not a rule"),
        ("", "not a rule"),
    ],
)
def test_rule_refusals(text, words):
    with pytest.raises(RuleError) as info:
        parse_pass_if(text)
    assert words in str(info.value)


@given(st.text(max_size=40))
def test_arbitrary_text_never_crashes(text):
    for parse in (parse_contrast, parse_pass_if):
        try:
            parse(text)
        except (ExpressionError, RuleError):
            pass


arm = st.sampled_from(["a", "b", "c", "d"])


@given(st.lists(st.tuples(st.integers(-5, 5), arm), min_size=2, max_size=6))
def test_linear_coefficients_are_exact(terms):
    """A generated sum of integer-weighted arms parses to exactly the summed coefficients."""
    text = " + ".join(f"{w}*{name}" if w >= 0 else f"({w})*{name}" for w, name in terms)
    expected: dict[str, int] = {}
    for w, name in terms:
        expected[name] = expected.get(name, 0) + w
    expected = {k: v for k, v in expected.items() if v}
    try:
        c = parse_contrast(text)
    except ExpressionError as err:
        assert not expected or sum(expected.values()) != 0, err
        return
    assert sum(expected.values()) == 0 and c.coefficients == expected
