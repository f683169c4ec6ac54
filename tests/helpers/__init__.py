"""Helpers shared by the tests: console scripts, synthetic run tables, processes, optional dependencies."""

from __future__ import annotations

import csv
import importlib.util
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent


def requires(module: str) -> pytest.MarkDecorator:
    """Skip where ``module`` is not installed, without importing it (collection stays light)."""
    return pytest.mark.skipif(importlib.util.find_spec(module) is None, reason=f"{module} is not installed")


def run(
    *args: str, cwd: Path | None = None, env: dict | None = None, timeout: float = 600
) -> subprocess.CompletedProcess:
    """Run an installed console script; never accept a traceback (``timeout`` only catches a hang)."""
    exe = BIN / args[0] if (BIN / args[0]).exists() else shutil.which(args[0])
    assert exe, f"console script {args[0]} is not installed"
    proc = subprocess.run(
        [str(exe), *args[1:]],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )
    assert "Traceback" not in proc.stderr + proc.stdout, proc.stderr
    return proc


STUDY_TIMEOUT_S = 1800  # only to catch a hang: an example of 48 torch runs takes under a minute on an idle machine


def freeze_collect_evaluate(plan: Path, work: Path, runs: str = "runs") -> list[subprocess.CompletedProcess]:
    """An example plan as its header says, in ``work``: frozen, collected with two jobs into ``work/runs``,
    evaluated on a plain 80-column terminal; the three finished console scripts."""
    lock = work / f"{plan.stem}.lock.json"
    frozen = run("prereg", "freeze", str(plan), "-o", str(lock), cwd=work)
    collected = run(
        "collect", "run", str(lock), "--out", str(work / runs), "--jobs", "2", cwd=work, timeout=STUDY_TIMEOUT_S
    )
    plain = {"NO_COLOR": "1", "COLUMNS": "80"}
    report = run("gates", "evaluate", str(lock), str(work / runs), cwd=work, env=plain, timeout=STUDY_TIMEOUT_S)
    return [frozen, collected, report]


@contextmanager
def interruptible_children() -> Iterator[None]:
    """Children started inside the block get SIGINT's default action (Python turns it into
    KeyboardInterrupt), even when this test process inherited SIGINT ignored -- as every command a
    non-interactive shell starts in the background (``cmd &``) does, and its children after it."""
    inherited = signal.getsignal(signal.SIGINT)
    if inherited is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)  # a handler: reset to the default by exec
    try:
        yield
    finally:
        if inherited is signal.SIG_IGN:
            signal.signal(signal.SIGINT, signal.SIG_IGN)


def write_csv(path: Path, rows: list[dict]) -> Path:
    """Write rows (dicts with the same keys) as a CSV table."""
    with open(path, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


def equal_work_rows(nll_shift: float = 0.005, energy_ratio: float = 0.9, updates: int = 50) -> list[dict]:
    """A deterministic table of runs for the shared equal-work plan (2 arms x 6 strata)."""
    rows = []
    jitter = [0.003, -0.002, 0.001, -0.004, 0.002, 0.0]
    i = 0
    for site in (0, 1, 2):
        for seed in (101, 102):
            base = 2.5 + jitter[i]
            for arm in ("fixed", "adaptive"):
                adaptive = arm == "adaptive"
                rows.append(
                    {
                        "arm": arm,
                        "outage_site": site,
                        "seed": seed,
                        "final_nll": round(base + (nll_shift + jitter[5 - i] / 4 if adaptive else 0.0), 6),
                        "attempted_flop": 1e15 * (0.9 * (1 + jitter[(i + 1) % 6]) if adaptive else 1 + jitter[i]),
                        "ticks": 100 + i,
                        "energy": 5000.0
                        * (energy_ratio * (1 + jitter[(i + 3) % 6]) if adaptive else 1 + jitter[(i + 2) % 6]),
                        "energy_counter.updates": updates,
                        "energy_counter.effective_period_ms": 100,
                        "energy_counter.bound": 1.0,
                    }
                )
            i += 1
    return rows


def children(pid: int) -> list[int]:
    """Live (non-zombie) processes whose parent is ``pid`` (Linux /proc)."""
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid and fields[0] != "Z":
                out.append(int(entry.name))
    return out


def alive(pid: int) -> bool:
    """Whether ``pid`` is a live (non-zombie) process."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def frozen_shared(tmp_path: Path, name: str = "equal-work.yaml", text: str | None = None) -> Path:
    """Freeze a shared example plan (or ``text`` in its place) in ``tmp_path``; the lock's path."""
    from tests.conftest import shared_example_path

    plan = tmp_path / name
    if text is None:
        plan.write_bytes(shared_example_path(name).read_bytes())
    else:
        plan.write_text(text)
    proc = run("prereg", "freeze", str(plan))
    assert proc.returncode == 0, proc.stderr
    return plan.with_name(plan.stem + ".lock.json")


def imported_equal_work(tmp_path: Path, lock: Path) -> Path:
    """Import the deterministic equal-work table under ``lock`` into ``tmp_path/runs``."""
    table = write_csv(tmp_path / "runs.csv", equal_work_rows())
    proc = run("collect", "import", str(table), "--lock", str(lock), "--out", str(tmp_path / "runs"))
    assert proc.returncode == 0, proc.stderr
    return tmp_path / "runs"
