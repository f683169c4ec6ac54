"""Executors of ``collect run`` on short simulated runs, and a torch worker's first run against its later ones.

Run from the repository root (inside the venv, with the ``ray`` and ``torch`` extras):
    python benchmarks/bench_executors.py [--repeats 5] [--torch-repeats 3] [--seed 0] [--skip-torch] [--only CONDS]

Part 1, short simulated runs: ``examples/multisite-recovery.yaml`` with 50 seeds (600
``sim.multisite`` runs of about 5 ms, each writing an fsynced event trace), frozen once. Every
condition is the console script end to end (``collect run LOCK --out RUNS ...`` in a fresh process:
interpreter, imports, lock check, runs, ledger), into a new runs folder:

* ``local -j1``: in-process; ``local -j2``: the local process pool, 2 workers;
* ``ray own -j2``: ``--executor ray --jobs 2`` starting (and stopping) its own Ray instance;
* ``ray attached``: ``--executor ray --address`` joining a running one-node Ray instance of 2 CPUs,
  whose warm runners (``collect.engine.ray_pool``) an earlier sweep started;
* ``ray att. cold``: the same, as the first sweep on the instance (it starts the warm runners);
* ``ray att. tasks``: the same as ``ray attached`` with ``PREREG_RAY_WARM=0`` (every batch a Ray
  task on workers started for the sweep);
* ``ray 2 nodes``: joining a cluster of two nodes of 1 CPU each;
* ``ray 3 nodes``: joining a cluster of three nodes: a head with no CPU and two of 1 CPU each.

All Ray conditions have 2 CPUs, as the local pool has 2 workers (equal cores). The clusters are
``collect.engine.local_cluster`` clusters on this one machine (each node its own raylet and
temporary folder), started before the condition, warmed (all but ``ray att. cold``) by one untimed
48-run sweep (as a cluster already in use), and torn down after it; the local conditions run with
no Ray process up.
Conditions are timed in ``--repeats`` interleaved rounds (every condition once per round, in a
shuffled order), each with the CPU seconds it cost (Linux ``/proc``, sampled every 0.1 s: ``collect
run`` and its pool workers; for a cluster also the cluster's processes during the run, Ray's
workers included: the work done, less sensitive to other jobs than the seconds), and the seconds
after its ``running N with ...`` line (the lock verified and the ledger read; for an attached
sweep, Ray imported and joined: the sweep itself). Printed:
the load average around each round, median and range over rounds, ratios taken inside each round
(paired), and the verdict: the median paired ratio ``local -j2`` / ``ray attached``, with how many
rounds Ray won. ``--only 'local -j2,ray attached'`` times just those (e.g. to compare two versions of
the code: copy this script into the other checkout). The records of every condition are checked equal (all fields but times, chain
fields, the run's seconds and the git commit, which a commit during the benchmark would change).

Part 2, torch. Fresh processes, as a worker is, each execute 3 runs of ``examples/
equal-work-torch.yaml`` (the README demo's runs) one after another through ``execute_run``:
``lean`` is the code as it is; ``stock`` patches the trainer back to torch's own calls
(``torch.use_deterministic_algorithms`` and ``Optimizer.step``, which load ``torch._dynamo`` and
``torch._inductor``). Printed: the import of the trainer (torch), the first run, the median later
run, and the one-off cost of a worker (import + first - later), alternating lean and stock.

The machine is shared (2 cores, other people's jobs running): the load average is printed before
and after each round; read the ranges.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from collect.engine.local_cluster import start_local_cluster  # noqa: E402
from collect.ledger.store import read_ledger  # noqa: E402

SEEDS = 50
# condition -> (nodes, CPUs per node, head CPUs, warmed by an earlier sweep, environment of collect run)
CLUSTERS: dict[str, tuple[int, float, float, bool, dict[str, str]]] = {
    "ray attached": (1, 2.0, 2.0, True, {}),
    "ray att. cold": (1, 2.0, 2.0, False, {}),
    "ray att. tasks": (1, 2.0, 2.0, True, {"PREREG_RAY_WARM": "0"}),
    "ray 2 nodes": (2, 1.0, 1.0, True, {}),
    "ray 3 nodes": (3, 1.0, 0.0, True, {}),
}
LOCAL = {
    "local -j1": ["--jobs", "1"],
    "local -j2": ["--jobs", "2"],
    "ray own -j2": ["--executor", "ray", "--jobs", "2"],
}


def comparable(runs: Path) -> list[dict[str, Any]]:
    """The records, less what may differ between conditions: times, the chain fields, the run's
    seconds, and the git commit (a commit made to the repository during the benchmark changes it)."""
    out = []
    for r in read_ledger(runs).records:
        d = r.model_dump(mode="json", exclude_none=True)
        for key in ("started_at", "finished_at", "prev_sha256", "record_sha256"):
            d.pop(key, None)
        d["env"].pop("seconds", None)
        d["code"].pop("git", None)
        out.append(d)
    return sorted(out, key=lambda d: d["run_id"])


CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
SAMPLE_S = 0.1  # how often the CPU sampler reads /proc


def _own_cpu_s(pid: int) -> float | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / CLK_TCK  # utime + stime, its own (not its children's)


def _descendants() -> list[int]:
    found, todo = [], [os.getpid()]
    while todo:
        pid = todo.pop()
        try:
            tasks = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tasks:
            try:
                with open(f"/proc/{pid}/task/{tid}/children") as f:
                    kids = [int(k) for k in f.read().split()]
            except OSError:
                continue
            found += kids
            todo += kids
    return found


class CpuSampler:
    """CPU seconds (user + system) the descendants of this process spend while it runs: each one's own
    time read from ``/proc`` every ``SAMPLE_S`` (Linux), from its value at the start (0 for a process
    born meanwhile) to the last one read. Sampling, not the kernel's child accounting, because Ray's
    raylet reaps its workers without adding their time to its own; a process's last ``SAMPLE_S``
    before it exits is not seen (the same for every condition)."""

    def __init__(self) -> None:
        self.first = {pid: cpu for pid in _descendants() if (cpu := _own_cpu_s(pid)) is not None}
        self.last = dict(self.first)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        for pid in _descendants():
            cpu = _own_cpu_s(pid)
            if cpu is not None:
                self.last[pid] = cpu

    def _run(self) -> None:
        while not self._stop.wait(SAMPLE_S):
            self._sample()

    def stop(self) -> float:
        self._stop.set()
        self._thread.join()
        self._sample()
        return sum(cpu - self.first.get(pid, 0.0) for pid, cpu in self.last.items())


def load() -> float:
    return os.getloadavg()[0]


def script(name: str) -> str:
    return str(Path(sys.executable).parent / name)


def freeze(work: Path, seeds: int) -> Path:
    text = (REPO / "examples" / "multisite-recovery.yaml").read_text()
    listed = ", ".join(str(s) for s in range(1, seeds + 1))
    text = text.replace("seed: [11, 12, 13, 14]", f"seed: [{listed}]")
    assert f"seed: [{listed}]" in text
    plan = work / f"ms{seeds}.yaml"
    plan.write_text(text)
    lock = work / f"ms{seeds}.lock.json"
    subprocess.run([script("prereg"), "freeze", str(plan), "-o", str(lock)], check=True, capture_output=True)
    return lock


def timed_run(lock: Path, out: Path, extra: list[str], env: dict[str, str]) -> tuple[float, float, float]:
    """Seconds of ``collect run`` end to end, the CPU seconds it cost (:class:`CpuSampler`: the
    command, its pool workers, and for a cluster its processes, Ray's workers included), and the
    seconds from its ``running N with ...`` line (printed once the lock is verified and the ledger
    read, just before the executor starts) to its end: the sweep itself, less the process's start."""
    sampler, t0 = CpuSampler(), time.perf_counter()
    proc = subprocess.Popen(
        [script("collect"), "run", str(lock), "--out", str(out), *extra],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    lines, started = [], None
    for line in proc.stderr:
        lines.append(line)
        if started is None and "; running " in line:
            started = time.perf_counter()
    proc.wait()
    end = time.perf_counter()
    cpu = sampler.stop()
    if proc.returncode != 0 or started is None:
        raise SystemExit(f"collect run {' '.join(extra)} failed: {''.join(lines)[-2000:]}")
    return end - t0, cpu, end - started


def part1(repeats: int, seed: int, work: Path, only: list[str] | None = None) -> None:
    conditions = [c for c in [*LOCAL, *CLUSTERS] if not only or c in only]
    rng = random.Random(seed)
    lock, warm = freeze(work, SEEDS), work / "ms.lock.json"
    subprocess.run(
        [script("prereg"), "freeze", str(REPO / "examples" / "multisite-recovery.yaml"), "-o", str(warm)],
        check=True,
        capture_output=True,
    )
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), *filter(None, [env.get("PYTHONPATH")])])
    times: dict[str, list[float]] = {}
    cpus: dict[str, list[float]] = {}
    sweeps: dict[str, list[float]] = {}
    loads: list[tuple[float, float]] = []
    reference: list[dict[str, Any]] | None = None
    same = True
    for r in range(repeats):
        order = list(conditions)
        rng.shuffle(order)
        before = load()
        for cond in order:
            out = work / f"{cond.replace(' ', '_')}-{r}"
            if cond in LOCAL:
                t, c, sw = timed_run(lock, out, LOCAL[cond], env)
            else:
                nodes, node_cpus, head, warmed, extra_env = CLUSTERS[cond]
                cluster = start_local_cluster(nodes, node_cpus, head)
                try:
                    joined = ["--executor", "ray", "--address", cluster.address]
                    if warmed:
                        timed_run(warm, work / f"warm-{cond.replace(' ', '_')}-{r}", joined, {**env, **extra_env})
                    t, c, sw = timed_run(lock, out, joined, {**env, **extra_env})
                finally:
                    cluster.shutdown()
            times.setdefault(cond, []).append(t)
            cpus.setdefault(cond, []).append(c)
            sweeps.setdefault(cond, []).append(sw)
            got = comparable(out)
            same = same and (reference is None or got == reference)
            reference = got if reference is None else reference
            shutil.rmtree(out)
        loads.append((before, load()))
        print(
            f"round {r + 1}/{repeats} done (load {before:.1f} -> {loads[-1][1]:.1f}): "
            + ", ".join(f"{c} {times[c][-1]:.2f} s" for c in order),
            file=sys.stderr,
        )

    def med(xs: list[float], unit: str = " s") -> str:
        return f"{statistics.median(xs):6.2f}{unit} [{min(xs):.2f}-{max(xs):.2f}]"

    def ratios(table: dict[str, list[float]], a: str, b: str) -> list[float]:
        return [x / y for x, y in zip(table[a], table[b], strict=True)]

    low, high = min(min(pair) for pair in loads), max(max(pair) for pair in loads)
    print(
        f"\nPart 1: {SEEDS * 12} sim.multisite runs, collect run end to end, {repeats} interleaved rounds "
        f"(conditions shuffled in each), load average {low:.1f}-{high:.1f}; median [range] over rounds"
    )
    print(f"{'condition':<14} {'seconds':>22} {'CPU seconds':>22} {'after the running line':>24}")
    for cond in conditions:
        print(f"{cond:<14} {med(times[cond]):>22} {med(cpus[cond]):>22} {med(sweeps[cond]):>24}")
    print("\nratios inside each round (the first's / the second's; > 1: the second is faster or costs less CPU)")
    print(f"{'':<30} {'seconds':>20} {'CPU seconds':>20}")
    for a, b in (
        ("local -j2", "ray attached"),
        ("local -j2", "ray att. cold"),
        ("local -j2", "ray att. tasks"),
        ("local -j2", "ray own -j2"),
        ("local -j2", "ray 2 nodes"),
        ("local -j2", "ray 3 nodes"),
        ("ray own -j2", "ray attached"),
        ("ray att. tasks", "ray attached"),
        ("local -j1", "local -j2"),
    ):
        if a not in times or b not in times:
            continue
        print(f"{a + ' vs ' + b:<30} {med(ratios(times, a, b), 'x'):>20} {med(ratios(cpus, a, b), 'x'):>20}")
    if "local -j2" not in times or "ray attached" not in times:
        return
    attached = ratios(times, "local -j2", "ray attached")
    wins = sum(x >= 1 for x in attached)
    verdict = "yes" if statistics.median(attached) >= 1 else "no"
    print(
        f"attached Ray at least as fast as the local pool at equal cores (median of the {repeats} paired ratios "
        f">= 1): {verdict} ({statistics.median(attached):.2f}x [{min(attached):.2f}-{max(attached):.2f}], "
        f"Ray as fast or faster in {wins} of {repeats} rounds; load {low:.1f}-{high:.1f} on "
        f"{os.cpu_count()} cores)"
    )
    print(
        f"records equal across every condition and round (less times, chain fields, seconds, git commit): "
        f"{'yes' if same else 'NO'}"
    )


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
        for mode in ("lean", "stock") if r % 2 == 0 else ("stock", "lean"):
            proc = subprocess.run(
                [sys.executable, "-c", TORCH_CHILD, mode, str(plan), str(runs)],
                cwd=REPO,
                capture_output=True,
                text=True,
                check=True,
            )
            got[mode].append(json.loads(proc.stdout.splitlines()[-1]))
        print(f"torch round {r + 1}/{repeats} done", file=sys.stderr)
    print(
        f"\nPart 2: torch demo runs in a fresh worker process, {repeats} processes per mode, {runs} runs each "
        "(median [range] over processes)"
    )
    print(
        f"{'mode':<6} {'import trainer':>20} {'first run':>20} {'later runs':>20} {'one-off per worker':>20}"
        f" {'(import+first)/later':>21} {'dynamo/inductor':>16}"
    )

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
        print(
            f"{mode:<6} {m(imp):>20} {m(first):>20} {m(later):>20} {m(one_off[mode]):>20} {m(ratio, 'x'):>21}"
            f" {loaded:>16}"
        )
    saved = [s - lean for s, lean in zip(one_off["stock"], one_off["lean"], strict=True)]
    faster = [s / lean for s, lean in zip(first_cost["stock"], first_cost["lean"], strict=True)]
    print(
        f"paired by round, stock vs lean: one-off cost saved per worker {m(saved)}; "
        f"import + first run {m(faster, 'x')} faster"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--torch-repeats", type=int, default=3)
    ap.add_argument("--torch-runs", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--skip-torch", action="store_true")
    ap.add_argument("--only", help="comma-separated conditions of part 1 (default all), e.g. 'local -j2,ray attached'")
    args = ap.parse_args()
    os.environ.pop("RAY_ADDRESS", None)
    print(
        f"machine: shared, {os.cpu_count()} cores, other engineers' jobs running; load average before: "
        f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )
    work = Path(tempfile.mkdtemp(prefix="bench-executors-"))
    try:
        part1(args.repeats, args.seed, work, args.only.split(",") if args.only else None)
        print(f"load average after part 1: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        if not args.skip_torch:
            part2(args.torch_repeats, args.torch_runs)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
