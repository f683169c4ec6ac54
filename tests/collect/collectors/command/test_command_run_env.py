"""A command run's environment and provenance, as recorded: thread counts from the run's CPUs (the
user's setting kept), and the Python of the program's own interpreter."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from collect.collectors.base import RunContext
from collect.collectors.command.collector import CommandCollector
from collect.collectors.command.identity import ASKED

pytestmark = pytest.mark.slow  # each test starts the program (and asks its interpreter)

PROGRAM = textwrap.dedent("""
    import json, os
    json.dump({"omp": float(os.environ["OMP_NUM_THREADS"]), "mkl": float(os.environ["MKL_NUM_THREADS"])},
              open(os.environ["PREREG_METRICS"], "w"))
""")


def _run(tmp_path: Path, num_cpus: float) -> tuple[dict, dict]:
    (tmp_path / "prog.py").write_text(PROGRAM)
    (tmp_path / "traces").mkdir(exist_ok=True)
    params = CommandCollector.check_run(
        {"argv": [sys.executable, "prog.py"], "workdir": str(tmp_path), "code": ["prog.py"], "metrics": ["omp", "mkl"]},
        {},
    )
    result = CommandCollector().run(
        RunContext("r1", params, 1, {}, "a", 0, tmp_path / "traces", resources={"num_cpus": num_cpus})
    )
    return result.metrics, result.info


def test_threads_follow_the_runs_cpus_and_the_users_setting_wins(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.delenv("MKL_NUM_THREADS", raising=False)
    metrics, info = _run(tmp_path, 2.5)
    assert metrics == {"omp": 2.0, "mkl": 2.0}
    assert info["threads"]["num_cpus"] == 2 and info["threads"]["set"]["OMP_NUM_THREADS"] == "2"
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    metrics, info = _run(tmp_path, 2.5)
    assert metrics == {"omp": 3.0, "mkl": 2.0}
    assert info["threads"]["kept"] == {"OMP_NUM_THREADS": "3"} and "OMP_NUM_THREADS" not in info["threads"]["set"]


def test_the_programs_own_interpreter_is_asked(tmp_path: Path) -> None:
    _, info = _run(tmp_path, 1)
    command = info["command"]
    assert command["source"] == ASKED and command["interpreter"]
    assert command["python"]["version"] == ".".join(map(str, sys.version_info[:3]))
