"""The parser for a gate's ``contrast`` string (a real tokenizer and parser, no eval).

More in ``docs/internals.md``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from .vocabulary import Scale


class ExpressionError(ValueError):
    """A contrast that does not parse or does not make sense; the message says why."""


_TOKEN = re.compile(
    r"\s*(?:(?P<num>(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)|(?P<name>[A-Za-z_][A-Za-z0-9_]*)|(?P<op>[-+*/()]))"
)


def _tokens(text: str) -> list[tuple[str, str, int]]:
    out: list[tuple[str, str, int]] = []
    pos = 0
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            bad = text[pos:].lstrip()[:1]
            raise ExpressionError(
                f"unexpected character {bad!r} at position {len(text) - len(text[pos:].lstrip()) + 1}"
            )
        kind = m.lastgroup or "op"
        out.append((kind, m.group(kind), m.start(kind) + 1))
        pos = m.end()
    return out


# AST nodes: ("num", float) | ("arm", name) | ("neg", node) | ("group", node) | (op, left, right)
Node = tuple


class _Parser:
    def __init__(self, text: str) -> None:
        self.toks = _tokens(text)
        self.i = 0

    def peek(self) -> tuple[str, str, int] | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def take(self, value: str | None = None) -> tuple[str, str, int]:
        tok = self.peek()
        if tok is None:
            raise ExpressionError("unexpected end of expression" + (f" (expected {value!r})" if value else ""))
        if value is not None and tok[1] != value:
            raise ExpressionError(f"expected {value!r} at position {tok[2]}, found {tok[1]!r}")
        self.i += 1
        return tok

    def parse(self) -> Node:
        if not self.toks:
            raise ExpressionError("empty expression")
        node = self.expr()
        tok = self.peek()
        if tok is not None:
            raise ExpressionError(f"unexpected {tok[1]!r} at position {tok[2]}")
        return node

    def expr(self) -> Node:
        node = self.term()
        while (tok := self.peek()) is not None and tok[1] in "+-" and tok[0] == "op":
            self.take()
            node = (tok[1], node, self.term())
        return node

    def term(self) -> Node:
        node = self.unary()
        while (tok := self.peek()) is not None and tok[1] in "*/" and tok[0] == "op":
            self.take()
            node = (tok[1], node, self.unary())
        return node

    def unary(self) -> Node:
        tok = self.peek()
        if tok is not None and tok == ("op", "-", tok[2]):
            self.take()
            return ("neg", self.unary())
        return self.primary()

    def primary(self) -> Node:
        tok = self.take()
        if tok[0] == "num":
            return ("num", float(tok[1]))
        if tok[0] == "name":
            return ("arm", tok[1])
        if tok[1] == "(":
            inner = self.expr()
            self.take(")")
            return ("group", inner)
        raise ExpressionError(f"unexpected {tok[1]!r} at position {tok[2]}")


def _has_arm(node: Node) -> bool:
    if node[0] == "arm":
        return True
    return any(_has_arm(child) for child in node[1:] if isinstance(child, tuple))


def _uses(node: Node) -> tuple[bool, bool]:
    """(uses linear operators, uses ratio operators) anywhere in ``node``."""
    kind = node[0]
    linear = kind in ("+", "-", "neg")
    ratio = kind in ("*", "/") and _has_arm(node[1]) and _has_arm(node[2])
    for child in node[1:]:
        if isinstance(child, tuple):
            cl, cr = _uses(child)
            linear, ratio = linear or cl, ratio or cr
    return linear, ratio


def _linear(node: Node) -> tuple[dict[str, float], float]:
    """Evaluate ``node`` as an affine map: (arm -> coefficient, constant)."""
    kind = node[0]
    if kind == "num":
        return {}, node[1]
    if kind == "arm":
        return {node[1]: 1.0}, 0.0
    if kind == "group":
        return _linear(node[1])
    if kind == "neg":
        coefs, const = _linear(node[1])
        return {k: -v for k, v in coefs.items()}, -const
    if kind in "+-":
        (lc, lk), (rc, rk) = _linear(node[1]), _linear(node[2])
        sign = 1.0 if kind == "+" else -1.0
        out = dict(lc)
        for arm, v in rc.items():
            out[arm] = out.get(arm, 0.0) + sign * v
        return out, lk + sign * rk
    if kind == "*":
        (lc, lk), (rc, rk) = _linear(node[1]), _linear(node[2])
        if lc and rc:  # pragma: no cover - classified as ratio form before we get here
            raise ExpressionError("a product of two arms is a ratio-form contrast")
        coefs, scalar, const = (lc, rk, lk) if lc else (rc, lk, rk)
        return {k: v * scalar for k, v in coefs.items()}, const * scalar
    raise ExpressionError("'/' divides arms and makes a ratio contrast; write coefficients as 0.5*b, not b/2")


def _ratio(node: Node) -> dict[str, float]:
    """Evaluate ``node`` as a monomial: arm -> exponent."""
    kind = node[0]
    if kind == "arm":
        return {node[1]: 1.0}
    if kind == "group":
        return _ratio(node[1])
    if kind in "*/":
        left, right = _ratio(node[1]), _ratio(node[2])
        sign = 1.0 if kind == "*" else -1.0
        out = dict(left)
        for arm, v in right.items():
            out[arm] = out.get(arm, 0.0) + sign * v
        return out
    raise ExpressionError("numbers are not allowed in a ratio contrast (a / b); put thresholds in pass_if")


def _format(node: Node) -> str:
    kind = node[0]
    if kind == "num":
        return _fmt_number(node[1])
    if kind == "arm":
        return node[1]
    if kind == "group":
        return f"({_format(node[1])})"
    if kind == "neg":
        return f"-{_format(node[1])}"
    sep = " " if kind in "+-/" else ""
    return f"{_format(node[1])}{sep}{kind}{sep}{_format(node[2])}"


def _fmt_number(value: float) -> str:
    return str(int(value)) if value == int(value) and abs(value) < 1e15 else repr(value)


@dataclass(frozen=True)
class Contrast:
    """A parsed contrast: ``coefficients`` per arm (log-scale exponents when ``scale == 'ratio'``)."""

    text: str
    scale: Scale
    coefficients: dict[str, float]

    def __str__(self) -> str:
        return self.text

    @property
    def arms(self) -> list[str]:
        """The arms the contrast uses, in order of first appearance."""
        return list(self.coefficients)


def parse_contrast(text: str, known_arms: set[str] | None = None) -> Contrast:
    """Parse a contrast; ``text`` of the result is the canonical spelling (normalised spacing)."""
    if not isinstance(text, str):
        raise ExpressionError("a contrast is a string such as 'adaptive - fixed' or 'adaptive / fixed'")
    tree = _Parser(text).parse()
    linear, ratio = _uses(tree)
    if linear and ratio:
        raise ExpressionError(
            "mixes the linear form (+ -) with the ratio form (/ or arm*arm); write either "
            "'a - b' (analysed as a difference) or 'a / b' (analysed on the log scale)"
        )
    if ratio:
        coefs = _ratio(tree)
        scale: Scale = "ratio"
    else:
        coefs, const = _linear(tree)
        if abs(const) > 1e-12:
            raise ExpressionError("a contrast may not contain a constant term; put offsets in pass_if")
        scale = "difference"
    coefs = {arm: c for arm, c in coefs.items() if abs(c) > 1e-12}
    if not coefs:
        raise ExpressionError("the contrast is identically zero: it compares nothing")
    if not all(math.isfinite(c) for c in coefs.values()):
        raise ExpressionError("coefficients must be finite numbers")
    total = sum(coefs.values())
    if abs(total) > 1e-9:
        what = "exponents (numerator minus denominator arms)" if scale == "ratio" else "coefficients"
        raise ExpressionError(f"the {what} must sum to zero (they sum to {total:g}): a contrast compares arms")
    contrast = Contrast(text=_format(tree), scale=scale, coefficients=coefs)
    if known_arms is not None:
        check_arms(contrast, known_arms)
    return contrast


def check_arms(contrast: Contrast, known_arms: set[str]) -> None:
    """Refuse a contrast naming an arm the plan does not have (``ExpressionError``)."""
    unknown = [arm for arm in contrast.coefficients if arm not in known_arms]
    if unknown:
        raise ExpressionError(f"unknown arm(s) {', '.join(map(repr, unknown))}; arms are {sorted(known_arms)}")
