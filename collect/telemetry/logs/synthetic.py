"""A known power curve, and the log text each power tool would write of it: SYNTHETIC logs for the
tests and the examples (``examples/make_smi_logs.py``), never a measurement.

More in ``docs/internals.md``.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

from collect.telemetry.logs.synthetic_device import EnergyCounter, PowerGauge, PowerPattern
from collect.telemetry.logs.synthetic_writers import (
    SyntheticLog,
    codecarbon_csv,
    dcgm_dmon,
    dmon_sample_times,
    nvidia_smi_csv,
    smi_poll_times,
    zeus_csv,
)

START = datetime(2026, 12, 3, 10, 15, 1, tzinfo=UTC)  # the logs' first moment (t = 0)
WARM_S = 5.0  # the curve before the logs start: a 1 s average is defined from the first poll


def power(t: float) -> float:
    """The true power at ``t`` (W)."""
    return 250 + 80 * math.sin(2 * math.pi * t / 7) + (60 if math.floor(t / 3) % 2 else 0)


def _square(x: float) -> float:
    k = math.floor(x / 6)
    return 3 * k + max(0.0, x - 6 * k - 3)


def energy(a: float, b: float) -> float:
    """The exact energy (J) of the curve over ``[a, b]`` (seconds)."""
    swing = 80 * 7 / (2 * math.pi) * (math.cos(2 * math.pi * a / 7) - math.cos(2 * math.pi * b / 7))
    return 250 * (b - a) + swing + 60 * (_square(b) - _square(a))


def counter_mj(
    t: float, counter_update_ms: float = 100.0, stuck: tuple[float, float] | None = None, scale: float = 1.0
) -> int:
    """The energy counter read at ``t`` (mJ): the floor of the energy at its last update (``scale``
    times the curve's)."""
    step = counter_update_ms / 1000
    u = math.floor(t / step) * step
    if stuck is not None and stuck[0] <= u < stuck[1]:
        u = math.floor(stuck[0] / step) * step
    return math.floor(scale * energy(0, WARM_S + u) * 1000)


def _last_update(t: float, update_ms: float) -> float:
    return math.floor(t * 1000 / update_ms) * update_ms / 1000


def _stamp(t: float, start: datetime = START) -> str:
    moment = start + timedelta(seconds=t)
    return moment.strftime("%Y/%m/%d %H:%M:%S.") + f"{moment.microsecond // 1000:03d}"


def nvidia_smi_log(
    seconds: float,
    poll_ms: float = 100.0,
    update_ms: float = 100.0,
    units_in_cells: bool = True,
    na_lines: tuple[int, ...] = (7,),
    gpus: tuple[int, ...] = (0,),
    scale: float = 1.0,
    start: datetime = START,
) -> str:
    """``nvidia-smi --query-gpu=timestamp,index,power.draw,power.draw.instant,utilization.gpu,memory.used
    --format=csv[,nounits] -lms POLL``; polls 3 ms past each interval; the ``na_lines``-th data lines
    read ``[N/A]`` for the instant power and ``[N/A]`` for power.draw on the first of them. ``scale``
    multiplies the curve (its energy is ``scale * energy(...)``); ``start`` is the first timestamp."""
    lines = ["timestamp, index, power.draw [W], power.draw.instant [W], utilization.gpu [%], memory.used [MiB]"]
    k = 0
    while (t := k * poll_ms / 1000 + 0.003) < seconds:
        u = _last_update(t, update_ms)
        average = scale * energy(WARM_S + u - 1, WARM_S + u)
        instant = scale * power(WARM_S + u)
        for gpu in gpus:
            w, pct, mib = (" W", " %", " MiB") if units_in_cells else ("", "", "")
            draw = f"{average:.2f}{w}"
            inst = f"{instant:.2f}{w}"
            if len(lines) in na_lines:
                inst = "[N/A]"
                draw = "[N/A]" if len(lines) == na_lines[0] else draw
            lines.append(f"{_stamp(t, start)}, {gpu}, {draw}, {inst}, {50 + gpu}{pct}, 1024{mib}")
        k += 1
    return "\n".join(lines) + "\n"


def dcgm_log(
    seconds: float,
    delay_ms: float = 100.0,
    counter_update_ms: float = 100.0,
    stuck: tuple[float, float] | None = None,
    na_samples: tuple[int, ...] = (3,),
    header_every: int = 50,
    scale: float = 1.0,
) -> str:
    """``dcgmi dmon -e 155,156 -d DELAY``: sample k taken at ``(k + 0.5) DELAY``; ``POWER`` reads ``N/A``
    at the ``na_samples``; the header pair repeats every ``header_every`` samples; ``scale``
    multiplies the curve (its energy is ``scale * energy(...)``)."""
    head = ["#Entity   POWER          TOTEC", "ID        W              mJ"]
    lines: list[str] = []
    k = 0
    while (t := (k + 0.5) * delay_ms / 1000) < seconds:
        if k % header_every == 0:
            lines += head
        u = _last_update(t, 100.0)
        watts = "N/A" if k in na_samples else f"{scale * energy(WARM_S + u - 1, WARM_S + u):.3f}"
        lines.append(f"GPU 0     {watts:<14} {counter_mj(t, counter_update_ms, stuck, scale)}")
        k += 1
    return "\n".join(lines) + "\n"


def zeus_log(windows: list[tuple[float, float, str]], counter_update_ms: float = 100.0) -> str:
    """A ``ZeusMonitor(log_file=...)`` CSV of ``(start_s, elapsed_s, name)`` windows, one GPU, each
    window's energy the counter's difference at its ends (J); times in Unix seconds."""
    lines = ["start_time,window_name,elapsed_time,gpu0_energy"]
    epoch = START.timestamp()
    for start, elapsed, name in windows:
        # the reads' times to the microsecond, so that back-to-back windows read the counter at one moment
        end = round(start + elapsed, 6)
        joules = (counter_mj(end, counter_update_ms) - counter_mj(round(start, 6), counter_update_ms)) / 1000
        lines.append(f"{epoch + start!r},{name},{elapsed!r},{joules!r}")
    return "\n".join(lines) + "\n"


def codecarbon_log(seconds: float, every_s: float = 15.0, run_id: str = "9adda612-4ce8-49d0-9a55-e3b071a7b885") -> str:
    """CodeCarbon's ``emissions.csv`` for one tracker started at t = 0, saved every ``every_s``:
    cumulative energies in kWh (GPU from the counter; CPU a TDP estimate; RAM a constant)."""
    header = (
        "timestamp,project_name,run_id,duration,emissions,emissions_rate,cpu_power,gpu_power,ram_power,"
        "cpu_energy,gpu_energy,ram_energy,energy_consumed,country_name,country_iso_code,region,cloud_provider,"
        "cloud_region,os,python_version,codecarbon_version,cpu_count,cpu_model,gpu_count,gpu_model,longitude,"
        "latitude,ram_total_size,tracking_mode,on_cloud,pue"
    )
    lines = [header]
    t = every_s
    while t <= seconds + 1e-9:
        gpu_kwh = (counter_mj(t) - counter_mj(0)) / 3.6e9
        cpu_kwh = 42.5 * t / 3.6e6
        ram_kwh = 10.0 * t / 3.6e6
        stamp = (START + timedelta(seconds=t)).strftime("%Y-%m-%dT%H:%M:%S")
        lines.append(
            f"{stamp},codecarbon,{run_id},{t!r},0.001,1e-06,42.5,300.0,10.0,{cpu_kwh!r},{gpu_kwh!r},"
            f"{ram_kwh!r},{cpu_kwh + gpu_kwh + ram_kwh!r},Canada,CAN,quebec,,,Linux,3.11.7,2.3.5,16,"
            "Intel(R) Xeon(R),1,1 x NVIDIA H100,-71.2,46.8,128.0,machine,N,1.0"
        )
        t += every_s
    return "\n".join(lines) + "\n"


__all__ = [
    "START",
    "WARM_S",
    "EnergyCounter",
    "PowerGauge",
    "PowerPattern",
    "SyntheticLog",
    "codecarbon_csv",
    "codecarbon_log",
    "counter_mj",
    "dcgm_dmon",
    "dcgm_log",
    "dmon_sample_times",
    "energy",
    "nvidia_smi_csv",
    "nvidia_smi_log",
    "power",
    "smi_poll_times",
    "zeus_csv",
    "zeus_log",
]
