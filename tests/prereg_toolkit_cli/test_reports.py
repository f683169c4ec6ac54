"""`reports show` end to end through the installed console script."""

from __future__ import annotations

import json

import pytest

from gates.artifact import EvaluationError, read_evaluation, v1_message, write_evaluation
from reports.markdown.evaluation import evaluation_markdown
from tests.helpers import run
from tests.helpers.evaluations import CLAIM, realistic_evaluation

PLAIN = {"NO_COLOR": "1", "COLUMNS": "80"}
FIGURES = [
    (
        "Forest plot: each gate's interval, estimate, margin and null on its own axis, with each stratum's paired "
        "contrast",
        "report.forest.svg",
    ),
    ("Per-stratum paired contrasts of each gate on its axis, the gate's interval shaded", "report.strata.svg"),
]


@pytest.fixture
def artifact(tmp_path):
    path = tmp_path / "evaluation.json"
    write_evaluation(path, realistic_evaluation())
    return path


@pytest.mark.subprocess
def test_show_prints_the_plain_report(artifact):
    proc = run("reports", "show", str(artifact), env=PLAIN)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "\x1b" not in out
    assert max(len(line) for line in out.splitlines()) <= 80
    for word in (
        "PASS",
        "FAIL",
        "REFUSED",
        "UNRESOLVABLE",
        "VACUOUS",
        "POST-DATA AMENDMENT",
        "Sensitivity (reported, never decides)",
        "Diagnostics, not evidence",
    ):
        assert word in out
    assert f'REFUSED: "{CLAIM}"' in " ".join(out.split())
    assert "outage_site=0,seed=101" not in out
    assert "outage_site=0,seed=101" in run("reports", "show", str(artifact), "--blocks", env=PLAIN).stdout


@pytest.mark.subprocess
def test_markdown_written_atomically_and_json(artifact, tmp_path):
    target = tmp_path / "out" / "report.md"
    target.parent.mkdir()
    proc = run("reports", "show", str(artifact), "--blocks", "--markdown", str(target), env=PLAIN)
    assert proc.returncode == 0, proc.stderr
    figures = [(alt, name) for alt, name in FIGURES]
    assert target.read_text(encoding="utf-8") == evaluation_markdown(
        realistic_evaluation(), show_blocks=True, figures=figures
    )
    # the SVG figures beside it (reports.html.figures), and no temporary file left behind
    assert sorted(p.name for p in target.parent.iterdir()) == ["report.forest.svg", "report.md", "report.strata.svg"]
    assert "PASS" in proc.stdout  # the terminal report is still printed
    proc = run("reports", "show", str(artifact), "--markdown", "-")
    assert proc.returncode == 0 and proc.stdout == evaluation_markdown(realistic_evaluation())
    proc = run("reports", "show", str(artifact), "--json")
    assert proc.returncode == 0
    assert json.loads(proc.stdout) == json.loads(artifact.read_text())


@pytest.mark.parametrize(
    "content, words",
    [
        (None, "no such file"),
        (b"\x00\x01\xff\xfe junk", "not JSON"),
        (b"", "not JSON"),
        (b'{"schema": "prereg/v1", "study": "x"}', "not an evaluation artifact"),
        (b"[1, 2, 3]", "not an evaluation artifact"),
        (b'{"schema": "gates/evaluation/v2", "study": "x"}', "malformed evaluation artifact"),
    ],
)
@pytest.mark.subprocess
def test_bad_artifacts_exit_2_with_one_message(tmp_path, content, words):
    path = tmp_path / "evaluation.json"
    if content is not None:
        path.write_bytes(content)
    proc = run("reports", "show", str(path))
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr.startswith(f"reports: {path}") and words in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    data = json.loads(run("reports", "show", str(path), "--json").stdout)
    assert data["ok"] is False and data["exit_code"] == 2 and words in data["error"]


@pytest.mark.subprocess(quick=True)
def test_wrong_field_type_names_the_field(artifact):
    data = json.loads(artifact.read_text())
    data["gates"][0]["verdict"] = "maybe"
    artifact.write_text(json.dumps(data))
    proc = run("reports", "show", str(artifact))
    assert proc.returncode == 2 and "gates.0.verdict" in proc.stderr


@pytest.mark.subprocess(quick=True)
def test_usage_errors_exit_2(artifact, tmp_path):
    assert run("reports", "show", str(tmp_path)).returncode == 2  # a folder
    proc = run("reports", "show", str(artifact), "--markdown", str(tmp_path / "nowhere" / "r.md"))
    assert proc.returncode == 2 and "no such folder" in proc.stderr
    assert run("reports", "show", str(artifact), "--json", "--markdown", "-").returncode == 2
    assert run("reports", "show").returncode == 2
    assert run("reports").returncode == 2
    assert run("reports", "show", "--nope", str(artifact)).returncode == 2
    proc = run("reports", "show", "--help")
    assert proc.returncode == 0 and "--markdown" in proc.stdout


def _v1_file(tmp_path):
    """A v2 artifact relabelled as the v1 format (what an older toolkit's file looks like to this one)."""
    path = tmp_path / "evaluation.json"
    write_evaluation(path, realistic_evaluation())
    data = json.loads(path.read_text())
    data["schema"] = "gates/evaluation/v1"
    path.write_text(json.dumps(data))
    return path


def test_a_v1_artifact_is_refused_in_process_with_the_one_message(tmp_path):
    path = _v1_file(tmp_path)
    with pytest.raises(EvaluationError) as err:
        read_evaluation(path)
    assert str(err.value) == v1_message(path)
    assert "written in gates/evaluation/v1 by prereg-toolkit 0.1.x" in str(err.value)
    assert "re-run 'gates evaluate LOCK RUNS' on its runs" in str(err.value)


@pytest.mark.subprocess
def test_a_v1_artifact_exits_2_with_one_message_from_the_console_scripts(tmp_path):
    path = _v1_file(tmp_path)
    for tool, args in (
        ("reports", ("show", str(path))),
        ("reports", ("html", str(path), "-o", str(tmp_path / "r.html"))),
        ("gates", ("verify", str(path), str(tmp_path / "x.lock.json"), str(tmp_path))),
    ):
        proc = run(tool, *args)
        assert proc.returncode == 2, (tool, args, proc.stderr)
        assert proc.stdout == "" and proc.stderr.strip() == f"{tool}: {v1_message(path)}", proc.stderr
