"""Start-up time of the console scripts' ``--help`` against a bare interpreter, in one run.

Run: python benchmarks/bench_cli_startup.py [--repeats N]

The commands run interleaved, N rounds (default 21), so a load change hits every command alike; each
line gives the min and median wall time in ms and their ratios to ``python -c pass`` (goal: --help
within 1.5x). Two tables: bytecode cached as in an installed toolkit (a temporary
``PYTHONPYCACHEPREFIX``), and no bytecode cache (``PYTHONDONTWRITEBYTECODE=1``: every module compiled
at each start). A plan validation is timed too, for scale.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def wall_ms(cmd: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, capture_output=True, check=False, env=env)
    return (time.perf_counter() - start) * 1000


def table(commands: dict[str, list[str]], env: dict[str, str], repeats: int, title: str) -> None:
    times: dict[str, list[float]] = {label: [] for label in commands}
    for cmd in commands.values():  # write the bytecode (where cached) and warm the file cache, untimed
        wall_ms(cmd, env)
    for _ in range(repeats):
        for label, cmd in commands.items():
            times[label].append(wall_ms(cmd, env))
    base_min, base_median = min(times["python -c pass"]), statistics.median(times["python -c pass"])
    print(f"{title} ({repeats} rounds)")
    print(f"{'command':28s} {'min ms':>7s} {'median ms':>9s} {'x min':>6s} {'x median':>8s}")
    for label, ms in times.items():
        low, mid = min(ms), statistics.median(ms)
        print(f"{label:28s} {low:7.1f} {mid:9.1f} {low / base_min:6.2f} {mid / base_median:8.2f}")
    print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=21)
    args = parser.parse_args()
    bindir = Path(sys.executable).parent

    def script(name: str) -> str:
        return str(bindir / name) if (bindir / name).exists() else shutil.which(name) or name

    example = str(REPO / "examples" / "multisite-recovery.yaml")
    commands = {"python -c pass": [sys.executable, "-c", "pass"]}
    commands |= {f"{name} --help": [script(name), "--help"] for name in ("prereg", "collect", "gates", "reports")}
    commands["prereg validate (example)"] = [script("prereg"), "validate", example]
    with tempfile.TemporaryDirectory(prefix="pycache-") as pycache:
        cached = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        cached["PYTHONPYCACHEPREFIX"] = pycache
        table(commands, cached, args.repeats, "bytecode cached (as installed)")
    uncached = {k: v for k, v in os.environ.items() if k != "PYTHONPYCACHEPREFIX"}
    uncached["PYTHONDONTWRITEBYTECODE"] = "1"
    table(commands, uncached, args.repeats, "no bytecode cache (PYTHONDONTWRITEBYTECODE=1)")


if __name__ == "__main__":
    main()
