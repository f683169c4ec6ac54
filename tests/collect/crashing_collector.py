"""A collector whose chosen runs kill their worker process on their first attempt (engine tests only)."""

from __future__ import annotations

import os
import time
from pathlib import Path

from collect.collectors.base import Param, RunContext, RunResult
from tests.collect.fake_collectors import SlowCollector


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
