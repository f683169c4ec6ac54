"""The randomised kill test of benchmarks/bench_kill.py, 3 trials: nothing lost, duplicated or torn,
no orphaned workers, identical evaluations after kill -9 of collect run, collect import and gates evaluate."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_kill.py"

pytestmark = [pytest.mark.slow, pytest.mark.subprocess]  # kill -9 trials of the console scripts (bench_kill)


def test_kill_9_at_random_moments_loses_nothing(tmp_path):
    spec = importlib.util.spec_from_file_location("bench_kill", BENCH)
    assert spec and spec.loader
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    report = bench.kill_trials(3, seed=12, work=tmp_path)
    total = report["total"]
    assert total["killed"] >= 3, report  # the kills really interrupted something
    for key in (
        "orphans",
        "lost",
        "duplicated",
        "torn_parsed",
        "chain_broken",
        "failed_reruns",
        "evaluations_differ",
        "torn_artifacts",
    ):
        assert total[key] == 0, (key, report["trials"])
