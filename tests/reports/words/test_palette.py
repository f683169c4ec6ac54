"""One palette and one word table: every renderer reads reports/words/palette.py, nothing else
in reports/ spells a verdict colour."""

from __future__ import annotations

import re

from reports.html.assets import CSS
from reports.words import palette
from tests.conftest import REPO

REPORTS = REPO / "reports"
HEX = re.compile(r"#[0-9a-fA-F]{6}\b|#[0-9a-fA-F]{3}\b")


def _colours() -> set[str]:
    swatches = [
        *palette.VERDICT_PALETTE.values(),
        *palette.DECISION_PALETTE.values(),
        *palette.RANKING_PALETTE.values(),
        palette.MUTED,
    ]
    return {s.hex.lower() for s in swatches} | {palette.FOCUS_COLOUR.lower()}


def test_no_other_reports_module_defines_a_verdict_colour():
    colours = _colours()
    found = []
    for path in sorted(REPORTS.rglob("*.py")):
        if path.name == "palette.py" and path.parent.name == "words":
            continue
        for n, line in enumerate(path.read_text().splitlines(), 1):
            found += [f"{path.relative_to(REPORTS)}:{n}: {h}" for h in HEX.findall(line) if h.lower() in colours]
            if re.search(r"\b(VERDICT|DECISION|RANKING)_(COLOURS|COLORS|STYLES|WORDS|PALETTE)\s*[:=]", line):
                found.append(f"{path.relative_to(REPORTS)}:{n}: defines a verdict table")
    assert not found, found


def test_every_verdict_decision_and_ranking_has_a_word_and_a_colour():
    assert set(palette.VERDICT_WORDS) == set(palette.VERDICT_PALETTE) == set(palette.VERDICT_STYLES)
    assert set(palette.DECISION_WORDS) == set(palette.DECISION_PALETTE) == set(palette.DECISION_STYLES)
    assert set(palette.RANKING_WORDS) == set(palette.RANKING_PALETTE) == set(palette.RANKING_STYLES)
    assert {v: s.terminal for v, s in palette.VERDICT_PALETTE.items()} == {
        "pass": "green",
        "fail": "red",
        "refused": "magenta",
        "unresolvable": "yellow",
        "vacuous": "cyan",
    }


def test_the_page_css_is_generated_from_the_palette():
    for verdict, swatch in palette.VERDICT_PALETTE.items():
        assert f"--{verdict}:{swatch.hex};" in CSS and f".v-{verdict} {{ color: var(--{verdict}); }}" in CSS
    for decision, swatch in palette.DECISION_PALETTE.items():
        assert f".decision-{decision} {{ border-color: {swatch.hex}; }}" in CSS
    for outcome, swatch in palette.RANKING_PALETTE.items():
        assert f".rank-{outcome} {{ color: {swatch.hex}; }}" in CSS
