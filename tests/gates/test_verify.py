"""`gates verify` and the re-verification `reports show` / `reports html` do beside the runs folder.

Each forgery recomputes the artifact's seal and keeps it consistent with itself, so only a
re-evaluation from the lock and runs can tell it from the genuine one.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from gates.artifact import seal_hash
from tests.conftest import shared_example_path
from tests.helpers import equal_work_rows, run, write_csv

pytestmark = pytest.mark.subprocess  # every test here launches a console script or a python child process


@pytest.fixture(scope="module")
def study(tmp_path_factory) -> tuple[Path, Path]:
    """The equal-work plan on runs where energy_saving fails (not supported), evaluated: (lock, runs)."""
    root = tmp_path_factory.mktemp("verify")
    plan = root / "equal-work.yaml"
    plan.write_text(shared_example_path("equal-work.yaml").read_text())
    assert run("prereg", "freeze", str(plan)).returncode == 0
    lock = root / "equal-work.lock.json"
    table = write_csv(root / "runs.csv", equal_work_rows(energy_ratio=1.0))
    assert run("collect", "import", str(table), "--lock", str(lock), "--out", str(root / "runs")).returncode == 0
    assert run("gates", "evaluate", str(lock), str(root / "runs")).returncode == 1
    return lock, root / "runs"


def _fail_to_pass(d: dict) -> None:
    """energy_saving's FAIL made a PASS with an interval and p-value to match, and the decision with it."""
    gate = next(g for g in d["gates"] if g["id"] == "energy_saving")
    gate.update(verdict="pass", estimate=0.9, lower=0.88, upper=0.92, pvalue=0.001, pvalue_adjusted=0.001)
    d.update(decision="supported", decision_reason="every primary gate passed")


def _retitled(d: dict) -> None:
    d.update(claim="Continuing halves the energy bill.", title="A much bigger result")


FORGERIES = {
    "fail_to_pass": (_fail_to_pass, "gates[energy_saving].verdict: the artifact says 'pass'"),
    "claim": (_retitled, "claim: the artifact says 'Continuing halves the energy bill.'"),
}


def _forged(study, tmp_path: Path, edit, reseal: bool = True) -> tuple[Path, Path]:
    """A copy of the runs folder whose evaluation.json is edited (and resealed): (its path, the copy)."""
    lock, runs = study
    copy = Path(shutil.copytree(runs, tmp_path / "runs"))
    path = copy / "evaluation.json"
    data = json.loads(path.read_text())
    edit(data)
    data.pop("seal_sha256", None)
    if reseal:
        data["seal_sha256"] = seal_hash(data)
    path.write_text(json.dumps(data, indent=2))
    return path, copy


def test_gates_verify_accepts_the_genuine_artifact(study):
    lock, runs = study
    proc = run("gates", "verify", str(runs / "evaluation.json"), str(lock), str(runs))
    assert (
        proc.returncode == 0 and "re-verified" in proc.stdout and "same decision, verdicts and numbers" in proc.stdout
    )
    proc = run("reports", "show", str(runs / "evaluation.json"))
    assert proc.returncode == 0 and "re-verified" in proc.stderr


@pytest.mark.parametrize("name", sorted(FORGERIES))
def test_a_resealed_forgery_is_refused_everywhere(study, tmp_path, name):
    lock, _ = study
    edit, difference = FORGERIES[name]
    path, copy = _forged(study, tmp_path, edit)
    assert run("reports", "show", str(path), "--json").returncode == 3
    proc = run("gates", "verify", str(path), str(lock), str(copy))
    assert proc.returncode == 3 and difference in proc.stderr, proc.stderr
    proc = run("reports", "show", str(path))
    assert proc.returncode == 3 and "FORGED OR STALE" in proc.stderr and difference in proc.stderr
    proc = run("reports", "html", str(copy), "-o", str(tmp_path / "page.html"))
    assert proc.returncode == 3 and difference in proc.stderr and not (tmp_path / "page.html").exists()
    # without its runs folder nothing can be re-evaluated, and the report says so plainly
    alone = tmp_path / "alone.json"
    shutil.copy(path, alone)
    proc = run("reports", "show", str(alone))
    assert proc.returncode == 0 and "could not be re-verified: no runs folder beside it" in proc.stderr
    proc = run("reports", "html", str(alone), "-o", str(tmp_path / "alone.html"))
    assert proc.returncode == 0 and "could not be re-verified" in proc.stderr
    assert "could not be re-verified" in (tmp_path / "alone.html").read_text()


def test_an_unsealed_artifact_beside_its_runs_is_refused(study, tmp_path):
    lock, _ = study
    path, copy = _forged(study, tmp_path, lambda d: None, reseal=False)
    proc = run("gates", "verify", str(path), str(lock), str(copy))
    assert proc.returncode == 3 and "the artifact carries no seal" in proc.stderr
    for args in (("reports", "show", str(path)), ("reports", "html", str(copy), "-o", str(tmp_path / "p.html"))):
        proc = run(*args)
        assert proc.returncode == 3 and "the artifact carries no seal" in proc.stderr


def test_reports_find_the_lock_beside_the_runs_or_are_told_it(study, tmp_path):
    lock, runs = study
    copy = Path(shutil.copytree(runs, tmp_path / "runs"))
    data = json.loads((copy / "evaluation.json").read_text())
    data["lock"]["path"] = str(tmp_path / "gone.lock.json")  # moved: found beside the runs folder instead
    data["seal_sha256"] = seal_hash({k: v for k, v in data.items() if k != "seal_sha256"})
    (copy / "evaluation.json").write_text(json.dumps(data))
    proc = run("reports", "show", str(copy / "evaluation.json"))
    assert proc.returncode == 0 and "could not be re-verified: no lock of plan" in proc.stderr
    shutil.copy(lock, tmp_path / "equal-work.lock.json")
    proc = run("reports", "show", str(copy / "evaluation.json"))
    assert proc.returncode == 0 and "re-verified: evaluating" in proc.stderr
    proc = run("reports", "show", str(copy / "evaluation.json"), "--lock", str(lock))
    assert proc.returncode == 0 and "re-verified: evaluating" in proc.stderr


@pytest.mark.subprocess(quick=True)
def test_gates_verify_bad_input_is_exit_2(study, tmp_path):
    lock, runs = study
    proc = run("gates", "verify", str(tmp_path / "none.json"), str(lock), str(runs))
    assert proc.returncode == 2
    proc = run("gates", "verify", str(runs / "evaluation.json"), str(lock), str(tmp_path))
    assert proc.returncode == 2 and "ledger.jsonl" in proc.stderr
