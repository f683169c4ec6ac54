"""Power logs that say what no device could: refused with the file and line (exit 2), never clipped.

Every log is collect/telemetry/logs/synthetic.py's known curve, as the tools write it, with one
thing broken: a negative reading, readings outside the power range (a wrong unit in the header, a
counter jumping), times no int64 nanosecond clock holds. Each is refused by the reader itself, so
``collect telemetry`` and ``collect import --telemetry`` refuse it alike.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

from collect.telemetry.analysis.bounds import energy_from_counter
from collect.telemetry.logs.common import LOG_PHASE, LogError, LogOptions
from collect.telemetry.logs.formats import FORMATS, convert_log
from collect.telemetry.logs.synthetic import codecarbon_log, dcgm_log, nvidia_smi_log, zeus_log
from prereg.errors import ToolkitError
from tests.helpers import run


def _lines(text: str) -> list[str]:
    return text.splitlines()


def _refused(fmt: str, text: str, options: LogOptions | None = None) -> str:
    """The refusal's message; it must be a toolkit input error (exit 2) naming the file and a line."""
    with pytest.raises(LogError) as caught:
        FORMATS[fmt](text, "log.txt", options or LogOptions())
    assert isinstance(caught.value, ToolkitError) and caught.value.exit_code == 2
    return str(caught.value)


def _smi_line(text: str, k: int, old: str, new: str) -> str:
    lines = _lines(text)
    assert old in lines[k - 1]
    lines[k - 1] = lines[k - 1].replace(old, new, 1)
    return "\n".join(lines) + "\n"


# -- readings the power range cannot hold ------------------------------------------------------


def test_a_negative_power_reading_is_refused_with_its_line() -> None:
    text = nvidia_smi_log(3)
    cell = _lines(text)[4].split(", ")[2]  # line 5's power.draw cell, "257.17 W"
    message = _refused("nvidia-smi", _smi_line(text, 5, cell, "-247.00 W"))
    assert message.startswith("log.txt line 5: ") and "negative" in message


def test_a_negative_dcgm_power_sample_is_refused() -> None:
    lines = _lines(dcgm_log(2))
    k = next(i for i, line in enumerate(lines) if line.startswith("GPU 0") and "N/A" not in line and i > 5)
    words = lines[k].split()
    lines[k] = f"GPU 0     -{words[2]:<14} {words[3]}"
    message = _refused("dcgm", "\n".join(lines) + "\n", LogOptions(poll_ms=100))
    assert message.startswith(f"log.txt line {k + 1}: ") and "negative" in message


def test_watts_under_a_kilowatt_header_are_refused_not_clipped() -> None:
    text = nvidia_smi_log(3, units_in_cells=False).replace("power.draw [W]", "power.draw [kW]", 1)
    message = _refused("nvidia-smi", text)
    assert message.startswith("log.txt line 2: ")  # its power.draw reads 249.53 "kW"
    assert "249530 W" in message and "outside the device's power range 0 to 2000 W" in message


def test_readings_above_a_stated_power_range_are_refused() -> None:
    text = nvidia_smi_log(10)  # the curve reaches about 390 W
    assert FORMATS["nvidia-smi"](text, "g.csv", LogOptions(power_range_w=(0.0, 700.0))).poll_ns.size == 100
    message = _refused("nvidia-smi", text, LogOptions(power_range_w=(0.0, 300.0)))
    assert "outside the device's power range 0 to 300 W" in message and " line " in message


def test_a_counter_jumping_to_1e30_mj_is_refused_with_its_line() -> None:
    lines = _lines(dcgm_log(5))
    k = next(i for i, line in enumerate(lines) if line.startswith("GPU 0") and i > 20)
    words = lines[k].split()
    lines[k] = f"GPU 0     {words[2]:<14} 1e30"
    message = _refused("dcgm", "\n".join(lines) + "\n", LogOptions(poll_ms=100))
    assert message.startswith(f"log.txt line {k + 1}: the energy counter rose by ")
    assert "more than 2000 W" in message


def test_a_stuck_counter_that_catches_up_is_still_accepted() -> None:
    """The counter check places updates as the analysis does: a catch-up after 3 s stuck is within the range."""
    trace = FORMATS["dcgm"](dcgm_log(30, stuck=(10.0, 13.0)), "d.txt", LogOptions(poll_ms=100))
    mark = trace.phase(LOG_PHASE)
    energy = energy_from_counter(trace, mark.start_ns, mark.end_ns, 0.0, 2000.0)
    assert energy.lower_j < energy.upper_j  # never a zero bound


def test_a_negative_counter_reading_is_refused() -> None:
    lines = _lines(dcgm_log(2))
    k = next(i for i, line in enumerate(lines) if line.startswith("GPU 0") and i > 5)
    words = lines[k].split()
    lines[k] = f"GPU 0     {words[2]:<14} -5"
    assert "negative" in _refused("dcgm", "\n".join(lines) + "\n", LogOptions(poll_ms=100))


def test_a_zeus_window_holding_more_than_the_range_allows_is_refused() -> None:
    text = zeus_log([(float(i), 1.0, "step") for i in range(5)])
    lines = _lines(text)
    cells = lines[3].split(",")
    lines[3] = ",".join([*cells[:3], "5000.0"])  # 5000 J in a 1 s window: 5 kW
    message = _refused("zeus", "\n".join(lines) + "\n")
    assert message.startswith("log.txt line 4: the energy counter rose by 5e+06 mJ")


def test_a_codecarbon_tracker_jumping_past_the_range_is_refused() -> None:
    rows = list(csv.reader(io.StringIO(codecarbon_log(60))))
    energy = rows[0].index("gpu_energy")
    rows[-1][energy] = "1.0"  # the last save (line 5): 1 kWh 15 s after the one before, 240 kW
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    assert _refused("codecarbon", out.getvalue()).startswith("log.txt line 5: the energy counter rose by ")


# -- times no clock holds --------------------------------------------------------------------------


@pytest.mark.parametrize("stamp", ["2300/01/01 10:15:01.103", "NaT", "1969/12/31 23:59:59.000"])
def test_nvidia_smi_times_past_2262_or_before_1970_are_refused(stamp: str) -> None:
    text = _smi_line(nvidia_smi_log(3), 3, "2026/12/03 10:15:01.103", stamp)
    message = _refused("nvidia-smi", text)
    assert message.startswith("log.txt line 3: ") and "1970 to 2200" in message


def test_nvidia_smi_time_going_backwards_is_refused_with_both_lines() -> None:
    text = _smi_line(nvidia_smi_log(3), 4, "2026/12/03 10:15:01.203", "2026/12/03 10:15:00.203")
    assert _refused("nvidia-smi", text).startswith(
        "log.txt line 4: its time is earlier than the line before it (line 3)"
    )


@pytest.mark.parametrize(
    "column, value",
    [
        ("start_time", "1e300"),
        ("start_time", "-5.0"),
        ("start_time", "inf"),
        ("elapsed_time", "1e300"),
        ("start_time", "7258118399.5"),
    ],
)
def test_zeus_times_out_of_range_are_refused_with_the_line(column: str, value: str) -> None:
    text = zeus_log([(float(i), 1.0, "step") for i in range(3)])
    lines = _lines(text)
    cells = lines[2].split(",")
    cells[["start_time", "window_name", "elapsed_time"].index(column)] = value
    lines[2] = ",".join(cells)
    assert _refused("zeus", "\n".join(lines) + "\n").startswith("log.txt line 3: ")


@pytest.mark.parametrize(
    "column, value",
    [
        ("timestamp", "9999-12-31T23:59:59"),
        ("duration", "1e300"),
        ("duration", "1e12"),
        ("timestamp", "1960-01-01T00:00:00"),
    ],
)
def test_codecarbon_times_out_of_range_are_refused_with_the_line(column: str, value: str) -> None:
    rows = list(csv.reader(io.StringIO(codecarbon_log(30))))  # a header and saves at 15 s and 30 s
    rows[-1][rows[0].index(column)] = value
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    assert _refused("codecarbon", out.getvalue()).startswith("log.txt line 3: ")


@pytest.mark.parametrize(
    "options",
    [
        {"poll_ms": 1e30},
        {"poll_ms": 0.0},
        {"poll_ms": float("nan")},
        {"power_window_ms": -1.0},
        {"power_range_w": (0.0, float("inf"))},
        {"power_range_w": (-5.0, 100.0)},
        {"max_gap_ms": float("inf")},
    ],
)
def test_options_no_log_could_be_read_with_are_refused(options: dict) -> None:
    with pytest.raises(LogError):
        LogOptions(**options)


# -- the same readers, from a file and for collect import --------------------------------------------


def test_a_file_is_read_line_by_line_and_refused_alike(tmp_path: Path) -> None:
    from collect.telemetry.logs.reading import log_lines

    path = tmp_path / "gpu.nvidia-smi.csv"
    path.write_text(_smi_line(nvidia_smi_log(3), 4, "2026/12/03 10:15:01.203", "2300/01/01 10:15:01.203"))
    with pytest.raises(LogError, match=r"gpu.nvidia-smi.csv line 4: "):
        convert_log(path)
    path.write_bytes(b"timestamp, power.draw [W]\n2026/12/03 10:15:01.103, 1\xff W\n")
    with pytest.raises(LogError, match=r"line 2: not UTF-8"):
        convert_log(path)
    with pytest.raises(LogError, match="over the 10 allowed"):
        next(log_lines(path, limit=10))


def test_collect_import_refuses_the_same_log_naming_row_and_line(tmp_path: Path) -> None:
    from collect.importing.logs import TelemetryLogs, attach_logs
    from collect.importing.planned import plan_text
    from prereg.plan import load_plan
    from tests.conftest import shared_example_path

    loaded = load_plan(shared_example_path("cadence-energy.yaml"))
    planned = list(csv.DictReader(io.StringIO(plan_text(loaded.plan, loaded.plan_sha256, "csv"))))[0]
    logs = tmp_path / "logs"
    logs.mkdir()
    text = zeus_log([(float(i), 1.0, "step") for i in range(5)])
    lines = _lines(text)
    lines[2] = lines[2].replace(lines[2].split(",")[0], "1e300", 1)
    (logs / f"{planned['run_id']}.zeus.csv").write_text("\n".join(lines) + "\n")
    row = {
        "run_id": planned["run_id"],
        "arm": planned["arm"],
        "block": planned["block"],
        "seed": planned["seed"],
        "final_nll": 2.5,
    }
    _, traces, errors = attach_logs([row], loaded.plan, loaded.plan_sha256, "runs.csv", TelemetryLogs(logs))
    assert not traces and len(errors) == 1
    assert errors[0].startswith("row 1: ") and ".zeus.csv line 3: start_time 1e+300 s is not a time" in errors[0]


@pytest.mark.subprocess
def test_collect_telemetry_exits_2_with_the_line_and_writes_nothing(tmp_path: Path) -> None:
    zeus = _lines(zeus_log([(float(i), 1.0, "step") for i in range(3)]))
    zeus[2] = zeus[2].replace(zeus[2].split(",")[0], "1e300", 1)  # an OverflowError (exit 4) before
    smi = _smi_line(nvidia_smi_log(3), 5, _lines(nvidia_smi_log(3))[4].split(", ")[2], "-247.00 W")
    for name, text, line in (("run.zeus.csv", "\n".join(zeus) + "\n", 3), ("run.nvidia-smi.csv", smi, 5)):
        log = tmp_path / name
        log.write_text(text)
        proc = run("collect", "telemetry", str(log))
        assert proc.returncode == 2 and f"{name} line {line}: " in proc.stderr, proc.stderr
        assert not list(tmp_path.glob("*.telemetry*"))


def test_block_boundaries_keep_every_row_and_name_the_right_line() -> None:
    """Logs are read a block of 16,384 rows at a time: a log of exactly one block, and a fault in a
    later block, are read as a whole text would be."""
    lines = _lines(nvidia_smi_log(1700, na_lines=()))  # 17,000 polls
    one_block = "\n".join(lines[:16_385]) + "\n"
    assert FORMATS["nvidia-smi"](one_block, "g.csv", LogOptions()).poll_ns.size == 16_384
    lines.insert(16_500, "")  # a blank line and a restarted logger's header in the second block
    lines.insert(16_600, lines[0])
    assert FORMATS["nvidia-smi"]("\n".join(lines) + "\n", "g.csv", LogOptions()).poll_ns.size == 17_000
    cell = lines[16_899].split(", ")[2]
    lines[16_899] = lines[16_899].replace(cell, "-1.00 W", 1)
    assert _refused("nvidia-smi", "\n".join(lines) + "\n").startswith("log.txt line 16900: ")
