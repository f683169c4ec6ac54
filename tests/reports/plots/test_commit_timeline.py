"""`reports plot RUNS --run ID --commits` and `EVALUATION_JSON --family F`: controller runs' commit timeline
(the controller study's plot view, prereg_seed_studies.controller.report.views).

The runs folder is real: a tiny ``sim.controller`` plan (three arms, ``site_outage`` and
``flapping_membership`` strata: membership changes and abstentions) frozen and collected with the
console scripts (about a second). The text is checked against the commit rows themselves, never
against hard-coded numbers.

``--family`` reads the evaluation's ``comparator`` (``arm``, ``challenger``, ``family_factor``),
which ``gates.artifact.Evaluation`` does not carry yet (it refuses unknown fields), so those tests
pass a stub evaluation: to :func:`family_block_runs` directly, and to the CLI
by standing in for ``gates.api.read_evaluation``. Once the artifact has the field, a test with a
real ``gates evaluate`` artifact should replace the stand-in.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from types import SimpleNamespace

import pytest

from collect.ledger.store import RunRecord, append_records, read_ledger
from prereg.errors import InputError
from prereg_seed_studies.controller.report.commit_select import block_run_ids, family_block_runs
from prereg_seed_studies.controller.report.commit_timeline import load_commit_timeline, timeline_text
from prereg_toolkit_cli.reports import main
from tests.helpers import run

PLAIN = {"NO_COLOR": "1", "COLUMNS": "80"}
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
PLAN = """\
schema: prereg/v1
study: commit-timeline-test
title: Does the adaptive controller finish sooner than sync under site outages?
hypothesis: The adaptive controller reaches the target sooner than synchronous training.
experiment:
  collector: sim.controller
  params: {sites: 3, useful_tokens: 12288, micro_batch: 64, stress_horizon_s: 8}
arms:
  sync:     {policy: sync}
  local4:   {policy: "local:4"}
  adaptive: {policy: adaptive}
strata:
  factors:
    family: [site_outage, flapping_membership]
metrics:
  time_to_target: {unit: s, better: lower, evidence: modeled}
  final_nll:      {unit: nats, better: lower, evidence: prior}
gates:
  - {id: faster_than_sync, metric: time_to_target, contrast: adaptive / sync, method: t, confidence: 0.90,
     pass_if: upper < 1.0}
decision: {claim: The adaptive controller is faster than sync., require: all, multiplicity: holm}
"""


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    """A real sim.controller runs folder (freeze + collect run), shared read-only."""
    root = tmp_path_factory.mktemp("commit-timeline")
    (root / "plan.yaml").write_text(PLAN)
    for args in (
        ("prereg", "freeze", str(root / "plan.yaml"), "-o", str(root / "plan.lock.json")),
        ("collect", "run", str(root / "plan.lock.json"), "--out", str(root / "runs"), "--jobs", "1"),
    ):
        proc = run(*args, env=PLAIN)
        assert proc.returncode == 0, proc.stderr
    return root / "runs"


@pytest.fixture
def runs_copy(runs, tmp_path) -> Path:
    return Path(shutil.copytree(runs, tmp_path / "runs"))


def record(runs: Path, arm: str, family: str) -> RunRecord:
    return next(r for r in read_ledger(runs).records if r.arm == arm and r.stratum["family"] == family)


def rows_of(runs: Path, rec: RunRecord) -> list[dict]:
    return [json.loads(line) for line in (runs / rec.traces[0]).read_text().splitlines() if line.strip()]


def expected_membership(rows: list[dict]) -> list[tuple[int, str, list[int]]]:
    """(commit, left | rejoined, sites) from the rows: every site starts a member (all in sync)."""
    sites = sorted({s for r in rows for k in ("members", "up_sites", "reachable_sites") for s in r[k]})
    prev, out = set(sites), []
    for r in rows[1:]:
        cur = set(r["members"])
        for what, diff in (("left", prev - cur), ("rejoined", cur - prev)):
            if diff:
                out.append((r["commit"], what, sorted(diff)))
        prev = cur
    return out


@pytest.mark.subprocess
def test_text_names_every_abstention_and_membership_change_in_the_rows(runs) -> None:
    abstentions = changes = 0
    for family in ("site_outage", "flapping_membership"):
        asked = record(runs, "adaptive", family)
        tl = load_commit_timeline(runs, block_run_ids(runs, asked.run_id))
        assert [r.arm for r in tl.runs] == ["adaptive", "local4", "sync"]
        text = "\n".join(timeline_text(tl))
        assert f"family={family}, replicate 0" in text
        for rec in (record(runs, arm, family) for arm in ("adaptive", "local4", "sync")):
            rows = rows_of(runs, rec)
            part = text.split(f"{rec.arm}: run {rec.run_id}", 1)[1].split(": run run-", 1)[0]
            flat = " ".join(part.split())  # the wrapped lines joined
            for r in rows[1:]:
                if r["action"] == "abstain":
                    abstentions += 1
                    assert f"commit {r['commit']} at" in flat and f"safe mode {r['mode']}: {r['reason']}" in flat
            if not any(r["action"] == "abstain" for r in rows):
                assert "abstentions: none" in flat
            for commit, what, sites in expected_membership(rows):
                changes += 1
                noun = "sites" if len(sites) > 1 else "site"
                assert f"{noun} {','.join(map(str, sites))} {what} at commit {commit} (" in flat, (commit, what)
            segments = [int(n) for n in re.findall(r"\((\d+) commits?\)", flat)]
            assert sum(segments) == len(rows) - 1  # every commit in exactly one mode segment
            assert f"final held-out NLL {rows[-1]['heldout_nll']:.4f}" in flat
            for r in rows:
                if r["wan_bytes"]["rejoin_transfer"]:
                    assert f"commit {r['commit']}, {r['wan_bytes']['rejoin_transfer']:,} bytes" in flat
        for e in asked.code["stress"]["episodes"]:
            assert f"{e['kind']} site {e['site']}" in text
    assert abstentions >= 3 and changes >= 2  # the plan really exercises both


@pytest.mark.subprocess
def test_cli_writes_png_and_svg_and_prints_the_text(runs, tmp_path, capsys) -> None:
    asked = record(runs, "adaptive", "site_outage")
    out = tmp_path / "plots"
    assert main(["plot", str(runs), "--run", asked.run_id, "--commits", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    png, svg = out / f"commits-{asked.run_id}.png", out / f"commits-{asked.run_id}.svg"
    assert png.read_bytes()[:8] == PNG_MAGIC
    assert ET.parse(svg).getroot().tag.rsplit("}", 1)[-1] == "svg"
    assert str(png) in printed and str(svg) in printed
    assert printed.index(str(png)) < printed.index("Text equivalent of the commit timeline")
    assert f"adaptive: run {asked.run_id} (the run asked for)" in printed and "abstentions (" in printed
    assert main(["plot", str(runs), "--run", asked.run_id, "--commits", "--out", str(out), "--format", "svg"]) == 0
    assert "commits-" in capsys.readouterr().out


@pytest.mark.subprocess
def test_arms_are_drawn_in_the_order_given(runs, tmp_path, capsys) -> None:
    asked = record(runs, "local4", "flapping_membership")
    ids = block_run_ids(runs, asked.run_id, ["sync", "adaptive"])
    assert [r.arm for r in load_commit_timeline(runs, ids).runs] == ["sync", "adaptive"]
    out = tmp_path / "plots"
    assert (
        main(
            [
                "plot",
                str(runs),
                "--run",
                asked.run_id,
                "--commits",
                "--arms",
                "sync,adaptive",
                "--out",
                str(out),
                "--format",
                "png",
            ]
        )
        == 0
    )
    text = capsys.readouterr().out
    assert text.index("\nsync: run ") < text.index("\nadaptive: run ") and "\nlocal4: run " not in text
    assert (out / f"commits-{asked.run_id}.png").is_file()  # named after the run asked for
    assert main(["plot", str(runs), "--run", asked.run_id, "--commits", "--arms", "sync,nope"]) == 2
    assert "no run of arm nope" in capsys.readouterr().err
    assert main(["plot", str(runs), "--run", asked.run_id, "--arms", "sync"]) == 2
    assert "--arms needs" in capsys.readouterr().err


@pytest.mark.subprocess
def test_a_changed_commit_ledger_is_refused_with_exit_3(runs_copy, tmp_path, capsys) -> None:
    asked = record(runs_copy, "adaptive", "site_outage")
    victim = record(runs_copy, "sync", "site_outage")
    path = runs_copy / victim.traces[0]
    path.write_text(path.read_text().replace('"mode": "sync"', '"mode": "local:4"', 1))
    out = tmp_path / "plots"
    assert main(["plot", str(runs_copy), "--run", asked.run_id, "--commits", "--out", str(out)]) == 3
    captured = capsys.readouterr()
    assert str(path) in captured.err and "SHA-256" in captured.err and "Traceback" not in captured.err
    assert not out.exists() or not any(out.iterdir())  # nothing drawn
    assert (
        main(
            ["plot", str(runs_copy), "--run", asked.run_id, "--commits", "--arms", "adaptive,local4", "--out", str(out)]
        )
        == 0
    )  # the other runs still draw


def test_a_run_without_a_commit_ledger_exits_2(tmp_path, capsys) -> None:
    other = tmp_path / "other"
    (other / "traces").mkdir(parents=True)
    (other / "traces" / "run-sim.events.jsonl").write_text("")
    append_records(
        other,
        [
            RunRecord(
                run_id="run-sim",
                prereg_sha256="cd" * 32,
                stratum={},
                arm="a",
                replicate=0,
                status="complete",
                metrics={},
                traces=["traces/run-sim.events.jsonl"],
                code={"collector": "sim.multisite"},
            )
        ],
    )
    assert main(["plot", str(other), "--run", "run-sim", "--commits"]) == 2
    err = capsys.readouterr().err
    assert "run run-sim (arm a) (made by sim.multisite): no commit ledger" in err
    assert "only controller runs (sim.controller, torch.controller) have a commit ledger" in err


@pytest.mark.subprocess
def test_the_text_is_printed_without_matplotlib(runs, monkeypatch, capsys) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` now raises ImportError
    asked = record(runs, "adaptive", "site_outage")
    assert main(["plot", str(runs), "--run", asked.run_id, "--commits"]) == 2
    captured = capsys.readouterr()
    assert "no figure: matplotlib is not installed" in captured.out and "abstentions (" in captured.out
    assert "pip install" in captured.err


def evaluation_stub(runs: Path, arm: str | None = "sync", comparator: bool = True) -> SimpleNamespace:
    """What --family reads of an evaluation: comparator, blocks, ledger.path, prereg_sha256."""
    rec = record(runs, "adaptive", "site_outage")
    blocks = [SimpleNamespace(stratum={"family": f}, replicate=0) for f in ("flapping_membership", "site_outage")]
    comp = SimpleNamespace(arm=arm, challenger="adaptive", family_factor="family") if comparator else None
    return SimpleNamespace(
        comparator=comp,
        blocks=blocks,
        ledger=SimpleNamespace(path=str(runs / "ledger.jsonl")),
        prereg_sha256=rec.prereg_sha256,
    )


@pytest.mark.subprocess
def test_family_block_runs_picks_the_challenger_and_the_comparator(runs) -> None:
    folder, ids = family_block_runs(evaluation_stub(runs), "site_outage")
    assert folder == runs
    assert ids == [record(runs, "adaptive", "site_outage").run_id, record(runs, "sync", "site_outage").run_id]
    for stub, family, words in (
        (evaluation_stub(runs, comparator=False), "site_outage", "has no comparator"),
        (evaluation_stub(runs, arm=None), "site_outage", "could not be chosen"),
        (evaluation_stub(runs), "calm", "no block with family=calm"),
    ):
        with pytest.raises(InputError, match=words):
            family_block_runs(stub, family)


@pytest.mark.subprocess
def test_family_through_the_cli(runs, tmp_path, monkeypatch, capsys) -> None:
    import gates.api

    evaluation = tmp_path / "evaluation.json"
    evaluation.write_text("{}")  # stands in for an artifact with a comparator (see the module doc)
    stub = evaluation_stub(runs, arm="local4")
    monkeypatch.setattr(gates.api, "read_evaluation", lambda path: stub)
    assert main(["plot", str(evaluation), "--family", "flapping_membership", "--format", "png"]) == 0
    text = capsys.readouterr().out
    challenger = record(runs, "adaptive", "flapping_membership").run_id
    assert (tmp_path / f"commits-{challenger}.png").is_file()
    assert text.index("\nadaptive: run ") < text.index("\nlocal4: run ") and "\nsync: run " not in text
    monkeypatch.setattr(gates.api, "read_evaluation", lambda path: evaluation_stub(runs, arm=None))
    assert main(["plot", str(evaluation), "--family", "site_outage"]) == 2
    assert "could not be chosen" in capsys.readouterr().err
    assert main(["plot", str(runs), "--family", "site_outage"]) == 2
    assert "--family needs the evaluation.json" in capsys.readouterr().err


@pytest.mark.parametrize(
    "line, words",
    [
        ("not json", "line 1: malformed commit row"),
        ('{"commit": 0, "wall_start_ms": 5, "wall_tick_ms": 1, "mode": "sync", "action": "init"}', "before"),
        (
            '{"commit": 0, "wall_start_ms": 0, "wall_tick_ms": 1, "mode": "sync", "action": "init", "members": "0"}',
            "'members' is not a list",
        ),
        ("", "holds no rows"),
    ],
)
def test_malformed_commit_rows_are_one_input_error(tmp_path, line: str, words: str) -> None:
    from prereg_seed_studies.controller.commits import read_commits

    path = tmp_path / "run-x.commits.jsonl"
    path.write_text(line + "\n")
    with pytest.raises(InputError, match=words):
        read_commits(path)
