"""examples/aa_pair.yaml end to end through the console scripts: prereg freeze, collect import of its CSV
table, gates evaluate and reports show / html; the same study with a pipeline that shifts the copy is
refused (exit 3) saying which pair differs and by how much."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import OWN_EXAMPLES
from tests.helpers import run, write_csv

pytestmark = pytest.mark.subprocess  # every test here launches a console script or a python child process

PLAN = OWN_EXAMPLES / "aa_pair.yaml"
TABLE = OWN_EXAMPLES / "aa_pair" / "runs.csv"
ENV = {"NO_COLOR": "1", "COLUMNS": "80"}


def flat(text: str) -> str:
    return " ".join(text.split())


def evaluated(tmp_path: Path, table: Path) -> tuple[subprocess.CompletedProcess, Path]:
    """Freeze the example, import ``table``, evaluate: ``gates evaluate``'s process and the runs folder."""
    lock = tmp_path / "aa.lock.json"
    assert run("prereg", "freeze", str(PLAN), "-o", str(lock)).returncode == 0
    runs = tmp_path / "runs"
    proc = run("collect", "import", str(table), "--lock", str(lock), "--out", str(runs))
    assert proc.returncode == 0, proc.stderr
    return run("gates", "evaluate", str(lock), str(runs), env=ENV), runs


def test_the_example_is_supported_and_shows_its_aa_check(tmp_path):
    proc, runs = evaluated(tmp_path, TABLE)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = flat(proc.stdout)
    assert "SUPPORTED:" in out and "A/A check (the pipeline's own false alarms)" in out and "NO DIFFERENCE" in out
    data = json.loads((runs / "evaluation.json").read_text())
    (pair,) = data["aa_pairs"]
    assert (pair["control"], pair["original"], pair["verdict"], pair["n_pairs"]) == (
        "restart_again",
        "restart",
        "same",
        8,
    )
    assert pair["lower"] < 0 < pair["upper"] and data["decision_refused_by"] == []
    shown = run("reports", "show", str(runs / "evaluation.json"), env=ENV)
    assert shown.returncode == 0 and "NO DIFFERENCE" in shown.stdout and "contains 0" in flat(shown.stdout)
    page = tmp_path / "report.html"
    assert run("reports", "html", str(runs), "-o", str(page)).returncode == 0
    html = page.read_text()
    assert 'id="aa-pairs"' in html and '<span class="badge v-pass">NO DIFFERENCE</span>' in html


def test_a_pipeline_that_shifts_the_copy_is_refused(tmp_path):
    rows = list(csv.DictReader(TABLE.open()))
    for row in rows:
        if row["arm"] == "restart_again":
            row["final_nll"] = str(float(row["final_nll"]) + 0.003)  # e.g. a warm cache only the second arm met
    proc, runs = evaluated(tmp_path, write_csv(tmp_path / "shifted.csv", rows))
    assert proc.returncode == 3, proc.stdout + proc.stderr
    out = flat(proc.stdout)
    assert "REFUSED" in out and "A/A pair restart_again (a control copy of restart) differs from it" in out
    assert "the pipeline itself manufactures differences" in out and "DIFFERS" in out
    data = json.loads((runs / "evaluation.json").read_text())
    assert [r["kind"] for r in data["decision_refused_by"]] == ["aa_difference"]
    assert data["gates"][0]["verdict"] == "pass"  # the gate alone would have passed
    shown = run("reports", "show", str(runs / "evaluation.json"), env=ENV)
    assert shown.returncode == 0 and "the measurement pipeline itself makes differences" in flat(shown.stdout)


def test_the_example_table_is_reproducible(tmp_path):
    """examples/aa_pair/make_runs.py writes the committed table byte for byte."""
    copy = tmp_path / "aa_pair"
    copy.mkdir()
    (copy / "make_runs.py").write_bytes((OWN_EXAMPLES / "aa_pair" / "make_runs.py").read_bytes())
    subprocess.run([sys.executable, str(copy / "make_runs.py")], check=True, capture_output=True)
    assert (copy / "runs.csv").read_bytes() == TABLE.read_bytes()
