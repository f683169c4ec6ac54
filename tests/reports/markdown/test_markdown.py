"""The Markdown report parses back: tables, decision line, forest bars in a code block."""

from __future__ import annotations

import re

from gates.numbers import as_float
from reports.markdown.evaluation import GATE_COLUMNS, evaluation_markdown, md_escape
from reports.words.forest import forest_bar
from tests.helpers.evaluations import CLAIM, realistic_evaluation, supported_evaluation
from tests.helpers.markdown import tables, unescape


def code_blocks(md: str) -> list[list[str]]:
    return [block.splitlines() for block in re.findall(r"^```text\n(.*?)^```$", md, flags=re.M | re.S)]


def test_gate_tables_parse_back():
    md = evaluation_markdown(realistic_evaluation())
    found = tables(md)
    header, rows = found["Primary gates (decide the claim; multiplicity holm)"]
    assert header == GATE_COLUMNS
    assert [r[0] for r in rows] == ["**PASS**", "**FAIL**", "**REFUSED**", "**VACUOUS**", "**UNRESOLVABLE**"]
    assert [r[1] for r in rows] == [
        "`nll_noninferior`",
        "`work_saved`",
        "`energy_saving`",
        "`no_phase_loss`",
        "`phase_energy`",
    ]
    first = dict(zip(header, (unescape(c) for c in rows[0]), strict=True))
    assert first["estimate"] == "0.0042 nats"
    assert first["interval"] == "90% CI [-0.0011, 0.0093] nats"
    assert first["rule"] == "upper < 0.02 nats"
    assert first["metric, evidence"] == "final_nll, measured"
    assert first["p"] == "p = 0.0031; holm-adjusted 0.012"
    refused = dict(zip(header, rows[2], strict=True))
    assert refused["estimate"] == "see Diagnostics, not evidence" and refused["p"] == "see Diagnostics"
    _, sens = found["Sensitivity (reported, never decides)"]
    assert len(sens) == 1 and unescape(sens[0][5]) == "90% CI [-inf, 0.012] nats"
    inv_header, inv = found["Invalidators"]
    assert [r[0] for r in inv] == ["**FIRED**", "not fired"]
    assert dict(zip(inv_header, inv[0], strict=True))["threshold"] == "50"
    diag_header, diag = found["Diagnostics, not evidence (refused or unresolvable gates)"]
    assert [r[1] for r in diag] == ["`energy_saving`", "`phase_energy`"]
    assert unescape(dict(zip(diag_header, diag[0], strict=True))["arm medians"]) == "fixed 5012 J, adaptive 4561 J"
    assert (
        unescape(dict(zip(diag_header, diag[0], strict=True))["test (diagnostic)"])
        == "wilcoxon, n = 3 strata; p = 0.12"
    )
    assert "Blocks (paired rows)" not in found


def test_decision_line_quotes_the_claim():
    md = evaluation_markdown(supported_evaluation())
    match = re.search(r'^\*\*SUPPORTED\*\*: "(.*)" \u2014 (.*)$', md, flags=re.M)
    assert match and unescape(match.group(1)) == CLAIM
    assert unescape(match.group(2)) == "all 3 primary gates passed (1 vacuous: could not have failed)."
    md = evaluation_markdown(realistic_evaluation())
    line = next(x for x in md.splitlines() if x.startswith("**REFUSED**"))
    assert "energy\\_saving was refused (invalidator counter\\_support fired)" in line


def test_post_data_amendment_flagged_in_words():
    md = evaluation_markdown(realistic_evaluation())
    flagged = [x for x in md.splitlines() if "POST-DATA AMENDMENT" in x]
    assert len(flagged) == 1 and flagged[0].startswith("- Amended: v3")
    assert "**POST-DATA AMENDMENT: runs already existed**" in flagged[0]


def test_forest_bars_in_code_blocks_match_the_pure_function():
    ev = realistic_evaluation()
    blocks = code_blocks(evaluation_markdown(ev))
    assert [len(b) for b in blocks] == [5, 1, 2]  # primary, sensitivity, diagnostics
    for line, g in zip(blocks[0], [g for g in ev.gates if g.role == "primary"], strict=True):
        expected = forest_bar(
            as_float(g.lower), as_float(g.upper), as_float(g.estimate), g.margin, g.null, 44, log=g.scale == "ratio"
        )
        assert line.startswith(g.id) and f" {expected} " in line


def test_blocks_and_hostile_user_text():
    ev = realistic_evaluation()
    inv = ev.invalidators[0].model_copy(update={"detail": "a | b *c* `d` <e>"})
    ev = ev.model_copy(update={"claim": "x | y *z* [link](u)", "invalidators": [inv, ev.invalidators[1]]})
    md = evaluation_markdown(ev, show_blocks=True)
    found = tables(md)
    header, inv_rows = found["Invalidators"]
    assert unescape(dict(zip(header, inv_rows[0], strict=True))["detail"]) == "a | b *c* `d` <e>"
    assert f'**REFUSED**: "{md_escape("x | y *z* [link](u)")}"' in md
    _, blocks = found["Blocks (paired rows)"]
    assert len(blocks) == 2 and blocks[0][0] == "outage\\_site=0,seed=101"
    assert blocks[0][2] == "`nll_noninferior`: 0.004 nats<br>`energy_saving`: 0.9x"
