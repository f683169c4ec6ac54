"""Start-up time of the console scripts, side by side with a bare interpreter and a plan validation.

Run: python benchmarks/bench_cli_startup.py [--repeats N]

Prints the median wall time of each command over N runs (default 15) and its ratio to
`python -c pass` (the floor any Python CLI pays). Target: `prereg --help` well under 0.3 s.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def median_seconds(cmd: list[str], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run(cmd, capture_output=True, check=False)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()
    bindir = Path(sys.executable).parent
    script = lambda name: str(bindir / name) if (bindir / name).exists() else shutil.which(name)  # noqa: E731
    example = str(REPO / "examples" / "multisite-recovery.yaml")
    commands = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "prereg --help": [script("prereg"), "--help"],
        "collect --help": [script("collect"), "--help"],
        "gates --help": [script("gates"), "--help"],
        "prereg validate (example)": [script("prereg"), "validate", example],
    }
    base = None
    print(f"{'command':30s} {'median s':>9s} {'x python':>9s}")
    for label, cmd in commands.items():
        t = median_seconds(cmd, args.repeats)
        base = base or t
        print(f"{label:30s} {t:9.3f} {t / base:9.2f}")


if __name__ == "__main__":
    main()
