"""The cost of a progress report (``collect.marks.step``) against logging the same line to a file.

Run from the repository root (inside the venv):
    python benchmarks/bench_progress.py [--reports 20000] [--rounds 5]

A program that runs under ``experiment.failures`` calls ``step(n, loss=...)`` after every step; each
call is a round trip on the collector's Unix socket (the program waits for the answer, so a fault
planned at step N lands exactly there). The collector's side here is the real one
(:class:`collect.collectors.command.injector.FaultInjector`, no fault planned, serving in this
process); the program is a child Python process, as under ``collect run``. Each round times, in
shuffled order, ``--reports`` calls of:

* ``step``: ``collect.marks.step(n, loss=...)`` with ``$PREREG_PROGRESS`` set (the round trip);
* ``logline``: what a training script does otherwise to record progress: one line appended and
  flushed to a log file per step (no answer awaited: it cannot place a fault at a step);
* ``nothing``: the loop alone.

Printed per round and over rounds (median [range]): microseconds per call of each, and the load
average. The peer does less: it tells nobody and waits for nothing.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from collect.collectors.command.injector import FaultInjector

CHILD = """
import os, sys, time
from collect.marks import step
mode, n, log = sys.argv[1], int(sys.argv[2]), sys.argv[3]
fh = open(log, "a")
t0 = time.perf_counter_ns()
for i in range(1, n + 1):
    if mode == "step":
        step(i, loss=1.0 / i)
    elif mode == "logline":
        fh.write(f"step {i} loss={1.0 / i!r}\\n"); fh.flush()
print((time.perf_counter_ns() - t0) / n / 1000.0)
"""


def one(mode: str, reports: int, folder: Path, injector: FaultInjector) -> float:
    """Microseconds per call of ``mode`` in a child process."""
    env = {k: v for k, v in os.environ.items() if k != "PREREG_PROGRESS"}
    if mode == "step":
        env["PREREG_PROGRESS"] = injector.path
    out = subprocess.run(
        [sys.executable, "-c", CHILD, mode, str(reports), str(folder / f"{mode}.log")],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return float(out.stdout.strip())


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--reports", type=int, default=20000)
    p.add_argument("--rounds", type=int, default=5)
    args = p.parse_args()
    modes = ["step", "logline", "nothing"]
    results: dict[str, list[float]] = {m: [] for m in modes}
    with tempfile.TemporaryDirectory() as tmp, FaultInjector([]) as injector:
        injector.begin_attempt(0, time.monotonic_ns())
        injector.set_pid(os.getpid())
        for r in range(args.rounds):
            order = random.sample(modes, len(modes))
            row = {m: one(m, args.reports, Path(tmp), injector) for m in order}
            for m in modes:
                results[m].append(row[m])
            print(
                f"round {r + 1}: "
                + ", ".join(f"{m} {row[m]:.2f} us" for m in modes)
                + f"; load {os.getloadavg()[0]:.2f}"
            )
        assert len(injector.reports) == args.reports * args.rounds  # every report reached the collector
    for m in modes:
        v = results[m]
        print(f"{m:8s} {statistics.median(v):7.2f} us per call [{min(v):.2f}, {max(v):.2f}]")


if __name__ == "__main__":
    main()
