"""Interim looks (issue 27): the plan section at freeze, the run order in the lock, decisions only at
planned looks, the look ledger and its integrity, and unmonitored plans left as they were."""

from __future__ import annotations

import json

import pytest

import gates
from collect.api import run_plan
from collect.ledger.looks import read_looks
from gates.integrity import LooksTampered
from prereg.errors import IntegrityError
from prereg.plan import PlanError, parse_plan
from tests.helpers.looks import frozen, plan_text, run_strata


def problems(text: str) -> str:
    with pytest.raises(PlanError) as err:
        parse_plan(text.encode())
    return str(err.value)


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"looks": "[4, 8, 10]"}, "the last look must be the plan's full 12"),
        ({"looks": "[4, 4, 12]"}, "strictly increasing"),
        ({"looks": "[0, 6, 12]"}, "greater than or equal to 1"),
        ({"looks": "[12]"}, "at least 2"),
        ({"spending": "linear"}, "unknown spending function"),
        ({"spending": "power:0"}, "power spending needs rho > 0"),
        ({"futility": "binding"}, "'none' or 'nonbinding'"),
        ({"method": "wilcoxon", "spending": "obrien_fleming"}, "gate 'sooner' could never pass at look 1 (4 blocks)"),
        ({"method": "t", "multiplicity": "none", "looks": "[1, 12]"}, "could never pass at look 1"),
    ],
)
def test_freeze_refuses_what_a_look_cannot_do(kwargs, words):
    assert words in problems(plan_text(**kwargs))


def test_freeze_refuses_monitoring_with_families_and_uneven_replicate_looks():
    family = plan_text().replace(
        "    seed: [1, 2, 3, 4]",
        "    seed: [1, 2, 3, 4]\n  family_factor: outage_site\n"
        "  calibration: [{outage_site: 0}]\n  held_out: [{outage_site: 1}, {outage_site: 2}]",
    )
    assert "monitoring cannot be combined with 'strata.family_factor'" in problems(family)
    replicates = plan_text(looks="[9, 24]").replace(
        "    seed: [1, 2, 3, 4]", "    seed: [1, 2, 3, 4]\n  replicates: 2\n  analysis_unit: replicate"
    )
    assert "does not fall on whole strata" in problems(replicates)


def test_spending_is_spelled_canonically_and_the_plan_hash_covers_monitoring():
    a = parse_plan(plan_text(spending="power:2.0").encode())
    b = parse_plan(plan_text(spending="power:2").encode())
    c = parse_plan(plan_text(spending="power:3").encode())
    assert a.plan.monitoring.spending == "power:2" and a.plan_sha256 == b.plan_sha256 != c.plan_sha256
    seeded = parse_plan(plan_text().replace("futility: none", "futility: none\n  seed: 7").encode())
    assert seeded.plan_sha256 != parse_plan(plan_text().encode()).plan_sha256


def test_the_run_order_is_frozen_in_the_lock_and_checked(tmp_path):
    lock = frozen(tmp_path)
    order = lock.data["run_order"]
    assert len(order) == 12 and order != lock.plan.strata.enumerate()  # seeded, not as written
    assert sorted(map(str, order)) == sorted(map(str, lock.plan.strata.enumerate()))
    data = json.loads(lock.path.read_text())
    data["run_order"] = list(reversed(data["run_order"]))
    lock.path.chmod(0o644)
    lock.path.write_text(json.dumps(data))
    from prereg.api import load_lock

    with pytest.raises(IntegrityError):
        load_lock(lock.path)


def test_an_unplanned_point_is_never_a_decision(tmp_path):
    lock = frozen(tmp_path)
    runs = tmp_path / "runs"
    seen = {}
    for count in (3, 4, 6, 7):
        run_strata(lock, runs, count)
        ev = gates.evaluate(lock, runs)
        m = ev.monitoring
        seen[count] = ev
        if count in (4, 8):
            assert m.status == "decision" and m.look == count // 4
        else:
            assert m.status == "interim_reading" and m.look is None and m.action == "none"
            assert ev.decision == "refused" and ev.decision != "supported"
            assert any(r.kind == "interim" for r in ev.decision_refused_by)
            assert "interim reading, not a decision" in ev.decision_reason
    # the reading at 7 strata passes its gate against look 2's level, and is still no decision
    assert seen[7].gates[0].verdict == "pass" and seen[7].decision == "refused"
    records = read_looks(runs).records
    assert [(r.point_blocks, r.status, r.look) for r in records] == [
        (3, "interim_reading", None),
        (4, "decision", 1),
        (6, "interim_reading", None),
        (7, "interim_reading", None),
    ]
    assert [r.seq for r in records] == [1, 2, 3, 4] and seen[7].monitoring.sequence == 4
    assert len(seen[7].monitoring.history) == 3


def test_the_terminal_and_json_say_interim_reading(tmp_path, capsys):
    from prereg_toolkit_cli.gates import main

    lock = frozen(tmp_path)
    runs = tmp_path / "runs"
    run_strata(lock, runs, 5)
    assert main(["evaluate", str(lock.path), str(runs)]) == 3  # refused, never 0
    out = capsys.readouterr().out
    assert "INTERIM READING (NOT A DECISION)" in out and "SUPPORTED" not in out.replace("NOT SUPPORTED", "")
    assert main(["evaluate", str(lock.path), str(runs), "--json", "--force"]) == 3
    data = json.loads(capsys.readouterr().out)
    assert data["monitoring"]["status"] == "interim_reading" and data["decision"] == "refused"


def test_a_look_with_a_missing_run_is_refused(tmp_path):
    lock = frozen(tmp_path)
    runs = tmp_path / "runs"
    run_strata(lock, runs, 4, partial=True)
    ev = gates.evaluate(lock, runs)
    assert ev.monitoring.look == 1 and ev.decision == "refused"
    assert any(r.kind == "run" for r in ev.gates[0].refused_by)


def test_a_decision_stops_and_later_evaluations_decide_nothing(tmp_path):
    lock = frozen(tmp_path)
    runs = tmp_path / "runs"
    run_strata(lock, runs, 8)
    ev = gates.evaluate(lock, runs)
    assert (ev.decision, ev.monitoring.look, ev.monitoring.action) == ("supported", 2, "stop_success")
    assert ev.monitoring.runs_saved == 8
    again = gates.evaluate(lock, runs)  # the same look on the same runs repeats its decision
    assert again.decision == "supported" and again.monitoring.sequence == 2
    run_strata(lock, runs, 12)
    after = gates.evaluate(lock, runs)  # the final look's blocks, but after a stop for success
    assert after.monitoring.status == "interim_reading" and after.decision == "refused"


def test_the_look_ledger_is_checked_like_the_run_ledger(tmp_path):
    lock = frozen(tmp_path)
    runs = tmp_path / "runs"
    run_strata(lock, runs, 4)
    gates.evaluate(lock, runs)
    run_strata(lock, runs, 6)
    gates.evaluate(lock, runs)
    path = runs / "looks.jsonl"
    original = path.read_bytes()
    lines = original.splitlines(keepends=True)
    for forged in (
        original.replace(b'"decision":"not_supported"', b'"decision":"supported"'),  # edited
        lines[1],  # the first look removed
        lines[1] + lines[0],
    ):  # reordered
        path.write_bytes(forged)
        with pytest.raises(LooksTampered):
            gates.evaluate(lock, runs)
    path.write_bytes(original + b'{"record": "collect/lo')  # a torn tail (kill -9 during an append): no tampering
    assert gates.evaluate(lock, runs).monitoring.sequence == 3
    assert read_looks(runs).torn_lines == [3] and read_looks(runs).records[-1].seq == 3  # the fragment kept visible
    ledger = runs / "ledger.jsonl"  # the run ledger cut back after the looks: its own chain still verifies
    ledger.write_bytes(b"".join(ledger.read_bytes().splitlines(keepends=True)[:8]))
    with pytest.raises(LooksTampered, match="not in the run ledger's chain"):
        gates.evaluate(lock, runs)


def test_verify_re_evaluates_a_look_without_recording_one(tmp_path):
    from gates.verify import verify_evaluation

    lock = frozen(tmp_path)
    runs = tmp_path / "runs"
    run_strata(lock, runs, 4)
    ev = gates.evaluate(lock, runs, out=runs / "evaluation.json")
    ev = gates.read_evaluation(runs / "evaluation.json")
    assert verify_evaluation(ev, lock.path, runs).ok
    assert len(read_looks(runs).records) == 1
    run_strata(lock, runs, 5)
    stale = verify_evaluation(ev, lock.path, runs)
    assert not stale.ok and "re-verified only on the runs it saw" in stale.differences[0]
    assert len(read_looks(runs).records) == 1


def test_an_unmonitored_plan_writes_no_look_ledger(tmp_path):
    text = plan_text().split("monitoring:")[0]
    path = tmp_path / "plain.yaml"
    path.write_text(text)
    from prereg.api import freeze

    lock = freeze(path)
    assert "run_order" not in lock.data
    runs = tmp_path / "runs"
    run_plan(lock, runs)
    ev = gates.evaluate(lock, runs)
    assert ev.monitoring is None and "monitoring" not in ev.model_dump(mode="json", by_alias=True)
    assert not (runs / "looks.jsonl").exists()


def test_multiplicity_composes_with_the_look_level(tmp_path):
    text = plan_text(multiplicity="bonferroni").replace(
        "decision:",
        "  - {id: less_work, metric: attempted_work, contrast: continue - restart, method: t, "
        'confidence: 0.9, pass_if: "upper < 0"}\ndecision:',
    )
    lock = frozen(tmp_path, text)
    runs = tmp_path / "runs"
    run_strata(lock, runs, 8)
    ev = gates.evaluate(lock, runs)
    assert ev.monitoring.look == 2
    for gate, looks in zip(ev.gates, ev.monitoring.gates, strict=True):
        nominal = looks.looks[1].nominal_alpha
        assert gate.confidence == pytest.approx(1 - 2 * nominal)  # the interval at the look's level
        assert gate.pvalue_adjusted == pytest.approx(min(1.0, 2 * gate.pvalue))  # bonferroni over 2 gates
        assert (gate.verdict == "pass") == (gate.pvalue_adjusted <= nominal * (1 + 1e-12))


def test_the_reports_show_the_looks(tmp_path):
    from reports.html.looks import looks_section
    from reports.html.page import build_page  # noqa: F401 - the page module imports
    from reports.markdown.evaluation import evaluation_markdown

    lock = frozen(tmp_path)
    runs = tmp_path / "runs"
    run_strata(lock, runs, 4)
    gates.evaluate(lock, runs)
    run_strata(lock, runs, 5)
    ev = gates.evaluate(lock, runs)
    text = evaluation_markdown(ev)
    assert "## Interim looks" in text and "**INTERIM READING (NOT A DECISION)**" in text
    assert "#1 not supported, continue" in text
    page = looks_section(ev)
    assert page.count('class="figure look-chart"') == 1 and "<title" in page and "#2 (this)" in page


def test_evaluations_of_one_point_share_one_dot_in_the_look_chart(tmp_path):
    from reports.html.looks import looks_section

    lock = frozen(tmp_path)
    runs = tmp_path / "runs"
    run_strata(lock, runs, 4)
    gates.evaluate(lock, runs)
    ev = gates.evaluate(lock, runs)  # the same point again: record #2 beside #1
    page = looks_section(ev)
    assert page.count("<circle") == 1 and "#1, #2 (this)" in page
