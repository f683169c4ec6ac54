"""`reports plot`: forest plot, recovery timeline, NLL trajectories, their text equivalents and errors."""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from collect.ledger.store import RunRecord, append_records
from gates.artifact import write_evaluation
from prereg_toolkit_cli.reports import main
from tests.conftest import OWN_EXAMPLES
from tests.helpers import requires, run
from tests.helpers.evaluations import realistic_evaluation

PLAIN = {"NO_COLOR": "1", "COLUMNS": "80"}
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
SHA = "ab" * 32
RECOVERY_KINDS = ("failure", "preemption", "restore", "replay", "rejoin")

pytestmark = requires("matplotlib")


def assert_png(path: Path) -> None:
    assert path.is_file() and path.read_bytes()[:8] == PNG_MAGIC, path


def assert_svg(path: Path) -> None:
    root = ET.parse(path).getroot()
    assert root.tag.rsplit("}", 1)[-1] == "svg", path


def no_temporary_files(folder: Path) -> bool:
    return not [p for p in folder.iterdir() if p.name.startswith(".")]


def event(i: int, kind: str, site: int | None, start_s: float, end_s: float) -> dict:
    return {
        "id": i,
        "kind": kind,
        "site": site,
        "start_ns": int(start_s * 1e9),
        "end_ns": int(end_s * 1e9),
        "work": 0,
        "steps": None,
        "checkpoint": None,
        "parent": None,
        "bytes": {},
        "aborted": False,
    }


@pytest.fixture
def torch_like_runs(tmp_path: Path) -> Path:
    """A runs folder like the torch collector leaves: two arms of one stratum, events and trajectory each."""
    runs = tmp_path / "runs"
    (runs / "traces").mkdir(parents=True)
    plans = {
        "restart": [
            ("compute", 0, 0, 2),
            ("compute", 1, 0, 2),
            ("checkpoint", 0, 2, 2.2),
            ("failure", 1, 2.5, 4),
            ("preemption", 0, 2.5, 2.5),
            ("restore", 0, 2.5, 2.8),
            ("replay", 0, 2.8, 3.1),
            ("restore", 1, 4, 4.3),
            ("compute", 0, 3.1, 6),
            ("compute", 1, 4.3, 6),
            ("collective", None, 6, 6.1),
        ],
        "continue": [
            ("compute", 0, 0, 2),
            ("compute", 1, 0, 2),
            ("checkpoint", 0, 2, 2.2),
            ("failure", 1, 2.5, 4),
            ("compute", 0, 2.2, 5),
            ("state_transfer", 1, 4, 4.2),
            ("rejoin", 1, 4, 4.2),
            ("compute", 1, 4.2, 5),
        ],
    }
    records = []
    for n, (arm, plan) in enumerate(plans.items()):
        run_id = f"run-{arm}"
        lines = [json.dumps(event(i, *e)) for i, e in enumerate(plan)]
        (runs / "traces" / f"{run_id}.events.jsonl").write_text("\n".join(lines) + "\n")
        rows = ["tick,useful_steps,heldout_nll"] + [
            f"{t},{t * 2},{3.0 - 0.01 * t - 0.05 * n:.4f}" for t in range(0, 60 + 10 * n, 5)
        ]
        (runs / "traces" / f"{run_id}.trajectory.csv").write_text("\n".join(rows) + "\n")
        records.append(
            RunRecord(
                run_id=run_id,
                prereg_sha256=SHA,
                stratum={"outage_site": 1, "seed": 3},
                arm=arm,
                replicate=0,
                status="complete",
                metrics={"final_nll": 2.4},
                traces=[f"traces/{run_id}.events.jsonl", f"traces/{run_id}.trajectory.csv"],
            )
        )
    records.append(
        RunRecord(  # another stratum: must not appear
            run_id="run-other",
            prereg_sha256=SHA,
            stratum={"outage_site": 2, "seed": 3},
            arm="restart",
            replicate=0,
            status="complete",
            metrics={},
        )
    )
    append_records(runs, records)
    return runs


@pytest.fixture
def artifact(tmp_path: Path) -> Path:
    path = tmp_path / "eval" / "evaluation.json"
    path.parent.mkdir()
    write_evaluation(path, realistic_evaluation())
    return path


def test_forest_plot_written_with_the_gates_table(artifact, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    out = tmp_path / "plots"
    assert main(["plot", str(artifact), "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert_png(out / "forest.png")
    assert_svg(out / "forest.svg")
    assert no_temporary_files(out)
    assert "the gates table that `reports show` prints" in text
    for gate in realistic_evaluation().gates:
        assert gate.id in text
    for word in ("PASS", "FAIL", "REFUSED", "UNRESOLVABLE", "VACUOUS"):
        assert word in text
    assert main(["plot", str(artifact), "--format", "svg"]) == 0  # default: beside the evaluation
    assert (artifact.parent / "forest.svg").is_file() and not (artifact.parent / "forest.png").exists()


def test_timeline_and_nll_of_a_torch_like_block(torch_like_runs, capsys):
    assert main(["plot", str(torch_like_runs), "--run", "run-restart", "--format", "both"]) == 0
    text = capsys.readouterr().out
    for stem in ("timeline-run-restart", "nll-run-restart"):
        assert_png(torch_like_runs / f"{stem}.png")
        assert_svg(torch_like_runs / f"{stem}.svg")
        assert str(torch_like_runs / f"{stem}.png") in text
    assert no_temporary_files(torch_like_runs)
    timeline = text.split("Text equivalent of the recovery timeline:")[1].split("Text equivalent of the held")[0]
    for kind in (
        "compute",
        "checkpoint",
        "collective",
        "failure",
        "preemption",
        "restore",
        "replay",
        "state_transfer",
        "rejoin",
    ):
        assert f"  {kind} " in timeline, kind
    assert "continue: run run-continue" in timeline and "restart: run run-restart (the run asked for)" in timeline
    assert "run-other" not in text
    assert "2.500-4.000 site 1" in timeline  # times in seconds
    nll = text.split("Text equivalent of the held-out NLL")[1]
    header = next(line for line in nll.splitlines() if line.lstrip().startswith("tick"))
    assert header.split() == ["tick", "continue", "restart"]
    assert "final restart: tick 55, NLL 2.4500" in nll and "final continue: tick 65, NLL 2.3000" in nll
    rows = [line for line in nll.splitlines() if line[:1].isspace() or line[:1].isdigit()]
    assert 2 <= len(rows) <= 14


def test_timeline_without_trajectories_says_so(torch_like_runs, capsys):
    for p in (torch_like_runs / "traces").glob("*.trajectory.csv"):
        p.unlink()
    ledger = torch_like_runs / "ledger.jsonl"
    records = [json.loads(line) for line in ledger.read_text().splitlines()]
    for rec in records:  # records written without a trajectory trace
        rec["traces"] = [t for t in rec.get("traces", []) if not t.endswith(".trajectory.csv")]
        rec["trace_sha256"] = {t: h for t, h in rec.get("trace_sha256", {}).items() if t in rec["traces"]}
    ledger.write_text("".join(json.dumps(rec) + "\n" for rec in records))
    out = torch_like_runs / "new" / "plots"
    assert main(["plot", str(torch_like_runs), "--run", "run-continue", "--out", str(out), "--format", "png"]) == 0
    text = capsys.readouterr().out
    assert sorted(p.name for p in out.iterdir()) == ["timeline-run-continue.png"]
    assert "no NLL plot" in text


@pytest.mark.parametrize("args, words", [(["--run", "run-nope"], "run run-nope: not in"), ([], "needs --run ID")])
def test_bad_run_requests_exit_2(torch_like_runs, capsys, args, words):
    assert main(["plot", str(torch_like_runs), *args]) == 2
    err = capsys.readouterr().err
    assert words in err and len(err.strip().splitlines()) == 1


def test_edited_traces_exit_3_naming_the_file(torch_like_runs, capsys):
    trace = torch_like_runs / "traces" / "run-continue.events.jsonl"
    good = trace.read_text()
    trace.write_text(good + '{"kind": "failure", "start_ns": "soon"}\n')
    assert main(["plot", str(torch_like_runs), "--run", "run-restart"]) == 3
    err = capsys.readouterr().err
    assert "run-continue.events.jsonl changed after the run" in err and len(err.strip().splitlines()) == 1
    trace.write_text(good)
    trajectory = torch_like_runs / "traces" / "run-restart.trajectory.csv"
    trajectory.write_text(trajectory.read_text().replace("2.9", "1.9"))
    assert main(["plot", str(torch_like_runs), "--run", "run-restart"]) == 3
    assert "run-restart.trajectory.csv changed after the run" in capsys.readouterr().err


def test_malformed_inputs_exit_2(torch_like_runs, artifact, tmp_path, capsys):
    from collect.traces.events import read_events
    from collect.traces.trajectory import read_trajectory
    from prereg.errors import InputError

    trace = torch_like_runs / "traces" / "run-continue.events.jsonl"
    good = trace.read_text()
    with pytest.raises(InputError, match="line 9: malformed event"):  # as recorded: malformed, not edited
        read_events(trace, (good + '{"kind": "failure", "start_ns": "soon"}\n').encode())
    with pytest.raises(InputError, match="missing column tick, heldout_nll"):
        read_trajectory(trace, b"step,loss\n1,2\n")
    trace.unlink()
    assert main(["plot", str(torch_like_runs), "--run", "run-restart"]) == 2
    assert "no such file (listed in the ledger for run run-continue)" in capsys.readouterr().err
    trace.write_text(good)
    assert main(["plot", str(tmp_path), "--run", "x"]) == 2
    assert "not a runs folder (no ledger.jsonl)" in capsys.readouterr().err
    assert main(["plot", str(tmp_path / "missing.json")]) == 2
    assert "no such file or folder" in capsys.readouterr().err
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    assert main(["plot", str(bad)]) == 2
    assert "not an evaluation artifact" in capsys.readouterr().err
    assert main(["plot", str(artifact), "--run", "x"]) == 2
    assert "--run needs a runs folder" in capsys.readouterr().err


def test_missing_matplotlib_exits_2_with_the_install_hint(artifact, torch_like_runs, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` now raises ImportError
    for argv in (["plot", str(artifact)], ["plot", str(torch_like_runs), "--run", "run-restart"]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert "pip install 'prereg-toolkit[plot]'" in err and len(err.strip().splitlines()) == 1
    assert not (artifact.parent / "forest.png").exists()


@pytest.mark.subprocess
def test_plot_help_imports_no_matplotlib():
    code = (
        "import sys, contextlib, io\nfrom prereg_toolkit_cli.reports import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    try:\n        main(['plot', '--help'])\n    except SystemExit:\n        pass\n"
        "print('matplotlib' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.fixture(scope="module")
def multisite_runs(tmp_path_factory) -> Path:
    """A real multi-site run folder made by the console scripts (freeze, collect, evaluate)."""
    root = tmp_path_factory.mktemp("multisite")
    lock = root / "ms.lock.json"
    for args in (
        ("prereg", "freeze", str(OWN_EXAMPLES / "multisite-recovery.yaml"), "-o", str(lock)),
        ("collect", "run", str(lock), "--out", str(root / "runs"), "--jobs", "2"),
        ("gates", "evaluate", str(lock), str(root / "runs")),
    ):
        proc = run(*args, env=PLAIN)
        assert proc.returncode == 0, proc.stderr
    return root / "runs"


@pytest.mark.subprocess
def test_end_to_end_on_a_multisite_run_folder(multisite_runs, tmp_path):
    proc = run("reports", "plot", str(multisite_runs / "evaluation.json"), "--out", str(tmp_path), env=PLAIN)
    assert proc.returncode == 0, proc.stderr
    assert_png(tmp_path / "forest.png")
    assert_svg(tmp_path / "forest.svg")
    evaluation = json.loads((multisite_runs / "evaluation.json").read_text())
    for gate in evaluation["gates"]:
        assert gate["id"] in proc.stdout
    records = [json.loads(line) for line in (multisite_runs / "ledger.jsonl").read_text().splitlines()]
    target = next(r for r in records if r["arm"] == "restart" and r["stratum"]["outage_site"] != "none")
    block = [r for r in records if r["stratum"] == target["stratum"] and r["replicate"] == target["replicate"]]
    proc = run("reports", "plot", str(multisite_runs), "--run", target["run_id"], "--out", str(tmp_path), env=PLAIN)
    assert proc.returncode == 0, proc.stderr
    assert_png(tmp_path / f"timeline-{target['run_id']}.png")
    assert_svg(tmp_path / f"timeline-{target['run_id']}.svg")
    assert "no NLL plot" in proc.stdout
    for r in block:
        assert f"{r['arm']}: run {r['run_id']}" in proc.stdout
    kinds = {json.loads(line)["kind"] for r in block for line in (multisite_runs / r["traces"][0]).open()}
    assert {"failure", "restore", "replay", "rejoin", "preemption"} <= kinds
    for kind in kinds:
        assert f"  {kind} " in proc.stdout, kind
    proc = run("reports", "plot", str(multisite_runs), "--run", "run-0000", env=PLAIN)
    assert proc.returncode == 2 and "run run-0000: not in" in proc.stderr
