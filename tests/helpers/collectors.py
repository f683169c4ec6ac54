"""Collectors for engine tests only (registered by the tests, never by the toolkit), with their dotted names."""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np

from collect.collectors.base import Collector, Param, RunContext, RunResult

SLOW = "tests.helpers.collectors:SlowCollector"
CRASH_ONCE = "tests.helpers.collectors:CrashOnceCollector"


class SlowCollector(Collector):
    """Sleeps ``sleep_ms``, then reports a value drawn from the seed plus an arm offset."""

    name = "test.slow"
    PARAMS = {
        "sleep_ms": Param(float, 0.0, "how long a run takes, ms", lambda v: v >= 0, "must be >= 0"),
        "offset": Param(float, 0.0, "added to the value"),
        "fail": Param(bool, False, "raise instead of finishing"),
        "site": Param(int, 0, "a stratum factor the collector reads"),
    }
    METRICS = {"value": "unit", "seed_echo": "1"}

    def run(self, ctx: RunContext) -> RunResult:
        time.sleep(ctx.params["sleep_ms"] / 1000)
        if ctx.params["fail"]:
            raise RuntimeError("injected failure")
        noise = float(np.random.default_rng(ctx.seed).normal())
        path = ctx.trace_path("events.jsonl")
        path.write_text('{"kind": "compute"}\n')
        return RunResult(
            metrics={"value": noise + ctx.params["offset"], "seed_echo": float(ctx.seed % 1000)}, traces=[path.name]
        )


class CrashOnceCollector(SlowCollector):
    """``SlowCollector``, counting each run's attempts in ``marks/<run_id>.attempts``; while the file
    ``marks/armed`` exists, a run of stratum ``crash_site`` x seed ``crash_seed`` ends its process
    (``os._exit``, as a segfault or the OOM killer would) on its first attempt."""

    name = "test.crash_once"
    PARAMS = {
        **SlowCollector.PARAMS,
        "marks": Param(str, "", "folder of the attempt marks"),
        "crash_site": Param(int, -1, "the site whose runs crash once"),
        "crash_seed": Param(int, -1, "the seed whose runs crash once"),
    }

    def run(self, ctx: RunContext) -> RunResult:
        marks = Path(ctx.params["marks"])
        with open(marks / f"{ctx.run_id}.attempts", "a") as f:
            f.write("attempt\n")
        attempts = len((marks / f"{ctx.run_id}.attempts").read_text().splitlines())
        chosen = ctx.params["site"] == ctx.params["crash_site"] and ctx.stratum.get("seed") == ctx.params["crash_seed"]
        if chosen and attempts == 1 and (marks / "armed").exists():
            time.sleep(1.0)  # lets the worker finish reporting the record it yielded before (asynchronous)
            os._exit(1)
        return super().run(ctx)


def attempts(marks: Path) -> dict[str, int]:
    """Run id -> how often the run started."""
    return {p.name.removesuffix(".attempts"): len(p.read_text().splitlines()) for p in marks.glob("*.attempts")}


WHERE = "tests.helpers.collectors:WhereCollector"


class WhereCollector(SlowCollector):
    """``SlowCollector`` that appends, for every attempt of a run, the node's temporary folder
    (``TMPDIR``) to ``marks/<run_id>.attempts`` and the process id to ``marks/<run_id>.pids`` (instrumentation through a folder the test shares
    with its one-machine cluster), and writes a second trace of ``trace_bytes`` seeded bytes."""

    name = "test.where"
    PARAMS = {
        **SlowCollector.PARAMS,
        "marks": Param(str, "", "folder of the attempt marks"),
        "trace_bytes": Param(int, 0, "size of the extra trace, bytes", lambda v: 0 <= v <= 1 << 24, "0..16 MiB"),
    }

    def run(self, ctx: RunContext) -> RunResult:
        with open(Path(ctx.params["marks"]) / f"{ctx.run_id}.attempts", "a") as f:
            f.write(f"{os.environ.get('TMPDIR', '')}\n")
        with open(Path(ctx.params["marks"]) / f"{ctx.run_id}.pids", "a") as f:
            f.write(f"{os.getpid()}\n")
        result = super().run(ctx)
        if ctx.params["trace_bytes"]:
            blob = ctx.trace_path("blob.bin")
            blob.write_bytes(np.random.default_rng(ctx.seed).bytes(ctx.params["trace_bytes"]))
            result.traces.append(blob.name)
        return result


def pids_ran(marks: Path) -> set[int]:
    """The process ids that ran some attempt of some run."""
    return {int(line) for p in marks.glob("*.pids") for line in p.read_text().split()}


def where_ran(marks: Path) -> dict[str, list[str]]:
    """Run id -> the node folder (``TMPDIR``) of each of its attempts, in order."""
    return {p.name.removesuffix(".attempts"): p.read_text().splitlines() for p in marks.glob("*.attempts")}
