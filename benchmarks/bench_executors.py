"""Executors of ``collect run`` on short simulated runs, and a torch worker's first run against its later ones.

Run from the repository root (inside the venv, with the ``ray`` and ``torch`` extras):
    python benchmarks/bench_executors.py [--repeats 5] [--torch-repeats 3] [--seed 0]

Part 1, short simulated runs. Two workloads from ``examples/``: ``multisite-recovery.yaml`` with
16 seeds (192 ``sim.multisite`` runs of about 5 ms) and ``churn-cadence.yaml`` with 16 seeds (288
``sim.churn`` runs of about 1 ms). Each goes through ``collect.engine.runner.run_plan`` (the ledger
appended, traces written, as ``collect run`` does) under:

* ``local -j1``: in-process; ``local -j2``: the local process pool, 2 workers;
* ``ray batched 2``: ``--executor ray`` as it is now (runs dealt into 4 streaming tasks per Ray CPU)
  on a local 2-CPU Ray instance; ``ray batched 1``: the same on a 1-CPU instance (scaling);
* ``ray 1 task/run``: the executor before batching (one Ray task per run, one append per record),
  copied below, on the 2-CPU instance.

Ray is timed warm: its instance was started (``ray.init``) before and its workers had run the
workload once, as on a cluster that is already up. ``cold CLI`` times the console script end to end
on the 48-run ``multisite-recovery.yaml``: ``collect run --jobs 2`` against ``collect run
--executor ray --jobs 2``, which starts (and stops) its own Ray instance. Conditions are timed in
``--repeats`` rounds, shuffled within each round; printed: median seconds and range over rounds,
and ratios taken inside each round (median and range). The records of every condition are checked
equal (all fields but times, chain fields and the run's seconds).

Part 2, torch. Fresh processes, as a worker is, each execute 3 runs of ``examples/
equal-work-torch.yaml`` (the README demo's runs) one after another through ``execute_run``:
``lean`` is the code as it is; ``stock`` patches the trainer back to torch's own calls
(``torch.use_deterministic_algorithms`` and ``Optimizer.step``, which load ``torch._dynamo`` and
``torch._inductor``). Printed: the import of the trainer (torch), the first run, the median later
run, and the one-off cost of a worker (import + first - later), alternating lean and stock.

The machine is shared (2 cores, other people's jobs running): read the ranges. A multisite run
writes an event trace (fsynced) and every append fsyncs the ledger, so there the times follow the
disk's fsync latency (in-process on this machine: about 1 s of CPU in 2-4 s of wall for the 192
runs), and ``local -j1`` against ``-j2`` can exceed 2x: the pool overlaps those waits.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import collect.engine.runner as engine  # noqa: E402
from collect.ledger.store import read_ledger  # noqa: E402
from prereg.plan import parse_plan  # noqa: E402

SEEDS = 16


def _ray_one_task_per_run(job: engine.Job, todo: list[engine.PlannedRun], jobs: int) -> Iterator[list[dict[str, Any]]]:
    """The Ray executor before batching (its loop, on an instance already up): one task per run."""
    import ray

    remote = ray.remote(engine.execute_run)
    pending = [remote.remote(job.collector, p, job.plan_sha256, job.runs_dir, job.identity) for p in todo]
    while pending:
        done, pending = ray.wait(pending, num_returns=1)
        yield [ray.get(done[0])]


def workloads() -> dict[str, tuple[Any, str]]:
    seeds = ", ".join(str(s) for s in range(1, SEEDS + 1))
    multisite = (REPO / "examples" / "multisite-recovery.yaml").read_text().replace(
        "seed: [11, 12, 13, 14]", f"seed: [{seeds}]")
    churn = (REPO / "examples" / "churn-cadence.yaml").read_text().replace("seed: [1, 2, 3, 4]", f"seed: [{seeds}]")
    out = {}
    for name, text in (("multisite", multisite), ("churn", churn)):
        assert f"seed: [{seeds}]" in text, name
        lp = parse_plan(text.encode())
        out[name] = (lp.plan, lp.plan_sha256)
    return out


def comparable(runs: Path) -> list[dict[str, Any]]:
    out = []
    for r in read_ledger(runs).records:
        d = r.model_dump(mode="json", exclude_none=True)
        for key in ("started_at", "finished_at", "prev_sha256", "record_sha256"):
            d.pop(key, None)
        d["env"].pop("seconds", None)
        out.append(d)
    return sorted(out, key=lambda d: d["run_id"])


def timed(fn: Callable[[], Any]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def run_condition(cond: str, plan: Any, sha: str, out: Path) -> float:
    if cond == "local -j1":
        return timed(lambda: engine.run_plan(plan, sha, out, jobs=1))
    if cond == "local -j2":
        return timed(lambda: engine.run_plan(plan, sha, out, jobs=2))
    if cond.startswith("ray batched"):
        return timed(lambda: engine.run_plan(plan, sha, out, jobs=2, executor="ray"))
    if cond == "ray 1 task/run":
        batched = engine._ray
        engine._ray = _ray_one_task_per_run
        try:
            return timed(lambda: engine.run_plan(plan, sha, out, jobs=2, executor="ray"))
        finally:
            engine._ray = batched
    raise ValueError(cond)


def cli(*args: str) -> list[str]:
    return [str(Path(sys.executable).parent / "collect"), *args]


def part1(repeats: int, seed: int, work: Path) -> None:
    import ray

    rng = random.Random(seed)
    loads = workloads()
    phases = {"local": ["local -j1", "local -j2"], "ray2": ["ray batched 2", "ray 1 task/run"],
              "ray1": ["ray batched 1"], "cold": ["cold CLI local -j2", "cold CLI ray -j2"]}
    times: dict[tuple[str, str], list[float]] = {}
    lock = work / "ms.lock.json"
    subprocess.run([str(Path(sys.executable).parent / "prereg"), "freeze",
                    str(REPO / "examples" / "multisite-recovery.yaml"), "-o", str(lock)], check=True,
                   capture_output=True)
    checked: dict[str, list[dict[str, Any]]] = {}
    same = True
    for r in range(repeats):
        order = list(phases)
        rng.shuffle(order)
        for phase in order:
            if phase in ("ray1", "ray2"):
                ray.init(address="local", num_cpus=int(phase[-1]), include_dashboard=False, log_to_driver=False)
                for name, (plan, sha) in loads.items():  # warm the workers (imports)
                    engine.run_plan(plan, sha, work / f"warm-{phase}-{name}-{r}", jobs=2, executor="ray")
            try:
                jobs = [(c, w) for c in phases[phase] for w in (loads if phase != "cold" else ["cli 48"])]
                rng.shuffle(jobs)
                for cond, name in jobs:
                    out = work / f"{cond.replace(' ', '_').replace('/', '_')}-{name}-{r}"
                    if phase == "cold":
                        extra = ["--executor", "ray"] if "ray" in cond else []
                        t = timed(lambda: subprocess.run(
                            cli("run", str(lock), "--out", str(out), "--jobs", "2", *extra),  # noqa: B023 - called within this iteration
                            check=True, capture_output=True))
                    else:
                        t = run_condition(cond, *loads[name], out)
                    times.setdefault((cond, name), []).append(t)
                    got = comparable(out)
                    if name in checked:
                        same = same and got == checked[name]
                    else:
                        checked[name] = got
                    shutil.rmtree(out)
            finally:
                if phase in ("ray1", "ray2"):
                    ray.shutdown()
        print(f"round {r + 1}/{repeats} done", file=sys.stderr)

    def med(xs: list[float]) -> str:
        return f"{statistics.median(xs):7.3f} s [{min(xs):.3f}-{max(xs):.3f}]"

    print(f"\nPart 1: short simulated runs, {repeats} rounds (median [range] over rounds)")
    print(f"{'condition':<20} {'multisite, 192 runs':>30} {'churn, 288 runs':>30}")
    for cond in [c for p in ("local", "ray2", "ray1") for c in phases[p]]:
        print(f"{cond:<20} {med(times[(cond, 'multisite')]):>30} {med(times[(cond, 'churn')]):>30}")
    for cond in phases["cold"]:
        print(f"{cond:<20} {med(times[(cond, 'cli 48')]):>30}   (multisite-recovery.yaml, 48 runs)")

    def ratio(a: str, b: str, name: str) -> str:
        rs = [x / y for x, y in zip(times[(a, name)], times[(b, name)], strict=True)]
        return f"{statistics.median(rs):5.2f}x [{min(rs):.2f}-{max(rs):.2f}]"

    print("\nratios inside each round (time of the first / time of the second; > 1: the second is faster)")
    pairs = [("local -j2", "ray batched 2", "local pool -j2 vs Ray batched, 2 CPUs"),
             ("ray 1 task/run", "ray batched 2", "Ray one task per run vs batched, 2 CPUs"),
             ("ray batched 1", "ray batched 2", "Ray batched, 1 CPU vs 2 CPUs (scaling)"),
             ("local -j1", "local -j2", "local -j1 vs -j2 (scaling)")]
    for a, b, label in pairs:
        print(f"{label:<44} multisite {ratio(a, b, 'multisite')}   churn {ratio(a, b, 'churn')}")
    print(f"{'cold CLI: local -j2 vs Ray (own instance)':<44} {ratio('cold CLI local -j2', 'cold CLI ray -j2', 'cli 48')}")
    print(f"records equal across every condition and round: {'yes' if same else 'NO'}")


TORCH_CHILD = r"""
import contextlib, json, sys, tempfile, time
from pathlib import Path
t0 = time.perf_counter()
import torch
import collect.collectors.torchrun.trainer as T
imported = time.perf_counter() - t0
if sys.argv[1] == "stock":  # torch's own calls, as the trainer made them before
    T.set_deterministic_algorithms = lambda mode, warn_only=False: torch.use_deterministic_algorithms(
        mode, warn_only=warn_only)
    T.optimizer_step = lambda opt: opt.step()
    T._dynamo_left_unloaded = lambda: contextlib.nullcontext(False)
import collect.engine.runner as engine
from prereg.plan import parse_plan
lp = parse_plan(Path(sys.argv[2]).read_bytes())
collector, planned = engine.expand_plan(lp.plan, lp.plan_sha256)
runs = tempfile.mkdtemp()
identity = {"git": None, "python": "", "platform": ""}
secs = []
for p in planned[: int(sys.argv[3])]:
    t = time.perf_counter()
    rec = engine.execute_run(collector.name, p, lp.plan_sha256, runs, identity)
    assert rec["status"] == "complete", rec.get("error")
    secs.append(time.perf_counter() - t)
print(json.dumps({"import": imported, "runs": secs,
                  "dynamo": "torch._dynamo" in sys.modules, "inductor": "torch._inductor" in sys.modules}))
"""


def part2(repeats: int, runs: int) -> None:
    plan = REPO / "examples" / "equal-work-torch.yaml"
    got: dict[str, list[dict[str, Any]]] = {"lean": [], "stock": []}
    for r in range(repeats):
        for mode in (("lean", "stock") if r % 2 == 0 else ("stock", "lean")):
            proc = subprocess.run([sys.executable, "-c", TORCH_CHILD, mode, str(plan), str(runs)], cwd=REPO,
                                  capture_output=True, text=True, check=True)
            got[mode].append(json.loads(proc.stdout.splitlines()[-1]))
        print(f"torch round {r + 1}/{repeats} done", file=sys.stderr)
    print(f"\nPart 2: torch demo runs in a fresh worker process, {repeats} processes per mode, {runs} runs each "
          "(median [range] over processes)")
    print(f"{'mode':<6} {'import trainer':>20} {'first run':>20} {'later runs':>20} {'one-off per worker':>20}"
          f" {'(import+first)/later':>21} {'dynamo/inductor':>16}")

    def m(xs: list[float], unit: str = " s") -> str:
        return f"{statistics.median(xs):.2f}{unit} [{min(xs):.2f}-{max(xs):.2f}]"

    one_off: dict[str, list[float]] = {}
    first_cost: dict[str, list[float]] = {}
    for mode, rows in got.items():
        imp = [g["import"] for g in rows]
        first = [g["runs"][0] for g in rows]
        later = [statistics.median(g["runs"][1:]) for g in rows]
        one_off[mode] = [i + f - lt for i, f, lt in zip(imp, first, later, strict=True)]
        first_cost[mode] = [i + f for i, f in zip(imp, first, strict=True)]
        ratio = [(i + f) / lt for i, f, lt in zip(imp, first, later, strict=True)]
        loaded = ",".join(sorted({f"{g['dynamo']}/{g['inductor']}" for g in rows}))
        print(f"{mode:<6} {m(imp):>20} {m(first):>20} {m(later):>20} {m(one_off[mode]):>20} {m(ratio, 'x'):>21}"
              f" {loaded:>16}")
    saved = [s - lean for s, lean in zip(one_off["stock"], one_off["lean"], strict=True)]
    faster = [s / lean for s, lean in zip(first_cost["stock"], first_cost["lean"], strict=True)]
    print(f"paired by round, stock vs lean: one-off cost saved per worker {m(saved)}; "
          f"import + first run {m(faster, 'x')} faster")


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--torch-repeats", type=int, default=3)
    ap.add_argument("--torch-runs", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--skip-torch", action="store_true")
    args = ap.parse_args()
    import os

    os.environ.pop("RAY_ADDRESS", None)
    print("machine: shared, 2 cores, other engineers' jobs running; read the ranges", file=sys.stderr)
    work = Path(tempfile.mkdtemp(prefix="bench-executors-"))
    try:
        part1(args.repeats, args.seed, work)
        if not args.skip_torch:
            part2(args.torch_repeats, args.torch_runs)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
