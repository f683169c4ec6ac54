"""The log text each power tool writes of a synthetic device (:mod:`.synthetic_device`): SYNTHETIC logs
with a known true energy, for validating the converters and bounds, never a measurement.

More in ``docs/internals.md``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

import numpy as np
from numpy.typing import ArrayLike, NDArray

from collect.telemetry.logs.synthetic_device import EnergyCounter, PowerGauge, PowerPattern

#: the synthetic logs' wall-clock start (the run's t = 0 unless a writer is given an offset)
START = datetime(2026, 12, 3, 10, 15, 1, tzinfo=UTC)
START_NS = int(START.timestamp()) * 1_000_000_000
_S = 1_000_000_000
_US = 1_000


@dataclass(frozen=True)
class SyntheticLog:
    """A written log: its text, its format (a ``FORMATS`` key) and the trace time of t = 0 (ns)."""

    text: str
    fmt: str
    origin_ns: int

    def seconds(self, t_ns: int) -> float:
        """A trace time (ns) as the device's time (s from the run's start)."""
        return (t_ns - self.origin_ns) / _S

    def true_energy_j(self, pattern: PowerPattern, a_ns: int, b_ns: int) -> float:
        """The exact energy of the trace interval ``[a_ns, b_ns]`` (J)."""
        return float(pattern.energy(self.seconds(a_ns), self.seconds(b_ns)))


def _to_device_s(t_ns: NDArray[np.int64], origin_ns: int) -> NDArray[np.float64]:
    return np.asarray((t_ns - origin_ns) / _S, dtype=np.float64)


def zeus_csv(
    counter: EnergyCounter,
    windows_s: Sequence[tuple[float, float]] | None = None,
    window_s: float | None = None,
    join_gap_s: float = 50e-6,
    name: str = "train",
    start_offset_s: float = 0.0,
) -> SyntheticLog:
    """A ``ZeusMonitor`` CSV (``start_time,window_name,elapsed_time,gpu0_energy``) of one GPU.

    ``windows_s``: the windows ``(start, end)`` (s of the run); default one window ``[0, run_s]``,
    or, with ``window_s``, back-to-back windows of about that length (equal, a whole number of them) over the run, each next window's
    start read ``join_gap_s`` after the last one's end. ``start_offset_s``: where the run starts in
    its wall-clock second. Each window's energy is the counter's difference at its two reads (J)."""
    run_s = counter.pattern.run_s
    if windows_s is None:
        if window_s is None:
            windows_s = [(0.0, run_s)]
        else:
            edges = np.linspace(0.0, run_s, max(1, round(run_s / window_s)) + 1)
            starts = edges[:-1] + np.where(np.arange(edges.size - 1) > 0, join_gap_s, 0.0)
            windows_s = list(zip(starts.tolist(), edges[1:].tolist(), strict=True))
    origin_ns = START_NS + round(start_offset_s * _S)
    epoch_s = origin_ns / _S
    start = np.array([w[0] for w in windows_s], dtype=np.float64)
    end = np.array([w[1] for w in windows_s], dtype=np.float64)
    written_start = epoch_s + start  # time.time() at begin_window
    elapsed = end - start
    # the converter's reading of the two times (ns); the device read each in [t, t + 1 us]
    start_ns = np.round(written_start * 1e9).astype(np.int64)
    end_ns = np.round((written_start + elapsed) * 1e9).astype(np.int64)
    read_start = counter.read_mj(_to_device_s(start_ns, origin_ns) + 0.5e-6)
    read_end = counter.read_mj(_to_device_s(end_ns, origin_ns) + 0.5e-6)
    joules = (read_end - read_start) / 1000.0
    lines = ["start_time,window_name,elapsed_time,gpu0_energy"]
    lines += [
        f"{s!r},{name},{e!r},{j!r}"
        for s, e, j in zip(written_start.tolist(), elapsed.tolist(), joules.tolist(), strict=True)
    ]
    return SyntheticLog("\n".join(lines) + "\n", "zeus", origin_ns)


def codecarbon_csv(
    counter: EnergyCounter,
    every_s: float = 15.0,
    start_offset_s: float = 0.0,
    run_id: str = "9adda612-4ce8-49d0-9a55-e3b071a7b885",
) -> SyntheticLog:
    """CodeCarbon's ``emissions.csv`` of one tracker started at the run's start and stopped at its
    end: a line every ``every_s`` and one at the stop, ``gpu_energy`` the counter's change since
    the start (kWh), ``timestamp`` the write time truncated to the second; ``start_offset_s``: where
    the run starts in its wall-clock second. The timestamps place the log only to the second, so
    ``origin_ns`` is where the converter places the tracker's start: its first line's second less
    that line's duration (the reads after it by their durations)."""
    run_s = counter.pattern.run_s
    times = np.arange(every_s, run_s, every_s)
    times = np.append(times[run_s - times > 1e-9], run_s)
    origin_ns = START_NS + round(start_offset_s * _S)
    kwh = (counter.read_mj(times) - counter.read_mj(0.0)) / 3.6e9
    seconds = (origin_ns + np.round(times * 1e9).astype(np.int64)) // _S
    stamps = np.datetime_as_string(seconds.astype("datetime64[s]"), unit="s")
    header = (
        "timestamp,project_name,run_id,duration,emissions,emissions_rate,cpu_power,gpu_power,ram_power,"
        "cpu_energy,gpu_energy,ram_energy,energy_consumed,country_name,country_iso_code,region,cloud_provider,"
        "cloud_region,os,python_version,codecarbon_version,cpu_count,cpu_model,gpu_count,gpu_model,longitude,"
        "latitude,ram_total_size,tracking_mode,on_cloud,pue"
    )
    lines = [header]
    for stamp, t, gpu in zip(stamps.tolist(), times.tolist(), kwh.tolist(), strict=True):
        cpu, ram = 42.5 * t / 3.6e6, 10.0 * t / 3.6e6
        lines.append(
            f"{stamp},codecarbon,{run_id},{t!r},0.001,1e-06,42.5,300.0,10.0,{cpu!r},{gpu!r},{ram!r},"
            f"{cpu + gpu + ram!r},Canada,CAN,quebec,,,Linux,3.11.7,2.3.5,16,Intel(R) Xeon(R),1,"
            "1 x NVIDIA H100,-71.2,46.8,128.0,machine,N,1.0"
        )
    # the converter places the tracker's start by its first line, to the second, less that line's duration
    placed_ns = int(seconds[0]) * _S - round(float(times[0]) * _S)
    return SyntheticLog("\n".join(lines) + "\n", "codecarbon", placed_ns)


def dmon_sample_times(
    run_s: float, delay_s: float, offset_s: float = 0.0, jitter_s: float = 0.0, seed: int = 0
) -> NDArray[np.float64]:
    """When ``dcgmi dmon -d DELAY`` started with the run takes its samples (s): sample k at ``k DELAY +
    offset_s`` plus a uniform jitter below ``jitter_s``, kept inside its slot ``[k D, (k + 1) D)``;
    as many samples as whole delays fit in the run."""
    k = np.arange(
        int(round(run_s / delay_s)) if abs(run_s / delay_s - round(run_s / delay_s)) < 1e-9 else int(run_s // delay_s)
    )
    jitter = np.random.default_rng(seed).uniform(0.0, jitter_s, k.size) if jitter_s > 0 else 0.0
    return np.asarray(k * delay_s + np.clip(offset_s + jitter, 0.0, delay_s * (1 - 1e-9)), dtype=np.float64)


def dcgm_dmon(
    counter: EnergyCounter | None, gauge: PowerGauge | None, delay_s: float, sample_s: ArrayLike, header_every: int = 50
) -> SyntheticLog:
    """``dcgmi dmon -e 155,156 -d DELAY`` of GPU 0: ``POWER`` from ``gauge`` and ``TOTEC`` from
    ``counter`` (either may be None: that field is not logged) read at ``sample_s`` (s; sample k
    must lie in ``[k DELAY, (k + 1) DELAY)``, :func:`dmon_sample_times`); the header pair repeats
    every ``header_every`` samples. The converter places the log's start at t = 0 (ns 0)."""
    t = np.asarray(sample_s, dtype=np.float64)
    k = np.arange(t.size)
    if np.any(t < k * delay_s) or np.any(t >= (k + 1) * delay_s):
        raise ValueError("sample k must be taken in [k delay_s, (k + 1) delay_s)")
    tags = [tag for tag, source in (("POWER", gauge), ("TOTEC", counter)) if source is not None]
    if not tags:
        raise ValueError("log at least one of the power gauge and the energy counter")
    cells = []
    if gauge is not None:
        cells.append([f"{w:<14.3f}" for w in gauge.read_w(t).tolist()])
    if counter is not None:
        cells.append([str(v) for v in counter.read_mj(t).tolist()])
    head = [
        "#Entity   " + " ".join(f"{tag:<14}" for tag in tags).rstrip(),
        "ID        " + " ".join(f"{'W' if tag == 'POWER' else 'mJ':<14}" for tag in tags).rstrip(),
    ]
    lines: list[str] = []
    for i, row in enumerate(zip(*cells, strict=True)):
        if i % header_every == 0:
            lines += head
        lines.append("GPU 0     " + " ".join(row).rstrip())
    return SyntheticLog("\n".join(lines) + "\n", "dcgm", 0)


def smi_poll_times(
    run_s: float, poll_s: float, latency_s: float = 0.002, jitter_s: float = 0.0, seed: int = 0
) -> NDArray[np.float64]:
    """When ``nvidia-smi -lms POLL`` started with the run queries (s): at ``k POLL + latency_s`` plus
    a uniform jitter below ``jitter_s``, for k = 0 .. run_s / POLL (the last poll at the run's end)."""
    k = np.arange(int(np.floor(run_s / poll_s + 1e-9)) + 1)
    jitter = np.random.default_rng(seed).uniform(0.0, jitter_s, k.size) if jitter_s > 0 else 0.0
    return np.asarray(k * poll_s + latency_s + jitter, dtype=np.float64)


def nvidia_smi_csv(
    gauge: PowerGauge, poll_s: ArrayLike, units_in_cells: bool = True, start_offset_s: float = 0.0
) -> SyntheticLog:
    """``nvidia-smi --query-gpu=timestamp,power.draw --format=csv[,nounits] -lms D`` of one GPU
    queried at ``poll_s`` (s of the run, increasing; :func:`smi_poll_times`): the timestamp is the
    query's time truncated to the millisecond, ``power.draw`` the gauge's reading to 0.01 W."""
    t = np.asarray(poll_s, dtype=np.float64)
    origin_ns = START_NS + round(start_offset_s * _S)
    ms = (origin_ns + np.round(t * 1e9).astype(np.int64)) // 1_000_000
    stamps = np.datetime_as_string(ms.astype("datetime64[ms]"), unit="ms")
    unit = " W" if units_in_cells else ""
    lines = ["timestamp, power.draw [W]"]
    lines += [
        f"{s[:4]}/{s[5:7]}/{s[8:10]} {s[11:]}, {w:.2f}{unit}"
        for s, w in zip(stamps.tolist(), gauge.read_w(t).tolist(), strict=True)
    ]
    return SyntheticLog("\n".join(lines) + "\n", "nvidia-smi", origin_ns)


__all__ = [
    "START",
    "START_NS",
    "SyntheticLog",
    "codecarbon_csv",
    "dcgm_dmon",
    "dmon_sample_times",
    "nvidia_smi_csv",
    "smi_poll_times",
    "zeus_csv",
]
