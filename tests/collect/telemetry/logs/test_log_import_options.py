"""Power logs imported as clusters write them: the converter's options per format, every GPU of a
data-parallel run summed, a truncated last line dropped with a note, headerless nvidia-smi logs read
with their query fields, and gaps (a logger that died) shown.

Every log comes from collect/telemetry/logs/synthetic.py (a known power curve written as each tool
writes it); multi-GPU logs are built from it by giving each GPU a known multiple of that curve.
"""

from __future__ import annotations

import json
import warnings
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from collect.importing.logs import LogNote, TelemetryLogs, attach_logs
from collect.telemetry.logs.common import LogError, LogOptions
from collect.telemetry.logs.formats import FORMATS, check_options, convert_log
from collect.telemetry.logs.synthetic import START, codecarbon_log, dcgm_log, nvidia_smi_log, zeus_log
from collect.traces.telemetry import Trace
from tests.helpers import run

SMI_FIELDS = ("timestamp", "index", "power.draw", "power.draw.instant", "utilization.gpu", "memory.used")


def _values(trace: Trace, signal: str, ok_only: bool = True) -> np.ndarray:
    return trace.rows(signal, ok_only)["value"]


def _zeus_two_gpus(windows: list[tuple[float, float, str]], factor: float = 2.0) -> str:
    """A Zeus log of two GPUs: gpu1's energy is ``factor`` times gpu0's in every window."""
    lines = zeus_log(windows).splitlines()
    out = [lines[0] + ",gpu1_energy"]
    out += [f"{line},{float(line.rsplit(',', 1)[1]) * factor!r}" for line in lines[1:]]
    return "\n".join(out) + "\n"


def _dcgm_two_gpus(seconds: float, drop_sample: int | None = None) -> str:
    """dcgmi dmon of two entities reading the same curve; GPU 1's line of sample ``drop_sample`` missing."""
    out, sample = [], -1
    for line in dcgm_log(seconds).splitlines():
        out.append(line)
        if line.startswith("GPU 0"):
            sample += 1
            if sample != drop_sample:
                out.append(line.replace("GPU 0", "GPU 1", 1))
    return "\n".join(out) + "\n"


# ---- every GPU summed (--gpus all) ----------------------------------------------------------------


def test_zeus_all_gpus_sums_each_windows_gpu_energy() -> None:
    windows = [(i * 0.5, 0.5, "step") for i in range(20)]
    one = FORMATS["zeus"](zeus_log(windows), "z.csv", LogOptions())
    both = FORMATS["zeus"](_zeus_two_gpus(windows, 2.0), "z.csv", LogOptions(all_gpus=True))
    assert np.allclose(_values(both, "energy_counter"), 3 * _values(one, "energy_counter"))
    with pytest.raises(LogError, match="holds GPUs 0, 1; choose one"):
        FORMATS["zeus"](_zeus_two_gpus(windows), "z.csv", LogOptions())


def test_nvidia_smi_all_gpus_sums_power_per_poll_and_drops_non_additive_fields() -> None:
    one = FORMATS["nvidia-smi"](nvidia_smi_log(5, na_lines=()), "s.csv", LogOptions())
    both = FORMATS["nvidia-smi"](nvidia_smi_log(5, gpus=(0, 1), na_lines=()), "s.csv", LogOptions(all_gpus=True))
    assert set(both.signals) == {"power_average", "power_instant"}  # utilisation and memory do not add up
    assert np.allclose(_values(both, "power_average"), 2 * _values(one, "power_average"))
    assert np.array_equal(both.poll_ns, one.poll_ns)  # one poll per pair of lines, at its first line's time


def test_nvidia_smi_all_gpus_a_poll_missing_a_gpu_is_not_ok() -> None:
    lines = nvidia_smi_log(3, gpus=(0, 1), na_lines=()).splitlines(keepends=True)
    del lines[6]  # GPU 1's line of the 3rd poll (line 7 of the file)
    trace = FORMATS["nvidia-smi"]("".join(lines), "s.csv", LogOptions(all_gpus=True))
    values = _values(trace, "power_average", ok_only=False)
    assert np.isnan(values[2]) and np.isfinite(np.delete(values, 2)).all()
    status = trace.status[trace.signal == "power_average"]
    assert status[2] == "error" and (np.delete(status, 2) == "ok").all()


def test_dcgm_all_gpus_sums_the_entities_sample_by_sample() -> None:
    one = FORMATS["dcgm"](dcgm_log(3), "d.txt", LogOptions(poll_ms=100))
    both = FORMATS["dcgm"](_dcgm_two_gpus(3), "d.txt", LogOptions(poll_ms=100, all_gpus=True))
    assert np.allclose(_values(both, "energy_counter"), 2 * _values(one, "energy_counter"))
    assert both.poll_ns.size == one.poll_ns.size
    gap = FORMATS["dcgm"](_dcgm_two_gpus(3, drop_sample=29), "d.txt", LogOptions(poll_ms=100, all_gpus=True))
    assert np.isnan(_values(gap, "energy_counter", ok_only=False)[-1])  # the last sample lacks GPU 1


def test_all_gpus_power_range_is_per_gpu_times_the_gpus() -> None:
    text = nvidia_smi_log(3, gpus=(0, 1), na_lines=())  # each GPU 170-400 W, the sum up to ~800 W
    trace = FORMATS["nvidia-smi"](text, "s.csv", LogOptions(all_gpus=True, power_range_w=(0.0, 450.0)))
    assert trace.power_range_w == (0.0, 900.0)
    with pytest.raises(LogError, match="outside the device's power range 0 to 300 W"):  # each GPU checked alone
        FORMATS["nvidia-smi"](text, "s.csv", LogOptions(all_gpus=True, power_range_w=(0.0, 300.0)))


def test_codecarbon_all_gpus_changes_nothing_and_one_gpu_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "emissions.csv"
    path.write_text(codecarbon_log(60))
    plain, summed = convert_log(path), convert_log(path, options=LogOptions(all_gpus=True))
    assert np.array_equal(plain.value, summed.value) and plain.power_range_w == summed.power_range_w
    with pytest.raises(LogError, match="--gpu does not apply to codecarbon logs"):
        convert_log(path, options=LogOptions(gpu=0))


@pytest.mark.parametrize("fmt", ["nvidia-smi", "dcgm", "zeus"])
def test_one_gpu_and_every_gpu_at_once_are_refused(fmt: str) -> None:
    with pytest.raises(LogError, match="--gpu 1 and --gpus all contradict each other"):
        check_options(fmt, LogOptions(gpu=1, all_gpus=True))


# ---- options a format cannot use ------------------------------------------------------------------


@pytest.mark.parametrize(
    "fmt, options, flag",
    [
        ("zeus", LogOptions(poll_ms=100), "--poll-ms"),
        ("codecarbon", LogOptions(power_model="part-time"), "--power-model"),
        ("dcgm", LogOptions(query_fields=SMI_FIELDS), "--query-fields"),
        ("nvidia-smi", LogOptions(window="step"), "--window"),
        ("dcgm", LogOptions(max_gap_ms=50), "--max-gap-ms"),
    ],
)
def test_an_option_the_format_cannot_use_is_refused(fmt: str, options: LogOptions, flag: str) -> None:
    with pytest.raises(LogError, match=rf"{flag} does not apply to {fmt} logs"):
        check_options(fmt, options)


@pytest.mark.parametrize(
    "fmt, options",
    [
        (
            "nvidia-smi",
            LogOptions(poll_ms=100, counter_period_ms=100, power_model="part-time", query_fields=SMI_FIELDS),
        ),
        ("dcgm", LogOptions(poll_ms=100, counter_period_ms=100, power_window_ms=0, all_gpus=True)),
        ("zeus", LogOptions(window="step", max_gap_ms=5, counter_period_ms=100, power_range_w=(50, 700))),
        ("codecarbon", LogOptions(counter_period_ms=100, all_gpus=True, power_range_w=(50, 700))),
    ],
)
def test_the_options_a_format_uses_are_accepted(fmt: str, options: LogOptions) -> None:
    check_options(fmt, options)


# ---- a truncated last line ------------------------------------------------------------------------

CUT = {  # each log with its last line cut inside a cell (no line ending): fewer cells, or a cut number
    "nvidia-smi": nvidia_smi_log(3).rsplit(",", 2)[0],
    "dcgm": dcgm_log(3).rstrip("\n").rsplit(" ", 1)[0],
    "zeus": zeus_log([(i * 0.5, 0.5, "step") for i in range(10)]).rstrip("\n").rsplit(",", 1)[0],
    "codecarbon": codecarbon_log(60).rstrip("\n")[:-200],
    "zeus-jsonl": "\n".join(
        json.dumps({"start_time": START.timestamp() + i, "window_name": "s", "elapsed_time": 1.0, "gpu0_energy": 280.0})
        for i in range(5)
    )[:-12],
}


@pytest.mark.parametrize("name", sorted(CUT))
def test_a_truncated_last_line_is_dropped_with_a_note(tmp_path: Path, name: str) -> None:
    fmt = name.split("-jsonl")[0]
    text = CUT[name]
    options = LogOptions(poll_ms=100) if fmt == "dcgm" else None
    cut, whole = tmp_path / "cut.log", tmp_path / "whole.log"
    cut.write_text(text)
    kept = text.rsplit("\n", 1)[0] + "\n"  # the log without its cut line
    whole.write_text(kept)
    last = text.count("\n") + 1
    notes: list[str] = []
    trace = convert_log(cut, fmt, options, notes)
    assert notes == [notes[0]] and notes[0].startswith(f"dropped the truncated last line {last} of {cut}")
    expected = convert_log(whole, fmt, options)
    assert np.array_equal(trace.value, expected.value, equal_nan=True)
    assert np.array_equal(trace.t_before_ns, expected.t_before_ns)
    with pytest.raises(LogError, match=rf"line {last}: "):  # ended by a line ending, it is a malformed line
        whole.write_text(text + "\n")
        convert_log(whole, fmt, options)


def test_a_malformed_line_before_the_last_is_still_refused(tmp_path: Path) -> None:
    lines = nvidia_smi_log(3).splitlines(keepends=True)
    lines[4] = lines[4].rsplit(",", 2)[0] + "\n"
    path = tmp_path / "s.nvidia-smi.csv"
    path.write_text("".join(lines).rstrip("\n"))  # no line ending at the end either
    with pytest.raises(LogError, match="line 5: 4 cells where the header names 6"):
        convert_log(path)


def test_a_whole_last_line_without_an_ending_is_kept_and_said(tmp_path: Path) -> None:
    path = tmp_path / "s.nvidia-smi.csv"
    path.write_text(nvidia_smi_log(3).rstrip("\n"))
    notes: list[str] = []
    trace = convert_log(path, notes=notes)
    assert trace.poll_ns.size == nvidia_smi_log(3).count("\n") - 1
    assert len(notes) == 1 and "has no line ending" in notes[0] and "was kept" in notes[0]


# ---- headerless nvidia-smi ------------------------------------------------------------------------


@pytest.mark.parametrize("units_in_cells", [True, False])  # csv,noheader and csv,noheader,nounits
def test_a_headerless_nvidia_smi_log_is_read_with_its_query_fields(tmp_path: Path, units_in_cells: bool) -> None:
    text = nvidia_smi_log(3, units_in_cells=units_in_cells)
    headerless = tmp_path / "h.nvidia-smi.csv"
    headerless.write_text(text.split("\n", 1)[1])
    with_header = tmp_path / "w.nvidia-smi.csv"
    with_header.write_text(text)
    trace = convert_log(headerless, options=LogOptions(query_fields=SMI_FIELDS))
    expected = convert_log(with_header)
    assert trace.signals == expected.signals and trace.signals["power_average"].unit == "W"
    assert np.array_equal(trace.value, expected.value, equal_nan=True)
    assert np.array_equal(trace.t_before_ns, expected.t_before_ns)
    with pytest.raises(LogError, match=r"h.nvidia-smi.csv line 1: the log has no header line .*--query-fields"):
        convert_log(headerless)


def test_a_headerless_energy_field_needs_its_unit(tmp_path: Path) -> None:
    path = tmp_path / "e.nvidia-smi.csv"
    path.write_text("2026/12/03 10:15:01.003, 0, 250.00, 1000\n2026/12/03 10:15:01.103, 0, 250.00, 1025\n")
    with pytest.raises(LogError, match=r"energy column 'energy' names no unit \(give it in --query-fields"):
        convert_log(path, options=LogOptions(query_fields=("timestamp", "index", "power.draw", "energy")))
    trace = convert_log(path, options=LogOptions(query_fields=("timestamp", "index", "power.draw", "energy [mJ]")))
    assert list(_values(trace, "energy_counter")) == [1000.0, 1025.0]


# ---- the import: options, notes, gaps -------------------------------------------------------------


@pytest.fixture(scope="module")
def plan(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """The cadence-energy plan (its energy metric reads ``energy_counter``), frozen in-process."""
    from prereg.api import freeze
    from tests.conftest import shared_example_path

    path = tmp_path_factory.mktemp("plan") / "cadence-energy.yaml"
    path.write_bytes(shared_example_path("cadence-energy.yaml").read_bytes())
    return freeze(path)


def _attach(
    lock,
    folder: Path,
    finished_s: float | None = None,
    fmt: str | None = None,  # type: ignore[no-untyped-def]
    options: LogOptions | None = None,
) -> tuple[dict, list[str], list[str]]:
    """Run r1's row through ``attach_logs``: its filled row, the errors and the run's notes (LogNote texts
    naming r1; the once-per-signal note of the meter is checked on its own)."""
    row: dict = {"run_id": "r1", "arm": "dense_restart", "block": 1, "final_nll": 2.5}
    if finished_s is not None:
        row["finished_at"] = datetime.fromtimestamp(START.timestamp() + finished_s, UTC).isoformat()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", LogNote)
        rows, _, errors = attach_logs(
            [row], lock.plan, lock.plan_sha256, "t.csv", TelemetryLogs(folder, fmt, options or LogOptions())
        )
    texts = [str(w.message) for w in caught if w.category is LogNote]
    assert sum(not t.startswith("r1: ") for t in texts) == 1  # the meter, once: "energy_counter: bounds use ..."
    return rows[0], errors, [t for t in texts if t.startswith("r1: ")]


def test_import_reads_dcgm_at_the_poll_interval_given(tmp_path: Path, plan) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "r1.dcgm.txt").write_text(dcgm_log(30))  # dmon -d 100: 300 samples in 30 s
    default, _, _ = _attach(plan, tmp_path)
    given, errors, _ = _attach(plan, tmp_path, options=LogOptions(poll_ms=100))
    assert not errors
    assert given["energy_counter.effective_period_ms"] == pytest.approx(100, rel=0.05)
    assert default["energy_counter.effective_period_ms"] == pytest.approx(1000, rel=0.05)  # dmon's default -d


def test_import_refuses_an_option_the_format_cannot_use_once(tmp_path: Path, plan) -> None:  # type: ignore[no-untyped-def]
    for rid in ("r1", "r2"):
        (tmp_path / f"{rid}.zeus.csv").write_text(zeus_log([(0.0, 1.0, "s")]))
    with pytest.raises(LogError, match=r"--telemetry: --poll-ms does not apply to zeus logs"):
        _attach(plan, tmp_path, fmt="zeus", options=LogOptions(poll_ms=100))
    with pytest.raises(LogError, match=r"--telemetry .*r1.zeus.csv: --poll-ms does not apply to zeus logs"):
        _attach(plan, tmp_path, options=LogOptions(poll_ms=100))  # the format recognised from the name


def test_import_notes_a_truncated_last_line_naming_the_run(tmp_path: Path, plan) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "r1.zeus.csv").write_text(CUT["zeus"])
    row, errors, notes = _attach(plan, tmp_path)
    assert not errors and row["energy_counter.updates"] == 9
    assert len(notes) == 1 and notes[0].startswith(
        f"r1: dropped the truncated last line 11 of {tmp_path / 'r1.zeus.csv'} "
    )


def test_import_shows_a_gap_in_the_log_and_a_log_ending_before_the_run(tmp_path: Path, plan) -> None:  # type: ignore[no-untyped-def]
    windows = [(i * 0.5, 0.5, "step") for i in range(20)] + [(40 + i * 0.5, 0.5, "step") for i in range(20)]
    (tmp_path / "r1.zeus.csv").write_text(zeus_log(windows))  # no reading from 10 s to 40 s; the log ends at 50 s
    _, errors, notes = _attach(plan, tmp_path, finished_s=95.0)
    assert not errors and len(notes) == 2
    assert notes[0].startswith("r1: log r1.zeus.csv has no energy_counter reading for 30.0 s (10.0 s to 40.0 s")
    assert "bounded by the power range" in notes[0]
    assert notes[1].startswith("r1: log r1.zeus.csv ends 45.0 s before the run's finished_at")
    _, _, quiet = _attach(plan, tmp_path)  # no finished_at: nothing said about the end
    assert len(quiet) == 1 and "ends" not in quiet[0]
    _, _, ended = _attach(plan, tmp_path, finished_s=50.5)  # within 10 intervals of the log's end
    assert len(ended) == 1


def test_a_log_without_gaps_gets_no_note(tmp_path: Path, plan) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "r1.zeus.csv").write_text(zeus_log([(i * 0.5, 0.5, "step") for i in range(20)]))
    _, errors, notes = _attach(plan, tmp_path, finished_s=10.2)
    assert not errors and notes == []


# ---- the console scripts --------------------------------------------------------------------------


@pytest.mark.subprocess
def test_collect_telemetry_takes_the_new_options_and_refuses_misplaced_ones(tmp_path: Path) -> None:
    log = tmp_path / "r.zeus.csv"
    windows = [(i * 0.5, 0.5, "step") for i in range(10)] + [(20 + i * 0.5, 0.5, "step") for i in range(10)]
    log.write_text(_zeus_two_gpus(windows).rstrip("\n").rsplit(",", 1)[0])
    proc = run("collect", "telemetry", str(log), "--gpus", "all", "--counter-period-ms", "100", "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert len(out["notes"]) == 2 and out["notes"][0].startswith("dropped the truncated last line 21")
    assert out["notes"][1].startswith(f"{log} has no energy_counter reading for 15.0 s (5.0 s to 20.0 s")
    assert "collect telemetry: note: dropped the truncated last line 21" in proc.stderr
    refused = run("collect", "telemetry", str(log), "--poll-ms", "100", "-o", str(tmp_path / "x"))
    assert refused.returncode == 2 and "--poll-ms does not apply to zeus logs" in refused.stderr
    both = run("collect", "telemetry", str(log), "--gpu", "0", "--gpus", "all", "-o", str(tmp_path / "y"))
    assert both.returncode == 2 and "contradict" in both.stderr
    assert not list(tmp_path.glob("x*")) and not list(tmp_path.glob("y*"))


@pytest.mark.subprocess
def test_collect_import_takes_log_options_and_prints_notes(tmp_path: Path) -> None:
    import csv
    import io

    from tests.helpers import frozen_shared, write_csv

    lock = frozen_shared(tmp_path, "cadence-energy.yaml")
    listing = list(csv.DictReader(io.StringIO(run("collect", "plan", str(lock)).stdout)))
    logs = tmp_path / "logs"
    logs.mkdir()
    for planned in listing:
        (logs / f"{planned['run_id']}.dcgm.txt").write_text(_dcgm_two_gpus(20).rstrip("\n").rsplit(" ", 1)[0])
    rows = [{"arm": r["arm"], "block": r["block"], "seed": r["seed"], "final_nll": 2.5} for r in listing]
    table = write_csv(tmp_path / "runs.csv", rows)
    base = [
        "collect",
        "import",
        str(table),
        "--lock",
        str(lock),
        "--out",
        str(tmp_path / "runs"),
        "--telemetry",
        str(logs),
    ]
    refused = run(*base, "--poll-ms", "100", "--window", "step")
    assert refused.returncode == 2 and "--window does not apply to dcgm logs" in refused.stderr
    assert not (tmp_path / "runs").exists()
    proc = run(*base, "--poll-ms", "100", "--gpus", "all", "--power-range-w", "0,700", "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    runs_notes = [n for n in out["notes"] if not n.startswith("energy_counter: bounds use ")]
    assert out["imported"] == len(listing) and len(runs_notes) == len(listing) == len(out["notes"]) - 1
    assert proc.stderr.count("collect import: note: ") == len(listing) + 1  # one per run, and the meter once
    assert all("dropped the truncated last line" in n for n in runs_notes)
    from collect.ledger.store import read_ledger

    summary = read_ledger(tmp_path / "runs").records[0].telemetry["energy_counter"]
    assert summary.effective_period_ms == pytest.approx(100, rel=0.05)


def test_the_command_line_builds_the_log_options() -> None:
    from prereg_toolkit_cli.collect import _log_options, build_parser

    args = build_parser().parse_args(
        [
            "telemetry",
            "x.dcgm.txt",
            "--gpus",
            "all",
            "--poll-ms",
            "100",
            "--counter-period-ms",
            "50",
            "--power-model",
            "part-time",
            "--query-fields",
            "timestamp, index,power.draw",
        ]
    )
    options = _log_options(args)
    assert options == LogOptions(
        poll_ms=100,
        all_gpus=True,
        counter_period_ms=50,
        period_basis="command line (--counter-period-ms)",
        power_model="part-time",
        query_fields=("timestamp", "index", "power.draw"),
    )
    assert _log_options(build_parser().parse_args(["import", "t.csv", "--lock", "l", "--out", "o"])) == LogOptions()


@pytest.mark.parametrize(
    "values, message",
    [
        ({"poll_ms": 0.0}, "--poll-ms must be a number from 0.1 to"),
        ({"counter_period_ms": float("nan")}, "--counter-period-ms must be a number"),
        ({"power_range_w": "700,50"}, "--power-range-w '700,50' must be 0 <= MIN < MAX"),
        ({"query_fields": "timestamp,,power.draw"}, "--query-fields 'timestamp,,power.draw' must name"),
        ({"gpu": 0, "gpus": "all"}, "--gpu 0 and --gpus all contradict each other"),
    ],
)
def test_command_line_values_no_log_could_use_are_refused(values: dict, message: str) -> None:
    from collect.telemetry.logs.options import options_from

    with pytest.raises(LogError, match=message):
        options_from(values)
