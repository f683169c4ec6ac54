"""Every output-writing command under the one output rule, through its console entry point (in process).

One smoke per command and protected kind: ``collect plan -o``, ``collect telemetry -o``, ``prereg
freeze -o``, ``gates evaluate`` (another study's lock on a runs folder), ``reports show --markdown``,
``reports html -o``, ``reports plot --out``. Each refusal is exit 2 naming the path, and leaves every
byte where it was.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from collect.api import import_table
from gates.artifact import write_evaluation
from prereg.api import freeze
from prereg_toolkit_cli.collect import main as collect_main
from prereg_toolkit_cli.gates import main as gates_main
from prereg_toolkit_cli.prereg import main as prereg_main
from prereg_toolkit_cli.reports import main as reports_main
from tests.conftest import REPO, shared_example_path
from tests.helpers import equal_work_rows, write_csv
from tests.helpers.evaluations import realistic_evaluation

LEDGER_LINE = b'{"record": "collect/run/v2", "run_id": "r1"}\n'
SMI_LOG = REPO / "examples" / "runs" / "byo-smi-logs" / "gpu-0-101-continue.nvidia-smi.csv"


@pytest.fixture
def runs(tmp_path: Path) -> Path:
    """A runs folder: a ledger, a recorded trace, the author's notes and a foreign image."""
    folder = tmp_path / "runs"
    (folder / "traces").mkdir(parents=True)
    (folder / "ledger.jsonl").write_bytes(LEDGER_LINE)
    (folder / "traces" / "run-1.telemetry.meta.json").write_text('{"format": "collect/trace/v2"}')
    (folder / "traces" / "run-1.telemetry.polls.csv.gz").write_bytes(b"\x1f\x8b recorded polls")
    (folder / "notes.txt").write_text("the author's notes\n")
    (folder / "forest.png").write_bytes(b"\x89PNG\r\n\x1a\n the author's own figure")
    return folder


def _snapshot(folder: Path) -> dict[Path, bytes | str]:
    """Every entry under ``folder``: a file's bytes, or what kind of entry it is."""
    out: dict[Path, bytes | str] = {}
    for path in sorted(folder.rglob("*")):
        mode = os.lstat(path).st_mode
        out[path] = path.read_bytes() if stat.S_ISREG(mode) else f"{stat.S_IFMT(mode):o}"
    return out


def _refused(code: int, capsys: pytest.CaptureFixture[str], target: Path) -> str:
    err = capsys.readouterr().err
    assert code == 2, err
    assert str(target) in err and "Traceback" not in err
    return err


def _lock(tmp_path: Path, title: str | None = None) -> Path:
    text = shared_example_path("equal-work.yaml").read_text()
    if title is not None:
        text = "\n".join(f"title: {title}" if line.startswith("title:") else line for line in text.splitlines()) + "\n"
    folder = tmp_path / ("study" if title is None else "other-study")
    folder.mkdir()
    (folder / "equal-work.yaml").write_text(text)
    return freeze(folder / "equal-work.yaml").path


def test_collect_plan_never_writes_over_a_ledger_lock_evaluation_fifo_or_device(
    tmp_path: Path, runs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lock = _lock(tmp_path)
    write_evaluation(runs / "evaluation.json", realistic_evaluation())
    os.mkfifo(tmp_path / "fifo")
    targets = [runs / "ledger.jsonl", lock, runs / "evaluation.json", runs / "notes.txt", tmp_path / "fifo"]
    try:
        os.mknod(tmp_path / "null", stat.S_IFCHR | 0o666, os.makedev(1, 3))  # a device node like /dev/null
        targets.append(tmp_path / "null")
    except OSError:  # no CAP_MKNOD here: the FIFO stands for the special files
        pass
    before = _snapshot(tmp_path)
    for target in targets:
        _refused(collect_main(["plan", str(lock), "-o", str(target), "--force"]), capsys, target)
    assert _snapshot(tmp_path) == before
    assert stat.S_ISFIFO(os.lstat(tmp_path / "fifo").st_mode) and stat.S_IMODE(os.lstat(lock).st_mode) == 0o444


def test_collect_telemetry_never_replaces_a_recorded_trace(runs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = _snapshot(runs)
    for output in (runs / "traces" / "run-1.telemetry", runs / "traces" / "run-1.telemetry.meta.json"):
        err = _refused(collect_main(["telemetry", str(SMI_LOG), "-o", str(output)]), capsys, runs / "traces")
        assert "never written over" in err
    assert _snapshot(runs) == before


def test_prereg_freeze_never_writes_its_lock_through_a_link(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plan = tmp_path / "equal-work.yaml"
    plan.write_bytes(shared_example_path("equal-work.yaml").read_bytes())
    link = tmp_path / "equal-work.lock.json"
    link.symlink_to(tmp_path / "elsewhere.json")
    _refused(prereg_main(["freeze", str(plan), "-o", str(link)]), capsys, link)
    assert link.is_symlink() and not (tmp_path / "elsewhere.json").exists()


def test_gates_evaluate_with_another_studys_lock_leaves_the_runs_folders_evaluation(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lock = _lock(tmp_path)
    runs = tmp_path / "runs"
    import_table(lock, write_csv(tmp_path / "runs.csv", equal_work_rows()), runs)
    assert gates_main(["evaluate", str(lock), str(runs), "--json"]) in (0, 1)
    capsys.readouterr()
    theirs = (runs / "evaluation.json").read_bytes()
    other = _lock(tmp_path, "Another study of the same runs")
    err = _refused(gates_main(["evaluate", str(other), str(runs), "--force"]), capsys, runs / "evaluation.json")
    assert "another study" in err
    assert (runs / "evaluation.json").read_bytes() == theirs
    assert gates_main(["evaluate", str(lock), str(runs), "--json"]) in (0, 1)  # the same study replaces it


@pytest.fixture
def artifact(tmp_path: Path) -> Path:
    path = tmp_path / "eval" / "evaluation.json"
    path.parent.mkdir()
    write_evaluation(path, realistic_evaluation())
    return path


def test_reports_never_write_over_a_foreign_file_in_a_runs_folder_even_with_force(
    artifact: Path, runs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = _snapshot(runs)
    notes = runs / "notes.txt"
    _refused(reports_main(["show", str(artifact), "--markdown", str(notes), "--force"]), capsys, notes)
    _refused(reports_main(["html", str(artifact), "-o", str(notes), "--force"]), capsys, notes)
    assert _snapshot(runs) == before


@pytest.mark.slow  # matplotlib draws the forest plot: ~3 s
def test_reports_plot_replaces_its_own_plots_never_a_foreign_image_in_a_runs_folder(
    artifact: Path, runs: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    before = _snapshot(runs)
    _refused(reports_main(["plot", str(artifact), "--out", str(runs), "--format", "png"]), capsys, runs / "forest.png")
    assert _snapshot(runs) == before
    assert reports_main(["plot", str(artifact), "--out", str(runs / "plots"), "--format", "png"]) == 0
    assert reports_main(["plot", str(artifact), "--out", str(runs / "plots"), "--format", "png"]) == 0  # its own plot
