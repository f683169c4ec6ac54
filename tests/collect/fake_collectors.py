"""Collectors for engine tests only (registered by the tests, never by the toolkit)."""

from __future__ import annotations

import time

import numpy as np

from collect.collectors.base import Collector, Param, RunContext, RunResult


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
            metrics={"value": noise + ctx.params["offset"], "seed_echo": float(ctx.seed % 1000)},
            traces=[path.name],
        )
