"""Power logs other tools wrote, converted to traces: the energy bounds hold the known integral.

Every log comes from collect/telemetry/logs/synthetic.py: a known power curve written as nvidia-smi,
dcgmi dmon, Zeus and CodeCarbon write it (headers, units in cells, N/A gaps, a stuck counter).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from collect.telemetry.analysis.bounds import energy_from_counter, energy_from_power
from collect.telemetry.analysis.resolution import update_period
from collect.telemetry.logs.common import LOG_PHASE, LogError, LogOptions
from collect.telemetry.logs.formats import FORMATS, convert_log, recognise
from collect.telemetry.logs.synthetic import START, WARM_S, codecarbon_log, dcgm_log, energy, nvidia_smi_log, zeus_log
from collect.telemetry.recording.probe import recorded_summaries
from collect.traces.telemetry import read_trace
from tests.helpers import run

EPOCH_NS = int(START.timestamp() * 1e9)


def _truth(a_ns: int, b_ns: int, origin_ns: int = EPOCH_NS) -> float:
    return energy(WARM_S + (a_ns - origin_ns) / 1e9, WARM_S + (b_ns - origin_ns) / 1e9)


def _span(trace) -> tuple[int, int]:
    mark = trace.phase(LOG_PHASE)
    return mark.start_ns, mark.end_ns


@pytest.mark.parametrize("units_in_cells", [True, False])
def test_nvidia_smi_units_na_and_the_averaging_window(units_in_cells: bool) -> None:
    trace = FORMATS["nvidia-smi"](nvidia_smi_log(60, units_in_cells=units_in_cells), "g.csv", LogOptions())
    assert trace.sensor == "log:nvidia-smi" and trace.evidence == "measured"
    assert trace.signals["power_average"].window_ms == 1000.0  # power.draw: the driver's 1 s average
    assert trace.signals["power_instant"].window_ms == 0.0
    assert trace.signals["memory_used"].unit == "MiB"
    instant = trace.rows("power_instant", ok_only=False)
    missing = np.isnan(instant["value"])
    assert missing.sum() == 1  # the [N/A] cell: no value, never 0
    assert set(trace.status[(trace.signal == "power_instant")][missing]) == {"not_supported"}
    assert not np.any(trace.value == 0.0)
    period = update_period(trace, "power_average").effective_period_ms
    assert period == pytest.approx(100, rel=0.05)
    a, b = _span(trace)
    truth = _truth(a, b)
    for signal in ("power_average", "power_instant"):
        e = energy_from_power(trace, a, b, 0.0, 2000.0, signal)
        assert e.lower_j <= truth <= e.upper_j
    averaged = energy_from_power(trace, a, b, 0.0, 2000.0, "power_average")
    instant_only = energy_from_power(trace, a, b, 0.0, 2000.0, "power_instant")
    assert averaged.upper_j < instant_only.upper_j  # the window bounds energy; an instant sample does not
    assert abs(averaged.estimate_j - truth) / truth < 0.01


def test_nvidia_smi_multi_gpu_needs_a_choice() -> None:
    text = nvidia_smi_log(5, gpus=(0, 1))
    with pytest.raises(LogError, match="holds GPUs 0, 1"):
        FORMATS["nvidia-smi"](text, "g.csv", LogOptions())
    trace = FORMATS["nvidia-smi"](text, "g.csv", LogOptions(gpu=1))
    assert set(trace.rows("utilization_gpu")["value"]) == {51.0}


def test_dcgm_stuck_counter_is_no_update_not_zero_joules() -> None:
    stuck = (20.0, 23.0)
    trace = FORMATS["dcgm"](dcgm_log(60, stuck=stuck), "d.txt", LogOptions(poll_ms=100))
    assert trace.signals["energy_counter"].kind == "counter"
    assert np.isnan(trace.rows("power_average", ok_only=False)["value"][3])  # the N/A sample
    period = update_period(trace, "energy_counter")
    assert period.effective_period_ms == pytest.approx(100, rel=0.05)  # measured from the log
    a, b = _span(trace)
    whole = energy_from_counter(trace, a, b, 0.0, 2000.0)
    assert whole.lower_j <= _truth(a, b, 0) <= whole.upper_j
    inside = energy_from_counter(trace, int(20.5e9), int(22.5e9), 0.0, 2000.0)  # the counter did not move
    truth = _truth(int(20.5e9), int(22.5e9), 0)
    assert inside.updates == 0 and inside.estimate_j > 0.5 * truth and inside.lower_j <= truth <= inside.upper_j


@pytest.mark.parametrize("step_s", [1.0, 0.05])
def test_zeus_windows_bound_the_truth(step_s: float) -> None:
    windows = [(i * step_s, step_s, "step") for i in range(int(30 / step_s))]
    trace = FORMATS["zeus"](zeus_log(windows), "z.csv", LogOptions())
    a, b = _span(trace)
    e = energy_from_counter(trace, a, b, 0.0, 2000.0)
    assert e.lower_j <= _truth(a, b) <= e.upper_j
    assert trace.phase("step").start_ns == a  # each window is a phase too


def test_zeus_overlapping_windows_are_refused_unless_one_is_chosen() -> None:
    text = zeus_log([(0.0, 10.0, "epoch"), (0.0, 1.0, "step"), (1.0, 1.0, "step")])
    with pytest.raises(LogError, match=r"z.csv line \d: window .* starts before window"):
        FORMATS["zeus"](text, "z.csv", LogOptions())
    assert FORMATS["zeus"](text, "z.csv", LogOptions(window="step")).poll_ns.size == 3


def test_zeus_gap_is_unknown_energy() -> None:
    trace = FORMATS["zeus"](zeus_log([(0.0, 5.0, "a"), (8.0, 5.0, "b")]), "z.csv", LogOptions())
    a, b = _span(trace)
    e = energy_from_counter(trace, a, b, 0.0, 2000.0)
    assert e.method == "power-range" and e.lower_j <= _truth(a, b) <= e.upper_j


def test_codecarbon_gpu_energy_only() -> None:
    trace = FORMATS["codecarbon"](codecarbon_log(300), "emissions.csv", LogOptions())
    a, b = _span(trace)
    e = energy_from_counter(trace, a, b, 0.0, 2000.0)
    truth = _truth(a, b)
    assert e.lower_j <= truth <= e.upper_j
    assert recorded_summaries(trace)["energy_counter"]["metrics"]["energy"] == pytest.approx(truth, rel=0.02)


@pytest.mark.subprocess
@pytest.mark.parametrize(
    "fmt, text, line",
    [
        ("nvidia-smi", nvidia_smi_log(2).replace("1024 MiB", "lots", 1), 2),
        ("nvidia-smi", nvidia_smi_log(2).replace("2026/12/03 10:15:01.103", "yesterday"), 3),
        ("nvidia-smi", nvidia_smi_log(2).replace(", 0, ", ", 0, 1, ", 1), 2),
        ("dcgm", dcgm_log(2).replace("GPU 0", "GPU 0 7", 1), 3),
        ("zeus", zeus_log([(0.0, 1.0, "s")]).replace(",s,", ",s,x"), 2),
        ("codecarbon", codecarbon_log(30).replace("2026-12-03T10:15:16", "noon"), 2),
    ],
)
def test_a_malformed_line_is_named(tmp_path: Path, fmt: str, text: str, line: int) -> None:
    path = tmp_path / "log.txt"
    path.write_text(text)
    with pytest.raises(LogError, match=rf"log.txt line {line}: "):
        convert_log(path, fmt)
    proc = run("collect", "telemetry", str(path), "--format", fmt)
    assert proc.returncode == 2 and f"line {line}" in proc.stderr


def test_formats_are_recognised_from_the_name() -> None:
    assert recognise("run-1.nvidia-smi.csv") == ("nvidia-smi", ".nvidia-smi.csv")
    assert recognise("r.dcgm.txt")[0] == "dcgm" and recognise("r.zeus.csv")[0] == "zeus"
    assert recognise("emissions.csv")[0] == "codecarbon" and recognise("r.csv") is None


@pytest.mark.subprocess(quick=True)
def test_collect_telemetry_then_probe_replay(tmp_path: Path) -> None:
    log = tmp_path / "run7.dcgm.txt"
    log.write_text(dcgm_log(30))
    proc = run("collect", "telemetry", str(log), "--poll-ms", "100", "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["trace"] == str(tmp_path / "run7.telemetry.meta.json")
    trace = read_trace(tmp_path / "run7.telemetry")
    assert trace.sensor == "log:dcgm" and trace.evidence == "measured"
    probe = run("collect", "probe", "--sensor", f"replay:{out['trace']}", "--json")
    assert probe.returncode == 0, probe.stderr
    recorded = json.loads(probe.stdout)["recorded"]["energy_counter"]
    assert recorded["metrics"]["energy"] == out["recorded"]["energy_counter"]["metrics"]["energy"]
    assert recorded["effective_period_ms"] == pytest.approx(100, rel=0.05)


def _logged_runs(tmp_path: Path, drop: int | None = None) -> tuple[Path, Path, Path]:
    """The cadence plan frozen, a table of its runs (no energy typed in) and one Zeus log per run,
    named after the run id ``collect plan`` lists; the ``drop``-th log left out."""
    import csv
    import io

    from tests.helpers import frozen_shared, write_csv

    lock = frozen_shared(tmp_path, "cadence-energy.yaml")
    listing = list(csv.DictReader(io.StringIO(run("collect", "plan", str(lock)).stdout)))
    logs = tmp_path / "logs"
    logs.mkdir()
    for i, planned in enumerate(listing):
        if i != drop:
            windows = [(j * 0.5 + i, 0.5, "step") for j in range(40)]
            (logs / f"{planned['run_id']}.zeus.csv").write_text(zeus_log(windows))
    rows = [{"arm": r["arm"], "block": r["block"], "seed": r["seed"], "final_nll": 2.5} for r in listing]
    return lock, write_csv(tmp_path / "runs.csv", rows), logs


@pytest.mark.slow  # 32 runs imported with their logs: ~5 s
def test_import_fills_telemetry_and_keeps_each_log_as_a_hashed_trace(tmp_path: Path) -> None:
    from collect.ledger.store import read_ledger, verify_chain

    lock, table, logs = _logged_runs(tmp_path)
    runs = tmp_path / "runs"
    proc = run("collect", "import", str(table), "--lock", str(lock), "--out", str(runs), "--telemetry", str(logs))
    assert proc.returncode == 0, proc.stderr
    ledger = read_ledger(runs)
    assert len(ledger.records) == 32 and verify_chain(ledger).ok
    record = ledger.records[0]
    summary = record.telemetry["energy_counter"]
    assert summary.updates == 40 and summary.effective_period_ms == pytest.approx(500, rel=0.05)
    assert summary.evidence == "measured" and summary.bound_of("energy") is not None
    truth = energy(WARM_S, WARM_S + 20)
    assert record.metric("energy") == pytest.approx(truth, rel=0.02)
    assert abs(record.metric("energy") - truth) <= summary.bound_of("energy")
    meta = f"traces/{record.run_id}.telemetry.meta.json"
    assert meta in record.traces and set(record.trace_sha256) == set(record.traces)
    assert not (runs / ".import-traces").exists()
    probe = run("collect", "probe", "--sensor", f"replay:{runs / meta}", "--json")
    assert probe.returncode == 0, probe.stderr  # checked against its record
    again = run("collect", "import", str(table), "--lock", str(lock), "--out", str(runs), "--telemetry", str(logs))
    assert again.returncode == 0 and "32 rows already in the ledger" in again.stdout  # resumable, identically


@pytest.mark.subprocess(quick=True)
def test_import_without_a_runs_log_names_the_row(tmp_path: Path) -> None:
    lock, table, logs = _logged_runs(tmp_path, drop=4)
    proc = run(
        "collect", "import", str(table), "--lock", str(lock), "--out", str(tmp_path / "runs"), "--telemetry", str(logs)
    )
    assert proc.returncode == 2 and "row 5: no telemetry log" in proc.stderr
    assert not (tmp_path / "runs").exists()
