"""The terminal report: every word a reviewer needs, within 80 columns, never colour alone."""

from __future__ import annotations

import io
import re

from rich.console import Console

from gates.artifact import AmendmentSummary
from reports.terminal.evaluation import render_evaluation
from tests.helpers.evaluations import CLAIM, gate, not_supported_evaluation, realistic_evaluation, supported_evaluation

ANSI = re.compile(r"\x1b\[[0-9;]*m")


def render(ev, show_blocks=False, **console_kwargs) -> str:
    kwargs = dict(width=80, file=io.StringIO(), no_color=True, highlight=False)
    kwargs.update(console_kwargs)
    console = Console(**kwargs)
    console.print(render_evaluation(ev, show_blocks=show_blocks))
    return console.file.getvalue()


def flat(text: str) -> str:
    """Whitespace collapsed, so sentences wrapped over lines can be matched."""
    return " ".join(text.split())


def table_cells(section: str, column: int) -> list[str]:
    """The text of one column of the first rich table in ``section``, one string per body row."""
    rows: list[str] = []
    current: list[str] = []
    in_body = False
    for line in section.splitlines():
        if line.startswith("┡"):  # the rule under the header
            in_body = True
        elif in_body and line.startswith(("├", "└")):  # between rows / the bottom
            rows.append(" ".join(current))
            current = []
            if line.startswith("└"):
                break
        elif in_body and line.startswith("│"):
            current.append(line.split("│")[column + 1].strip())
    return [flat(r) for r in rows]


def after(text: str, heading: str) -> str:
    assert heading in text, heading
    return text[text.index(heading) :]


def test_every_verdict_word_and_the_decision_sentence_quoting_the_claim():
    out = render(realistic_evaluation())
    for word in ("PASS", "FAIL", "REFUSED", "UNRESOLVABLE", "VACUOUS"):
        assert re.search(rf"\b{word}\b", out), word
    text = flat(out)
    assert (
        f'REFUSED: "{CLAIM}" \u2014 no claim either way, because gate energy_saving was refused '
        "(invalidator counter_support fired); gate phase_energy is unresolvable" in text
    )
    assert "Scope (not covered by this evidence): Two-site clusters only;" in text


def test_supported_and_not_supported_sentences():
    text = flat(render(supported_evaluation()))
    assert f'SUPPORTED: "{CLAIM}" \u2014 all 3 primary gates passed (1 vacuous: could not have failed).' in text
    assert "NOT SUPPORTED" not in text
    text = flat(render(not_supported_evaluation()))
    assert f'NOT SUPPORTED: "{CLAIM}" \u2014 gate work_saved failed (1 of 2 primary gates passed).' in text
    assert "Scope (not covered by this evidence): none stated in the plan" in text
    assert "Predecessors: none" in text and "Invalidators none in the plan" in text
    assert "Amended never (the plan as first frozen)" in flat(render(supported_evaluation()))


def test_inconsistent_artifact_falls_back_to_the_recorded_reason():
    ev = not_supported_evaluation().model_copy(update={"decision": "supported", "decision_reason": "as recorded"})
    assert f'SUPPORTED: "{CLAIM}" \u2014 as recorded.' in flat(render(ev))


def test_plain_output_fits_80_columns_without_escapes():
    for ev in (realistic_evaluation(), supported_evaluation(), not_supported_evaluation()):
        out = render(ev, show_blocks=True)
        assert "\x1b" not in out
        assert max(len(line) for line in out.splitlines()) <= 80


def test_words_survive_without_colour_and_with_it():
    coloured = render(realistic_evaluation(), no_color=False, force_terminal=True, color_system="truecolor")
    assert "\x1b[" in coloured  # colour really was on
    plain = ANSI.sub("", coloured)
    assert plain == render(realistic_evaluation())  # colour repeats the words, adds none


def test_header_hashes_amendments_and_run_accounting():
    out = render(realistic_evaluation())
    text = flat(out)
    assert "sha256 3f2a9c81d4e5, frozen 2025-03-01T12:00:00Z (first frozen as aa11bb22cc33)" in text
    assert "3f2a9c81d4e5b" not in out  # the short hash only
    assert text.count("POST-DATA AMENDMENT") == 1  # v3 only; v2 was before data
    assert 'v3 2025-03-09T17:05:00Z: POST-DATA AMENDMENT: runs already existed ("widen the NLL margin' in text
    assert "v2 2025-03-04T09:30:00Z: before data (no runs existed)" in text
    assert "runs/ledger.jsonl, sha256 b7e1b7e1b7e1, 13 records" in text
    assert "12 planned, 11 matched" in text
    assert "missing (1): site2-seed102/adaptive" in text
    assert "duplicate (1): r-0007" in text and "under another plan (1): r-0013" in text


def test_unchecked_amendment_and_torn_ledger_said_in_words():
    ev = realistic_evaluation()
    ev = ev.model_copy(
        update={
            "amendments": [
                AmendmentSummary(version=2, amended_at="t", reason="r", post_data=False, runs_checked=False)
            ],
            "ledger": ev.ledger.model_copy(update={"torn_tail": True}),
        }
    )
    text = flat(render(ev))
    assert "not checked against the runs" in text and "POST-DATA" not in text
    assert "TORN TAIL" in text


def test_gate_tables_units_rules_and_evidence():
    out = render(realistic_evaluation())
    primary = out[out.index("Primary gates") : out.index("Invalidators")]
    assert "multiplicity holm" in primary
    verdicts = table_cells(primary, 0)
    assert verdicts == ["PASS", "FAIL", "REFUSED", "VACUOUS (could not have failed)", "UNRESOLVABLE"]
    gates = table_cells(primary, 1)
    assert gates[0] == "nll_noninferior final_nll, measured group quality"
    numbers = table_cells(primary, 2)
    assert numbers[0] == "0.0042 nats 90% CI [-0.0011, 0.0093] nats"
    assert numbers[1] == "-2.1e+13 FLOP 90% CI [-5.3e+13, 1.1e+13] FLOP"
    # refused / unresolvable gates show no numbers as evidence, only a pointer to the diagnostics
    assert numbers[2] == "no claim either way: see Diagnostics, not evidence"
    assert numbers[4] == "the instrument cannot resolve the margin: see Diagnostics, not evidence"
    tests = table_cells(primary, 3)
    assert (
        tests[0]
        == "upper < 0.02 nats t, n = 6 strata; symmetry unchecked at this n (see notes) p = 0.0031; holm-adjusted 0.012"
    )
    assert (
        tests[1]
        == "upper < 0.0 FLOP signflip, n = 6 strata, attained 93.75%; symmetry unchecked at this n (see notes) p = 0.094; holm-adjusted 0.28"
    )
    assert (
        tests[2] == "upper < 1.0 (ratio: requires lower) wilcoxon, n = 3 strata"
    )  # its p-value is a diagnostic: shown there
    assert tests[4].startswith("within [-2.0, 2.0] J")
    sens = after(out, "Sensitivity (reported, never decides)")
    assert table_cells(sens, 0) == ["PASS"]
    assert table_cells(sens, 1) == ["nll_all_strata final_nll, modeled (simulator)"]
    assert table_cells(sens, 2) == ["0.0051 nats 90% CI [-inf, 0.012] nats"]


def test_forest_bars_drawn_for_each_gate():
    out = render(realistic_evaluation())
    bars = re.findall(r"^\s+(\S+) ([.<][-.\[\]*|01]+[.>]) (\S+)", out, flags=re.M)
    by_hi = [(lo, hi) for lo, _, hi in bars]
    assert ("-0.0011", "0.02") in by_hi  # nll_noninferior: axis from its lower end to its margin
    assert any(bar.endswith("|>") and lo == "0.83x" for lo, bar, _ in bars)  # ratio, upper end infinite
    assert any(bar.startswith("<0") for _, bar, _ in bars)  # sensitivity gate, lower end -inf
    assert len(bars) == 5 + 1 + 2  # primary, sensitivity, diagnostics (refused + unresolvable)


def test_groups_invalidators_diagnostics_notes_predecessors():
    out = render(realistic_evaluation())
    text = flat(out)
    assert "quality 1/1 passed; mechanism 1/3 passed, 1 vacuous, 1 failed, 1 refused" in text
    inv = out[out.index("Invalidators") : out.index("Sensitivity")]
    assert table_cells(inv, 0) == ["counter_support counter_support", "nll_bounds metric_bounds"]
    assert table_cells(inv, 1) == ["FIRED", "not fired"]
    assert table_cells(inv, 2) == ["12 vs 50", "2.61 vs [0, 10]"]
    assert table_cells(inv, 3)[0] == "2 run(s) with updates below 50; worst r-0004: 12 refuses: energy_saving"
    diag = flat(after(out, "Diagnostics, not evidence"))
    assert "REFUSED energy_saving" in diag and "refused: invalidator counter_support fired" in diag
    assert "arm medians: fixed 5012 J, adaptive 4561 J" in diag
    assert "estimate: 0.91x (pseudo-median), 90% CI [0.83x, +inf] (ratio adaptive / fixed of energy; measured)" in diag
    assert "UNRESOLVABLE phase_energy" in diag and "could change the rule's outcome" in diag
    notes = flat(after(out, "Notes and estimator warnings"))
    assert "nll_all_strata: estimator warning: n < 10: bootstrap intervals under-cover" in notes
    assert "no_phase_loss: every block's contrast is the same value" in notes
    preds = flat(after(out, "Predecessors"))
    assert "VERIFIED results/pilot/evaluation.json (sha256 c0ffeec0ffee): pilot had 3 strata; now 6" in preds
    assert "HASH MISMATCH results/old/evaluation.json" in preds


def test_blocks_only_when_asked():
    assert "outage_site=0,seed=101" not in render(realistic_evaluation())
    out = render(realistic_evaluation(), show_blocks=True)
    blocks = after(out, "Blocks (paired rows)")
    assert table_cells(blocks, 0) == ["outage_site=0,seed=101 replicate 1", "outage_site=1,seed=101 replicate 1"]
    assert table_cells(blocks, 1) == [
        "nll_noninferior: 0.004 nats energy_saving: 0.9x",
        "nll_noninferior: n/a energy_saving: n/a",
    ]
    assert table_cells(blocks, 2)[0] == "final_nll: fixed 2.503, adaptive 2.507 energy: fixed 5000, adaptive 4500"


def test_user_text_is_never_markup():
    ev = realistic_evaluation()
    claim = "Energy [bold]drops[/bold] by [red]10%[/] [/]"
    gates = [gate(notes=["a [link=x]note[/link]"])]
    ev = ev.model_copy(update={"claim": claim, "gates": gates, "decision": "supported", "groups": {}})
    text = flat(render(ev))
    assert f'SUPPORTED: "{claim}"' in text
    assert "a [link=x]note[/link]" in text


def test_modeled_evidence_is_said_in_the_decision():
    ev = supported_evaluation()
    ev = ev.model_copy(update={"gates": [g.model_copy(update={"evidence": "modeled"}) for g in ev.gates]})
    assert "this claim rests on modeled (simulator) numbers" in flat(render(ev))


def test_long_run_lists_are_cut_in_the_terminal_but_complete_in_markdown():
    from reports.markdown.evaluation import evaluation_markdown

    ev = realistic_evaluation()
    missing = [f"run-{i:02d}" for i in range(15)]
    ev = ev.model_copy(
        update={"runs": ev.runs.model_copy(update={"missing": missing, "ledger_problems": ["line 7: not JSON"]})}
    )
    text = flat(render(ev))
    assert "missing (15): run-00, run-01" in text and "run-09 and 5 more (reports show --json lists all)" in text
    assert "run-10" not in text
    assert "ledger problems (1): line 7: not JSON" in text
    md = evaluation_markdown(ev)
    assert "run-14" in md and "more (reports" not in md
