"""``collect run`` on monitored plans: the example stops early, and kill -9 at random moments leaves the
run ledger and the look ledger consistent, a resume reaching what an uninterrupted run reaches."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import gates
from collect.ledger.looks import read_looks, verify_looks
from collect.ledger.store import read_ledger, verify_chain
from prereg.api import freeze
from tests.conftest import OWN_EXAMPLES
from tests.helpers.looks import plan_text

pytestmark = [pytest.mark.slow, pytest.mark.subprocess]

CLI = "import sys; from prereg_toolkit_cli.collect import main; sys.exit(main(sys.argv[1:]))"


def collect(*args: str, **kw) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", CLI, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True, **kw
    )


def test_the_example_stops_early(tmp_path):
    lock = freeze(OWN_EXAMPLES / "monitored.yaml", tmp_path / "monitored.lock.json")
    proc = collect("run", str(lock.path), "--out", str(tmp_path / "runs"), "--json")
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err
    summary = json.loads(out)["monitoring"]
    assert summary["stopped"] == "success" and summary["stopped_at_look"] < 3 and summary["runs_saved"] > 0
    ev = gates.read_evaluation(tmp_path / "runs" / "evaluation.json")
    assert ev.decision == "supported" and ev.monitoring.status == "decision"
    assert ev.monitoring.action == "stop_success"
    proc = collect("run", str(lock.path), "--out", str(tmp_path / "runs"))  # a re-run runs nothing more
    out, _ = proc.communicate(timeout=600)
    assert proc.returncode == 0 and b"nothing to run" in out


def _consistent(runs: Path) -> None:
    ledger = read_ledger(runs)
    assert verify_chain(ledger, check_traces=False).ok
    complete = [r.run_id for r in ledger.records if r.status == "complete"]
    assert len(complete) == len(set(complete)), "a run recorded twice"
    looks = read_looks(runs)
    assert verify_looks(looks, ledger.hashes).ok


def _outcome(runs: Path) -> list[tuple]:
    """Each planned look's decision, from the look ledger (the last record of each look)."""
    last = {r.look: r for r in read_looks(runs).records if r.status == "decision"}
    return [(k, r.decision, r.action, r.ledger_records) for k, r in sorted(last.items())]


def test_kill_9_at_random_moments_then_resume(tmp_path):
    text = plan_text(looks="[4, 8, 12]", spending="obrien_fleming", margin="0.5")  # never passes: every look runs
    (tmp_path / "k.yaml").write_text(text)
    lock = freeze(tmp_path / "k.yaml")
    reference = tmp_path / "reference"
    proc = collect("run", str(lock.path), "--out", str(reference))
    proc.communicate(timeout=600)
    assert proc.returncode == 0
    expected = _outcome(reference)
    assert [k for k, *_ in expected] == [1, 2, 3]
    rng = random.Random(27)
    killed = 0
    for trial in range(4):
        runs = tmp_path / f"trial{trial}"
        for _ in range(3):  # up to three kills per trial, each at a random moment
            proc = collect("run", str(lock.path), "--out", str(runs), "--resume")
            time.sleep(rng.uniform(0.2, 2.0))
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                killed += 1
            proc.communicate(timeout=600)
            if runs.exists() and (runs / "ledger.jsonl").exists():
                _consistent(runs)
        proc = collect("run", str(lock.path), "--out", str(runs), "--resume")
        _, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err
        _consistent(runs)
        assert _outcome(runs) == expected
        assert not list(runs.glob("*.tmp")) and not (runs / ".ledger.pending").exists()
    assert killed >= 3  # the kills really interrupted something
