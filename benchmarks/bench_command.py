"""The ``command`` collector's overhead per run, against launching the same program bare.

Run from the repository root (inside the venv):
    python benchmarks/bench_command.py [--runs 20] [--rounds 7]

The program is a few lines of Python that writes one metric to ``$PREREG_METRICS`` (standard
library only, so its own time is the interpreter's start-up). Each round times, in shuffled order:

* ``bare``: ``--runs`` launches of ``python prog.py --seed N`` with ``subprocess.run``, the metrics
  file named by ``PREREG_METRICS`` as the collector would (the program does the same work);
* ``supervised``: the same launches under the collector's supervisor alone
  (``python -I -S collect/collectors/command/supervisor.py PID python prog.py ...``): the share of
  the overhead that keeps no process alive after its run;
* ``command``: one ``collect.engine.runner.run_plan`` of a plan with ``--runs`` runs of the same
  program through the ``command`` collector, one job: per run the supervisor, the run's folder and
  ``run.json``, the metrics and marks read, stdout/stderr kept, code identity (the program hashed,
  the git state, package versions), every trace hashed and the record appended (fsynced), plus
  the plan's expansion and the runs folder's lock once per round, shared by its runs.

Printed per round and over rounds (median [range]): ms per run of each, the overhead (command -
bare, ms per run) and the ratio (command / bare), both taken inside each round, and the load
average. Target: overhead < 100 ms per run.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import collect.engine.runner as engine  # noqa: E402
from collect.collectors.command.process import SUPERVISOR  # noqa: E402
from collect.ledger.store import read_ledger  # noqa: E402
from prereg.plan import parse_plan  # noqa: E402

PROGRAM = """import json, os, sys
seed = int(sys.argv[sys.argv.index("--seed") + 1])
with open(os.environ["PREREG_METRICS"], "w") as f:
    json.dump({"value": (seed % 1000) / 1000.0}, f)
"""

PLAN = """schema: prereg/v1
study: bench-command
title: Overhead of the command collector
hypothesis: Arm b's value equals arm a's.
experiment:
  collector: collect.collectors.command.collector:CommandCollector
  params:
    argv: [{python}, prog.py, --seed, "{{seed}}"]
    code: [prog.py]
arms:
  a: {{}}
  b: {{}}
strata:
  factors:
    i: [{levels}]
  replicates: 1
metrics:
  value: {{unit: unit, better: higher, evidence: measured}}
gates:
  - {{id: same, metric: value, contrast: b - a, method: t, confidence: 0.9, pass_if: lower > -1}}
decision: {{claim: same}}
"""


def bare(work: Path, runs: int, supervised: bool = False) -> float:
    """Seconds per launch of the program, bare (or under the supervisor alone)."""
    metrics = work / "bare-metrics.json"
    env = {**os.environ, "PREREG_METRICS": str(metrics)}
    head = [sys.executable, "-I", "-S", SUPERVISOR, str(os.getpid())] if supervised else []
    start = time.perf_counter()
    for seed in range(runs):
        proc = subprocess.run(
            [*head, sys.executable, "prog.py", "--seed", str(seed)], cwd=work, env=env, capture_output=True, check=False
        )
        assert proc.returncode == 0, proc.stderr
    elapsed = (time.perf_counter() - start) / runs
    assert "value" in json.loads(metrics.read_text())
    return elapsed


def command(work: Path, runs: int, round_no: int) -> float:
    """Seconds per run through the command collector (run_plan, one job)."""
    assert runs % 2 == 0, "two arms: an even number of runs"
    text = PLAN.format(python=json.dumps(sys.executable), levels=", ".join(str(i) for i in range(runs // 2)))
    lp = parse_plan(text.encode())
    out = work / f"runs-{round_no}"
    cwd = os.getcwd()
    os.chdir(work)  # the collector's workdir: prog.py and its code glob
    try:
        start = time.perf_counter()
        summary = engine.run_plan(lp.plan, lp.plan_sha256, out, jobs=1)
        elapsed = (time.perf_counter() - start) / runs
    finally:
        os.chdir(cwd)
    assert (summary.completed, summary.failed) == (runs, 0)
    assert len(read_ledger(out).records) == runs
    return elapsed


def spread(values: list[float], fmt: str) -> str:
    return f"{statistics.median(values):{fmt}} [{min(values):{fmt}}-{max(values):{fmt}}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20, help="runs per condition per round (even)")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--seed", type=int, default=0, help="shuffles the order within rounds")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory(prefix="bench-command-") as tmp:
        work = Path(tmp)
        (work / "prog.py").write_text(PROGRAM)
        bare(work, 4)  # warm the page cache and the interpreter's files
        command(work, 4, -1)
        bares, supervised, commands, overheads, ratios = [], [], [], [], []
        print(
            f"{'round':>5s} {'bare ms/run':>12s} {'supervised':>11s} {'command ms/run':>15s} {'overhead ms':>12s} "
            f"{'ratio':>6s}"
        )
        conditions = {
            "bare": lambda r: bare(work, args.runs),
            "supervised": lambda r: bare(work, args.runs, True),
            "command": lambda r: command(work, args.runs, r),
        }
        for r in range(args.rounds):
            order = list(conditions)
            rng.shuffle(order)
            times = {c: conditions[c](r) * 1e3 for c in order}
            b, s, c = times["bare"], times["supervised"], times["command"]
            bares.append(b)
            supervised.append(s)
            commands.append(c)
            overheads.append(c - b)
            ratios.append(c / b)
            print(f"{r:5d} {b:12.1f} {s:11.1f} {c:15.1f} {c - b:12.1f} {c / b:6.2f}")
        load = os.getloadavg()
    print(f"bare       {spread(bares, '.1f')} ms per run")
    print(f"supervised {spread(supervised, '.1f')} ms per run (the supervisor alone)")
    print(f"command    {spread(commands, '.1f')} ms per run")
    print(f"overhead   {spread(overheads, '.1f')} ms per run (command - bare, within each round; target < 100 ms)")
    print(f"ratio      {spread(ratios, '.2f')} (command / bare, within each round)")
    print(
        f"{args.runs} runs per condition per round, {args.rounds} rounds; load average "
        f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; python {sys.version.split()[0]}"
    )


if __name__ == "__main__":
    main()
