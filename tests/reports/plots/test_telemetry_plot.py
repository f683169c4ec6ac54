"""`reports plot RUNS --run ID --telemetry`: a run's kept telemetry trace, its text equivalent and refusals.

The real case is a runs folder made by the console scripts from a small copy of the torch demo plan
(``fixtures/equal-work-torch-small.yaml``: 4 runs, a few seconds each on a CPU, simulated sensor on a
virtual clock); the edge cases (a power gauge, nested phases, failed readings, a counter reset, a
trace long enough to decimate) use traces written with ``collect.traces.telemetry.write_trace`` and
records appended with ``collect.ledger.store.append_records``, so the hashes are the ledger's own.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from collect.ledger.store import RunRecord, append_records, hash_trace, read_ledger
from collect.telemetry.analysis.phases import phase_energy_total
from collect.telemetry.analysis.resolution import update_period, value_changes
from collect.telemetry.sensors.base import SignalInfo
from collect.traces.telemetry import Phase, Trace, write_trace
from prereg_toolkit_cli.reports import main
from reports.data import telemetry as telemetry_view
from reports.data.telemetry import drawn, energy_scale, envelope, load_telemetry
from reports.plots.telemetry import telemetry_figure
from tests.helpers import frozen_shared, imported_equal_work, requires, run

pytestmark = requires("matplotlib")

HERE = Path(__file__).resolve().parent
PLAIN = {"NO_COLOR": "1", "COLUMNS": "80"}
SHA = "cd" * 32
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def assert_png(path: Path) -> None:
    assert path.is_file() and path.read_bytes()[:8] == PNG_MAGIC, path


def assert_svg(path: Path) -> None:
    assert ET.parse(path).getroot().tag.rsplit("}", 1)[-1] == "svg", path


def one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


@pytest.fixture
def torch_runs(small_torch_runs) -> Path:
    """The real torch.multisite runs folder (freeze + collect run of the small plan: tests/reports/conftest.py),
    made once per session and shared read-only."""
    return small_torch_runs[1]


@pytest.fixture
def runs_copy(torch_runs, tmp_path) -> Path:
    """A copy of the real runs folder that a test may tamper with."""
    return Path(shutil.copytree(torch_runs, tmp_path / "runs"))


def restart_record(runs: Path) -> RunRecord:
    """The restart-policy run of the stratum whose outage hit a site that restores (has restore and replay)."""
    records = read_ledger(runs).records
    return next(
        r
        for r in records
        if r.metric("restores")
        and r.telemetry["energy_counter"].phases
        and r.telemetry["energy_counter"].phases["replay"].intervals
    )


def phase_line(text: str, phase: str) -> str:
    return next(line for line in text.splitlines() if re.match(rf"  {phase} +\d+ interval", line))


# --- synthetic traces ---------------------------------------------------------------------------


def synthetic_trace(polls: int, counter: bool, failed: tuple[int, ...] = (), reset_at: int | None = None) -> Trace:
    """Polls every 10 ms (each read takes 20 us); the value changes every 100 ms.

    A counter (mJ) climbs 30 J per update (300 W), a gauge (W) steps through 200/250/300 W.
    Phases: idle for the first second, then compute to the end with a checkpoint nested inside it.
    """
    signal = "energy_counter" if counter else "power_average"
    poll_ns = np.arange(polls, dtype=np.int64) * 10_000_000
    step = poll_ns // 100_000_000
    value = (step * 30_000.0) if counter else (200.0 + 50.0 * (step % 3))
    if reset_at is not None:
        value = np.where(np.arange(polls) >= reset_at, value - value[reset_at] + 5.0, value)
    status = np.array(["ok"] * polls, dtype=object)
    for i in failed:
        status[i], value[i] = "error", np.nan
    end = int(poll_ns[-1])
    info = SignalInfo(
        signal, "mJ" if counter else "W", "counter" if counter else "gauge", "modeled", None if counter else 25.0
    )
    return Trace(
        signal=np.array([signal] * polls, dtype=object),
        t_before_ns=poll_ns.copy(),
        t_after_ns=poll_ns + 20_000,
        value=value.astype(np.float64),
        status=status,
        driver_ts_us=np.full(polls, np.nan),
        signals={signal: info},
        requested_poll_ms=10.0,
        poll_ns=poll_ns,
        phases=[
            Phase("idle", 0, 1_000_000_000, 0),
            Phase("compute", 1_000_000_000, end, 0),
            Phase("checkpoint", 2_000_000_000, 2_600_000_000, 1),
        ],
        sensor="sim:synthetic",
        evidence="modeled",
        power_range_w=(50.0, 400.0),
    )


def synthetic_runs(folder: Path, trace: Trace, run_id: str = "run-syn", **record: object) -> Path:
    """A runs folder holding one record whose telemetry trace is ``trace`` (hashed by the appender)."""
    written = write_trace(trace, folder / "traces" / f"{run_id}.telemetry")
    signal = next(iter(trace.signals))
    append_records(
        folder,
        [
            RunRecord(
                **{
                    "run_id": run_id,
                    "prereg_sha256": SHA,
                    "stratum": {"outage_site": 0},
                    "arm": "fixed",
                    "replicate": 0,
                    "status": "complete",
                    "metrics": {"energy": 1.0},
                    "telemetry": {signal: {"updates": 1}},
                    "traces": [f"traces/{p.name}" for p in written],
                    **record,
                }
            )
        ],
    )
    return folder


# --- the real runs folder -----------------------------------------------------------------------


@pytest.mark.subprocess
def test_real_run_plot_and_text_match_the_ledger(torch_runs, tmp_path, capsys):
    record = restart_record(torch_runs)
    out = tmp_path / "plots"
    assert main(["plot", str(torch_runs), "--run", record.run_id, "--telemetry", "--out", str(out)]) == 0
    captured = capsys.readouterr()
    text = captured.out
    assert captured.err == ""
    stem = f"telemetry-{record.run_id}"
    assert_png(out / f"{stem}.png")
    assert_svg(out / f"{stem}.svg")
    assert sorted(p.name for p in out.iterdir()) == [f"{stem}.png", f"{stem}.svg"]  # no temporary files left
    assert str(out / f"{stem}.png") in text and "Text equivalent of the telemetry trace:" in text
    summary = record.telemetry["energy_counter"]
    assert f"effective update period {summary.effective_period_ms:.4g} ms" in text
    assert "evidence modeled: a simulated sensor, not a measurement" in text
    assert f"traces/{record.run_id}.telemetry.meta.json" in text and "SHA-256 as recorded in the ledger" in text
    assert summary.phases is not None
    for phase, support in summary.phases.items():  # the ledger's per-phase support and energy, as printed
        if not support.intervals:
            continue
        line = phase_line(text, phase)
        plural = "s" if support.intervals != 1 else ""
        assert (
            f" {support.intervals} interval{plural}, {support.duration_ms / 1e3:.3f} s, {support.updates} update"
            in line
        ), line
        if phase != "idle":
            assert f"energy {record.metric(f'energy_{phase}'):.6g} J in [" in line, line
    assert "no interval of: stall" in text
    energy = record.metric("energy")
    assert energy is not None and "the ledger's `energy`" in text and f"{energy:.6g} J +/-" in text
    assert "every one of the" in text and "decimated" not in text


@pytest.mark.subprocess
def test_real_run_figure_draws_every_update_and_phase(torch_runs):
    record = restart_record(torch_runs)
    view = load_telemetry(torch_runs, record.run_id)
    updates = value_changes(view.trace, "energy_counter")
    assert view.updates.lo_ns.size == updates.lo_ns.size > 20
    assert view.period == update_period(view.trace, "energy_counter")
    shown = drawn(view)
    assert shown.update_x.size == updates.lo_ns.size and not shown.decimated
    np.testing.assert_allclose(shown.update_x, ((updates.lo_ns + updates.hi_ns) / 2 - view.t0_ns) / 1e9)
    assert shown.poll_x.min() >= 0 and shown.power is not None  # a counter: the power panel too
    fig = telemetry_figure(view, shown)
    top, bottom = fig.axes
    marker = next(line for line in top.get_lines() if line.get_label() == "update")
    assert len(marker.get_xdata()) == updates.lo_ns.size
    legend = [t.get_text() for t in bottom.get_legend().get_texts()]
    assert any(t.startswith("restore (1x") for t in legend) and any(t.startswith("replay (") for t in legend)
    assert "time since the first poll (s)" == bottom.get_xlabel() and "(J)" in top.get_ylabel()
    assert "(W)" in bottom.get_ylabel()
    hatches = {c.get_hatch() for c in top.collections}
    assert {"..", "////", "xxxx", "\\\\\\\\"} <= hatches  # phases differ by hatch, not colour alone


@pytest.mark.subprocess
def test_console_script_end_to_end(torch_runs, tmp_path):
    record = restart_record(torch_runs)
    proc = run(
        "reports",
        "plot",
        str(torch_runs),
        "--run",
        record.run_id,
        "--telemetry",
        "--out",
        str(tmp_path),
        "--format",
        "png",
        env=PLAIN,
    )
    assert proc.returncode == 0, proc.stderr
    assert_png(tmp_path / f"telemetry-{record.run_id}.png")
    assert "Per phase (collect.telemetry.analysis.phases)" in proc.stdout
    proc = run("reports", "plot", str(torch_runs), "--run", "run-nope", "--telemetry", env=PLAIN)
    assert proc.returncode == 2 and "run run-nope: not in" in one_line(proc.stderr)


# --- refusals ----------------------------------------------------------------------------------


@pytest.mark.subprocess
def test_changed_trace_is_refused_with_exit_3_naming_the_file(runs_copy, capsys):
    record = restart_record(runs_copy)
    polls = next(t for t in record.traces if ".telemetry.polls." in t)
    path = runs_copy / polls
    path.write_bytes(path.read_bytes() + b"\0")
    assert main(["plot", str(runs_copy), "--run", record.run_id, "--telemetry"]) == 3
    captured = capsys.readouterr()
    err = one_line(captured.err)
    assert str(path) in err and "changed after the run (SHA-256 differs)" in err and "refusing to draw" in err
    assert captured.out == "" and not list(runs_copy.glob("telemetry-*"))


@pytest.mark.subprocess
def test_missing_or_linked_trace_is_refused_with_exit_3(runs_copy, capsys):
    record = restart_record(runs_copy)
    meta = runs_copy / f"traces/{record.run_id}.telemetry.meta.json"
    good = meta.read_bytes()
    meta.unlink()
    assert main(["plot", str(runs_copy), "--run", record.run_id, "--telemetry"]) == 3
    err = one_line(capsys.readouterr().err)
    assert str(meta) in err and "cannot be checked" in err
    elsewhere = runs_copy.parent / "elsewhere.meta.json"
    elsewhere.write_bytes(good)  # the same bytes, but through a link: never followed
    meta.symlink_to(elsewhere)
    assert main(["plot", str(runs_copy), "--run", record.run_id, "--telemetry"]) == 3
    assert "cannot be checked" in one_line(capsys.readouterr().err)


def test_trace_outside_the_traces_folder_is_refused(tmp_path, capsys):
    runs = tmp_path / "runs"
    outside = tmp_path / "x.telemetry.meta.json"
    outside.write_text("{}")
    name, polls = "traces/../../x.telemetry.meta.json", "traces/../../x.telemetry.polls.csv.gz"
    append_records(
        runs,
        [
            RunRecord(
                run_id="run-out",
                prereg_sha256=SHA,
                stratum={},
                arm="a",
                replicate=0,
                status="complete",
                metrics={},
                traces=[name, polls],
                trace_sha256={name: SHA, polls: SHA},
            )
        ],
    )
    assert main(["plot", str(runs), "--run", "run-out", "--telemetry"]) == 3
    err = one_line(capsys.readouterr().err)
    assert "cannot be checked" in err and "outside" in err


def test_record_without_a_polls_file_is_refused(tmp_path, capsys):
    runs = synthetic_runs(tmp_path / "runs", synthetic_trace(50, counter=True))
    record = read_ledger(runs).records[0]
    meta = next(t for t in record.traces if t.endswith(".meta.json"))
    append_records(
        runs,
        [
            record.model_copy(
                update={
                    "run_id": "run-meta-only",
                    "traces": [meta],
                    "trace_sha256": {meta: hash_trace(runs, meta)},
                    "prev_sha256": None,
                    "record_sha256": None,
                }
            )
        ],
    )
    assert main(["plot", str(runs), "--run", "run-meta-only", "--telemetry"]) == 3
    assert "lists no polls file" in one_line(capsys.readouterr().err)


@pytest.mark.subprocess
def test_runs_without_a_kept_trace_exit_2(tmp_path, capsys):
    runs = imported_equal_work(tmp_path, frozen_shared(tmp_path))
    run_id = read_ledger(runs).records[0].run_id
    assert main(["plot", str(runs), "--run", run_id, "--telemetry"]) == 2
    err = one_line(capsys.readouterr().err)
    assert f"run {run_id}: no kept telemetry trace (it came from import:" in err
    assert "an imported run keeps the numbers of its table, no trace" in err
    sim = tmp_path / "sim"  # a simulator run: an event trace, no telemetry; a stray unlisted file is not drawn
    (sim / "traces").mkdir(parents=True)
    (sim / "traces" / "run-sim.events.jsonl").write_text("")
    (sim / "traces" / "run-sim.telemetry.meta.json").write_text("{}")
    append_records(
        sim,
        [
            RunRecord(
                run_id="run-sim",
                prereg_sha256=SHA,
                stratum={},
                arm="a",
                replicate=0,
                status="complete",
                metrics={},
                traces=["traces/run-sim.events.jsonl"],
            )
        ],
    )
    assert main(["plot", str(sim), "--run", "run-sim", "--telemetry"]) == 2
    err = one_line(capsys.readouterr().err)
    assert "no kept telemetry trace" in err and "exists but the record does not list it" in err


@pytest.mark.parametrize(
    "args, words", [(["--run", "run-nope", "--telemetry"], "run run-nope: not in"), (["--telemetry"], "needs --run ID")]
)
def test_bad_requests_exit_2(tmp_path, capsys, args, words):
    runs = synthetic_runs(tmp_path / "runs", synthetic_trace(50, counter=True))
    assert main(["plot", str(runs), *args]) == 2
    assert words in one_line(capsys.readouterr().err)


def test_telemetry_needs_a_runs_folder(tmp_path, capsys):
    artifact = tmp_path / "evaluation.json"
    artifact.write_text("{}")
    assert main(["plot", str(artifact), "--telemetry"]) == 2
    assert "--telemetry needs a runs folder and --run ID" in one_line(capsys.readouterr().err)


@pytest.mark.subprocess
def test_other_changed_traces_are_reported_not_refused(runs_copy, tmp_path, capsys):
    record = restart_record(runs_copy)
    events = runs_copy / f"traces/{record.run_id}.events.jsonl"
    events.write_text(events.read_text() + "\n")
    assert (
        main(
            [
                "plot",
                str(runs_copy),
                "--run",
                record.run_id,
                "--telemetry",
                "--out",
                str(tmp_path / "p"),
                "--format",
                "png",
            ]
        )
        == 0
    )
    captured = capsys.readouterr()
    warning = one_line(captured.err)
    assert f"traces/{record.run_id}.events.jsonl changed after the run" in warning and "reports: warning" in warning
    assert f"WARNING: trace traces/{record.run_id}.events.jsonl changed after the run" in captured.out


def test_without_matplotlib_the_text_is_printed_and_exit_2(tmp_path, capsys, monkeypatch):
    runs = synthetic_runs(tmp_path / "runs", synthetic_trace(300, counter=True))
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` now raises ImportError
    assert main(["plot", str(runs), "--run", "run-syn", "--telemetry"]) == 2
    captured = capsys.readouterr()
    assert "pip install 'prereg-toolkit[plot]'" in one_line(captured.err)
    assert "no figure: matplotlib is not installed" in captured.out and "Per phase" in captured.out
    assert not list(runs.glob("telemetry-*"))


@pytest.mark.subprocess
def test_importing_the_module_loads_no_matplotlib_numpy_or_ledger():
    code = (
        "import sys\nimport reports.plots.telemetry, reports.plots.command\n"
        "print(sorted(m for m in ('matplotlib', 'numpy', 'pydantic', 'collect.ledger.store') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# --- synthetic edge cases -----------------------------------------------------------------------


def test_power_gauge_with_nested_phases_and_failed_readings(tmp_path, capsys):
    trace = synthetic_trace(400, counter=False, failed=(37, 38, 250))
    runs = synthetic_runs(tmp_path / "runs", trace)
    assert main(["plot", str(runs), "--run", "run-syn", "--telemetry", "--format", "png"]) == 0
    text = capsys.readouterr().out
    assert "signal power_average (power gauge, W, averaging window 25 ms)" in text
    assert "3 readings not ok (error 3)" in text
    assert "no interval of: replay, restore, stall" in text
    view = load_telemetry(runs, "run-syn")
    for phase in ("idle", "compute", "checkpoint"):
        pe = phase_energy_total(view.trace, "power_average", phase, 50.0, 400.0)
        e = pe.energy
        assert f"energy {e.estimate_j:.6g} J in [{e.lower_j:.6g}, {e.upper_j:.6g}] J (power)" in phase_line(text, phase)
    assert "intervals: 2.000-2.600" in text  # the nested checkpoint
    fig = telemetry_figure(view)
    assert len(fig.axes) == 1 and fig.axes[0].get_ylabel() == "power_average (W)"
    assert_png(runs / "telemetry-run-syn.png")


def test_long_trace_decimates_the_poll_line_never_the_updates(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(telemetry_view, "MAX_POLL_POINTS", 400)
    trace = synthetic_trace(6000, counter=True, reset_at=3005)
    runs = synthetic_runs(tmp_path / "runs", trace)
    assert main(["plot", str(runs), "--run", "run-syn", "--telemetry", "--format", "png"]) == 0
    text = capsys.readouterr().out
    view = load_telemetry(runs, "run-syn")
    shown = drawn(view)
    updates = value_changes(view.trace, "energy_counter")
    assert shown.decimated and shown.poll_x.size <= 402 and shown.polls == 6000
    assert shown.update_x.size == updates.lo_ns.size == 600  # 599 steps of 100 ms, and the reset
    assert f"6000 readings drawn as {shown.poll_x.size} points" in text
    assert f"every one of the {updates.lo_ns.size} update markers is drawn" in text
    assert "counter decreased (reset) between 30.040 and 30.050 s" in text
    top = telemetry_figure(view, shown).axes[0]
    marker = next(line for line in top.get_lines() if line.get_label() == "update")
    assert len(marker.get_xdata()) == updates.lo_ns.size
    assert top.get_ylabel().startswith("energy since the first poll (J)")  # 9 kJ at most before and after the reset
    steady = synthetic_runs(tmp_path / "steady", synthetic_trace(6000, counter=True))
    assert energy_scale(load_telemetry(steady, "run-syn")) == (1e3, "kJ")  # 18 kJ without the reset
    assert np.isnan(shown.power).sum() == 2  # no power beside the reset (the drop, and the rise after it)


def test_envelope_keeps_the_extremes_and_the_ends():
    rng = np.random.default_rng(3)
    values = rng.normal(size=10_001)
    values[4321], values[777] = 50.0, -50.0
    keep = envelope(values.size, values, 300)
    assert keep.size <= 302 and keep[0] == 0 and keep[-1] == values.size - 1
    assert 4321 in keep and 777 in keep and bool(np.all(np.diff(keep) > 0))
    assert envelope(5, values[:5], 300).tolist() == [0, 1, 2, 3, 4]


@pytest.mark.subprocess
def test_record_hash_chain_is_untouched_by_plotting(runs_copy, tmp_path):
    before = (runs_copy / "ledger.jsonl").read_bytes()
    record = restart_record(runs_copy)
    assert main(["plot", str(runs_copy), "--run", record.run_id, "--telemetry", "--format", "svg"]) == 0
    assert (runs_copy / "ledger.jsonl").read_bytes() == before
    assert json.loads(before.splitlines()[0])["trace_sha256"]
