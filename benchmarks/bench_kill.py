"""Randomised kill test: ``kill -9`` at random moments of collect run, collect import and gates evaluate.

Run: python benchmarks/bench_kill.py [--trials 20] [--seed 0] [--keep DIR]

Each trial, on its own folder:

1. ``collect run examples/multisite-recovery.yaml --jobs 2`` (48 simulator runs) is killed with
   SIGKILL at a uniformly random moment of its usual duration; its pool workers are recorded just
   before the kill. Then it is re-run to completion.
2. ``collect import`` of a 12-row table is killed the same way, then re-run (the import resumes).
3. ``gates evaluate`` is killed the same way, then re-run.

It counts, over all trials: records lost (planned cells without a complete record), duplicated
(a cell or run id twice), torn lines parsed as data (never: a torn line is only reported), ledger
chains that do not verify, orphaned workers (alive once their killed parent is gone; a generous
wait, only to catch a hang) and evaluations that differ from an uninterrupted reference (decision,
every gate's numbers and verdict, invalidators, paired rows). Prints one JSON line per trial and
a summary; exits 1 if any count is not zero. ``tests/test_kill.py`` runs 3 trials in CI.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.helpers import alive, children  # noqa: E402

PLAN = REPO / "examples" / "multisite-recovery.yaml"
IMPORT_PLAN = REPO / "examples" / "continuation.yaml"
IMPORT_TABLE = REPO / "examples" / "runs" / "continuation.csv"


def _script(name: str) -> str:
    local = Path(sys.executable).parent / name
    return str(local) if local.exists() else (shutil.which(name) or name)


def _run(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([_script(args[0]), *args[1:]], capture_output=True, text=True, timeout=timeout)


def kill_at_random(cmd: list[str], delay: float) -> tuple[bool, list[int]]:
    """Start ``cmd``, SIGKILL it after ``delay`` s (if still running); (killed, its children at the kill)."""
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + delay
    kids: list[int] = []
    while time.monotonic() < deadline and proc.poll() is None:
        kids = sorted(set(kids) | set(children(proc.pid)))
        time.sleep(0.01)
    killed = proc.poll() is None
    if killed:
        kids = sorted(set(kids) | set(children(proc.pid)))
        proc.send_signal(signal.SIGKILL)
    proc.wait()
    return killed, kids


def orphans(kids: list[int]) -> int:
    """Children still alive after their parent was killed (waits up to 60 s for them to go)."""
    for _ in range(600):
        left = [k for k in kids if alive(k)]
        if not left:
            return 0
        time.sleep(0.1)
    for k in left:
        os.kill(k, signal.SIGKILL)  # never leave them behind
    return len(left)


def comparable(evaluation: dict[str, Any]) -> dict[str, Any]:
    """What must be identical between evaluations of the same data (not times, paths or hashes)."""
    keep = ("decision", "decision_reason", "gates", "invalidators", "blocks", "groups", "runs")
    return {k: evaluation[k] for k in keep}


def ledger_counts(runs: Path, planned: int) -> dict[str, int]:
    """Lost, duplicated and torn-parsed records, and whether the chain verifies."""
    from collect.ledger.store import read_ledger, verify_chain

    ledger = read_ledger(runs)
    complete = [r for r in ledger.records if r.status == "complete"]
    cells = [json.dumps([r.stratum, r.arm, r.replicate], sort_keys=True) for r in complete]
    ids = [r.run_id for r in ledger.records]
    torn_parsed = sum(1 for p in ledger.problems if "torn" not in p.message and "not a JSON" not in p.message)
    return {
        "lost": planned - len(set(cells)),
        "duplicated": (len(cells) - len(set(cells))) + (len(ids) - len(set(ids))),
        "torn_parsed": torn_parsed,
        "chain_broken": int(not verify_chain(ledger).ok),
    }


def trial(work: Path, rng: random.Random, ref: dict[str, Any], timings: dict[str, float]) -> dict[str, Any]:
    """One trial of each kind; returns its counts."""
    out: dict[str, Any] = {"killed": 0}
    work.mkdir(parents=True, exist_ok=True)
    lock, runs = work / "ms.lock.json", work / "runs"
    shutil.copy(ref["lock"], lock)
    killed, kids = kill_at_random(
        [_script("collect"), "run", str(lock), "--out", str(runs), "--jobs", "2"], rng.uniform(0.05, timings["run"])
    )
    out["killed"] += killed
    out["workers_at_kill"] = len(kids) if killed else 0
    out["orphans"] = orphans(kids)
    done = _run("collect", "run", str(lock), "--out", str(runs), "--jobs", "2")
    counts = ledger_counts(runs, 48)
    counts["run_failed"] = int(done.returncode != 0)
    ev_killed, _ = kill_at_random(
        [_script("gates"), "evaluate", str(lock), str(runs)], rng.uniform(0.05, timings["evaluate"])
    )
    out["killed"] += ev_killed
    partial = runs / "evaluation.json"
    torn_artifact = 0
    if partial.exists():
        try:
            json.loads(partial.read_text())
        except ValueError:
            torn_artifact = 1
    proc = _run("gates", "evaluate", str(lock), str(runs), "--json")
    differs = int(comparable(json.loads(proc.stdout)) != ref["run_eval"]) if proc.stdout else 1
    # collect import
    ilock, iruns = work / "cont.lock.json", work / "iruns"
    shutil.copy(ref["ilock"], ilock)
    table = work / "continuation.csv"
    shutil.copy(IMPORT_TABLE, table)
    imp_killed, _ = kill_at_random(
        [_script("collect"), "import", str(table), "--lock", str(ilock), "--out", str(iruns)],
        rng.uniform(0.05, timings["import"]),
    )
    out["killed"] += imp_killed
    again = _run("collect", "import", str(table), "--lock", str(ilock), "--out", str(iruns))
    icounts = ledger_counts(iruns, ref["import_rows"])
    iproc = _run("gates", "evaluate", str(ilock), str(iruns), "--json")
    idiffers = int(comparable(json.loads(iproc.stdout)) != ref["import_eval"]) if iproc.stdout else 1
    for key in ("lost", "duplicated", "torn_parsed", "chain_broken"):
        out[key] = counts[key] + icounts[key]
    out["failed_reruns"] = counts["run_failed"] + int(again.returncode != 0)
    out["evaluations_differ"] = differs + idiffers
    out["torn_artifacts"] = torn_artifact
    return out


def reference(base: Path) -> tuple[dict[str, Any], dict[str, float]]:
    """Uninterrupted runs of each command: their evaluations and how long each took."""
    timings = {}
    base.mkdir(parents=True, exist_ok=True)
    lock, ilock = base / "ms.lock.json", base / "cont.lock.json"
    assert _run("prereg", "freeze", str(PLAN), "-o", str(lock)).returncode == 0
    assert _run("prereg", "freeze", str(IMPORT_PLAN), "-o", str(ilock)).returncode == 0
    t0 = time.monotonic()
    assert _run("collect", "run", str(lock), "--out", str(base / "runs"), "--jobs", "2").returncode == 0
    timings["run"] = time.monotonic() - t0
    t0 = time.monotonic()
    run_eval = json.loads(_run("gates", "evaluate", str(lock), str(base / "runs"), "--json").stdout)
    timings["evaluate"] = time.monotonic() - t0
    t0 = time.monotonic()
    assert (
        _run("collect", "import", str(IMPORT_TABLE), "--lock", str(ilock), "--out", str(base / "iruns")).returncode == 0
    )
    timings["import"] = time.monotonic() - t0
    import_eval = json.loads(_run("gates", "evaluate", str(ilock), str(base / "iruns"), "--json").stdout)
    rows = sum(1 for line in IMPORT_TABLE.read_text().splitlines()[1:] if line.strip())
    return (
        {
            "lock": lock,
            "ilock": ilock,
            "run_eval": comparable(run_eval),
            "import_eval": comparable(import_eval),
            "import_rows": rows,
        },
        timings,
    )


def kill_trials(trials: int, seed: int, work: Path) -> dict[str, Any]:
    """Run ``trials`` trials under ``work``; returns per-trial counts and their sums."""
    rng = random.Random(seed)
    ref, timings = reference(work / "reference")
    results = []
    for i in range(trials):
        result = trial(work / f"trial-{i:03d}", rng, ref, timings)
        result["trial"] = i
        results.append(result)
    keys = [k for k in results[0] if k != "trial"] if results else []
    return {"trials": results, "total": {k: sum(r[k] for r in results) for k in keys}, "timings_s": timings}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--keep", metavar="DIR", help="work in DIR and keep it (default: a temporary folder)")
    args = parser.parse_args()
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="bench-kill-"))
    try:
        report = kill_trials(args.trials, args.seed, work)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    for r in report["trials"]:
        print(json.dumps(r))
    print(json.dumps({"summary": report["total"], "trials": args.trials, "timings_s": report["timings_s"]}))
    bad = {k: v for k, v in report["total"].items() if k not in ("killed", "workers_at_kill") and v}
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
