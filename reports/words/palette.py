"""The one palette and the one word table for verdicts, decisions and ranking outcomes.

More in ``docs/internals.md``.
"""

from __future__ import annotations

from typing import Final, NamedTuple


class Swatch(NamedTuple):
    """One colour in its two renderings."""

    hex: str
    terminal: str


VERDICT_WORDS: Final = {
    "pass": "PASS",
    "fail": "FAIL",
    "refused": "REFUSED",
    "unresolvable": "UNRESOLVABLE",
    "vacuous": "VACUOUS",
}
DECISION_WORDS: Final = {"supported": "SUPPORTED", "not_supported": "NOT SUPPORTED", "refused": "REFUSED"}
RANKING_WORDS: Final = {"challenger": "CHALLENGER", "comparator": "COMPARATOR", "flip": "FLIP", "abstain": "ABSTAIN"}

VERDICT_PALETTE: Final = {
    "pass": Swatch("#1a7f37", "green"),
    "fail": Swatch("#cf222e", "red"),
    "refused": Swatch("#8250df", "magenta"),
    "unresolvable": Swatch("#9a6700", "yellow"),
    "vacuous": Swatch("#0969da", "cyan"),
}
MUTED: Final = Swatch("#57606a", "dim")
#: a decision wears the colour of the verdict that makes it
DECISION_PALETTE: Final = {
    "supported": VERDICT_PALETTE["pass"],
    "not_supported": VERDICT_PALETTE["fail"],
    "refused": VERDICT_PALETTE["refused"],
}
#: a ranking outcome: the challenger better (pass's colour), the comparator better (fail's), a flip
#: (unresolvable's: the order depends on where the region fell), abstain (muted)
RANKING_PALETTE: Final = {
    "challenger": VERDICT_PALETTE["pass"],
    "comparator": VERDICT_PALETTE["fail"],
    "flip": VERDICT_PALETTE["unresolvable"],
    "abstain": MUTED,
}

#: verdict -> hex, for HTML, SVG and matplotlib
VERDICT_COLOURS: Final = {v: s.hex for v, s in VERDICT_PALETTE.items()}
#: what a figure marks as gone wrong outside any verdict (failed polls, counter resets): fail's colour
ALARM_COLOUR: Final = VERDICT_PALETTE["fail"].hex
#: the page's focus outline (the same blue as vacuous, named here so no other module spells it)
FOCUS_COLOUR: Final = "#0969da"


def terminal_style(swatch: Swatch, bold: bool = True) -> str:
    """A rich style for ``swatch`` ('bold green'; muted is 'italic dim')."""
    if swatch is MUTED:
        return "italic dim"
    return f"bold {swatch.terminal}" if bold else swatch.terminal


VERDICT_STYLES: Final = {v: terminal_style(s) for v, s in VERDICT_PALETTE.items()}
DECISION_STYLES: Final = {d: terminal_style(s) for d, s in DECISION_PALETTE.items()}
RANKING_STYLES: Final = {r: terminal_style(s) for r, s in RANKING_PALETTE.items()}
#: a verdict's word (PASS, FAIL...) -> its plain (not bold) style, for words inside a sentence
VERDICT_WORD_STYLES: Final = {VERDICT_WORDS[v]: terminal_style(s, bold=False) for v, s in VERDICT_PALETTE.items()}


def css_rules() -> str:
    """The page's colour rules, generated from the tables: one custom property per verdict
    (``--pass``...), ``.v-<verdict>`` (badges), ``.decision-<decision>`` (the decision box) and
    ``.rank-<outcome>`` (ranking words)."""
    props = " ".join(f"--{v}:{s.hex};" for v, s in VERDICT_PALETTE.items())
    verdicts = " ".join(f".v-{v} {{ color: var(--{v}); }}" for v in VERDICT_PALETTE)
    decisions = " ".join(f".decision-{d} {{ border-color: {s.hex}; }}" for d, s in DECISION_PALETTE.items())
    ranks = " ".join(f".rank-{r} {{ color: {s.hex}; }}" for r, s in RANKING_PALETTE.items())
    return (
        f":root {{ --muted:{MUTED.hex}; --focus:{FOCUS_COLOUR}; {props} }}\n{verdicts}\n{decisions}\n{ranks}\n"
        ".rank-abstain { font-style: italic; border-style: dashed; }\n"
    )


__all__ = [
    "ALARM_COLOUR",
    "DECISION_PALETTE",
    "DECISION_STYLES",
    "FOCUS_COLOUR",
    "DECISION_WORDS",
    "MUTED",
    "RANKING_PALETTE",
    "RANKING_STYLES",
    "RANKING_WORDS",
    "VERDICT_COLOURS",
    "VERDICT_PALETTE",
    "VERDICT_STYLES",
    "VERDICT_WORDS",
    "VERDICT_WORD_STYLES",
    "Swatch",
    "css_rules",
    "terminal_style",
]
