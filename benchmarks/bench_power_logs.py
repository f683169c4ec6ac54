"""How fast is a 1M-row nvidia-smi log converted, next to what a user would otherwise run?

Run: python benchmarks/bench_power_logs.py [--rows N] [--repeats R]   (the baseline needs pandas)

The log: ``nvidia-smi --query-gpu=timestamp,index,power.draw,power.draw.instant,utilization.gpu,memory.used
--format=csv -lms 100`` as the tool writes it (units in cells, ``[N/A]`` in one poll of 1000), N
rows of one GPU, power updating every 100 ms; written once to a temporary folder.

* ours: ``collect.telemetry.logs.formats.convert_log`` (every cell parsed with its unit, N/A kept
  unavailable, time order checked, the trace built) plus the energy with bounds of the whole log
  from the 1 s averaged power (``energy_from_power``) and its effective update period;
* baseline: ``pandas.read_csv`` of the same file (``skipinitialspace``, ``[N/A]`` as NaN, the
  units stripped with ``str.removesuffix``), timestamps parsed with ``pd.to_datetime`` and a numpy
  trapezoid integral of ``power.draw``. What the baseline does not do: it integrates a 1 s moving
  average as if it were instantaneous power, treats the N/A poll as interpolable, gives no bound,
  does not measure how often the value really changed, and checks neither time order nor the units.

Printed: the best of R runs of each (s) and the ratio ours / baseline. Target: ours < 3 s at 1M rows.

``--memory``: instead, the peak resident memory of converting the log (``convert_log``) and of
converting and writing its trace (``convert_to_trace``, what ``collect telemetry`` does), each in a
fresh child process (its ``VmHWM``, Linux), less the child's peak after the imports alone; printed
in MiB and as a multiple of the log's size.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np


def write_log(path: Path, rows: int) -> None:
    """A 1-GPU nvidia-smi CSV log of ``rows`` polls (vectorised; the curve of collect/telemetry/logs/synthetic.py)."""
    t = np.arange(rows) * 0.1 + 0.003
    u = np.floor(t * 10) / 10
    swing = 250 + 80 * np.sin(2 * np.pi * u / 7) + 60 * (np.floor(u / 3) % 2)
    start = datetime(2026, 12, 3, 10, 15, 1, tzinfo=UTC).timestamp()
    ms = np.round((start + t) * 1000).astype("int64").astype("datetime64[ms]")
    stamps = np.datetime_as_string(ms, unit="ms")
    lines = ["timestamp, index, power.draw [W], power.draw.instant [W], utilization.gpu [%], memory.used [MiB]"]
    draw = [f"{v:.2f} W" for v in swing]
    for i in range(0, rows, 1000):
        draw[i] = "[N/A]"
    lines += [
        f"{s.replace('-', '/').replace('T', ' ')}, 0, {d}, {p:.2f} W, 87 %, 40960 MiB"
        for s, d, p in zip(stamps, draw, swing, strict=True)
    ]
    path.write_text("\n".join(lines) + "\n")


def ours(path: Path) -> float:
    from collect.telemetry.analysis.bounds import energy_from_power
    from collect.telemetry.analysis.resolution import update_period
    from collect.telemetry.logs.formats import convert_log

    trace = convert_log(path, "nvidia-smi")
    mark = trace.phase("log")
    energy = energy_from_power(trace, mark.start_ns, mark.end_ns, 0.0, 2000.0, "power_average")
    update_period(trace, "power_average")
    return energy.estimate_j


def baseline(path: Path) -> float:
    import pandas as pd

    frame = pd.read_csv(path, skipinitialspace=True, na_values=["[N/A]"])
    power = frame["power.draw [W]"].astype(str).str.removesuffix(" W").astype(float).to_numpy()
    stamps = pd.to_datetime(frame["timestamp"], format="%Y/%m/%d %H:%M:%S.%f").dt.as_unit("ns")
    seconds = stamps.astype("int64").to_numpy() / 1e9
    ok = np.isfinite(power)
    return float(np.trapezoid(power[ok], seconds[ok]))


_CHILD = """
import sys
from collect.telemetry.logs.formats import convert_log, convert_to_trace
def hwm():  # the process's peak resident memory, KiB (Linux; unlike ru_maxrss, not inherited from a parent)
    return next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:"))
if sys.argv[1] == "write":
    try:  # the trace writer's lazy import: a fixed cost, not one that grows with the log
        import pyarrow.parquet  # noqa: F401
    except ImportError:
        pass
base = hwm()
if sys.argv[1] == "convert":
    convert_log(sys.argv[2], "nvidia-smi")
else:
    convert_to_trace(sys.argv[2], sys.argv[3], "nvidia-smi")
print(base, hwm())
"""


def peak_mib(path: Path, what: str, out: Path) -> float:
    """Peak resident memory (MiB) of ``what`` on the log in a fresh child, above its imports' peak."""
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, what, str(path), str(out)], capture_output=True, text=True, check=True
    )
    base_kib, peak_kib = map(int, proc.stdout.split())
    return (peak_kib - base_kib) / 1024


def memory(rows: int) -> None:
    """Print the peak memory of converting (and writing) a ``rows``-poll log (module doc)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "gpu.nvidia-smi.csv"
        write_log(path, rows)
        size = path.stat().st_size / 2**20
        print(f"nvidia-smi log: {rows:,} rows, {size:.1f} MiB")
        for what, label in (("convert", "convert_log"), ("write", "convert_to_trace (collect telemetry)")):
            mib = peak_mib(path, what, Path(tmp) / "trace")
            print(f"{label}: peak {mib:.0f} MiB above the imports, {mib / size:.1f}x the log")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--memory", action="store_true", help="peak memory instead of time (module doc)")
    args = parser.parse_args()
    if args.memory:
        memory(args.rows)
        return
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "gpu.nvidia-smi.csv"
        write_log(path, args.rows)
        size = path.stat().st_size / 2**20
        timings: dict[str, list[float]] = {"ours": [], "baseline": []}
        results: dict[str, float] = {}
        for _ in range(args.repeats):
            for name, fn in (("ours", ours), ("baseline", baseline)):
                t0 = time.perf_counter()
                results[name] = fn(path)
                timings[name].append(time.perf_counter() - t0)
        best = {k: min(v) for k, v in timings.items()}
        print(f"nvidia-smi log: {args.rows:,} rows, {size:.1f} MiB; best of {args.repeats}")
        print(
            f"ours (convert_log + energy with bounds + update period): {best['ours']:.2f} s, "
            f"energy {results['ours']:.6g} J"
        )
        print(
            f"baseline (pandas.read_csv + numpy trapezoid, no bounds): {best['baseline']:.2f} s, "
            f"energy {results['baseline']:.6g} J"
        )
        print(f"ratio ours / baseline: {best['ours'] / best['baseline']:.2f}")


if __name__ == "__main__":
    main()
