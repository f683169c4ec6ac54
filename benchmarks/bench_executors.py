"""Executors of ``collect run``: short simulated runs (part 1) and second-long ``command`` runs (part 2).

Run from the repository root (inside the venv, with the ``ray`` extra):
    python benchmarks/bench_executors.py [--repeats 5] [--seconds-repeats 3] [--seed 0] [--only CONDS] [--skip-short]

Every condition is the console script end to end (``collect run LOCK --out RUNS ...`` in a fresh
process), into a new runs folder, timed in interleaved rounds (every condition once a round, in a
shuffled order); median [range] over rounds, ratios paired inside rounds.

Part 1: ``examples/multisite-recovery.yaml`` with 50 seeds (600 ``sim.multisite`` runs of a few ms,
each writing an fsynced event trace). Conditions: ``local -j1`` (in-process), ``local -j2`` (the
process pool), ``ray own -j2`` (``--executor ray --jobs 2``, its own Ray instance), ``ray attached``
(``--address``: a running one-node instance of 2 CPUs), ``ray 2 nodes`` (two of 1 CPU), ``ray 3 nodes``
(a head of 0 CPUs and two of 1): 2 CPUs everywhere. Clusters are ``collect.engine.local_cluster``
clusters on this machine (each node its own raylet and temporary folder), started before the
condition, warmed by one untimed 48-run sweep, and torn down after it. Printed beside the seconds:
the CPU seconds of every process of the condition (``/proc``, sampled every 0.1 s) and the seconds
after ``collect run``'s ``running N with ...`` line (the sweep itself).

Part 2: 24 ``command`` runs of a program that sleeps 1 s (``time.sleep(1)``: it holds a CPU slot,
not a core) and writes its metric. Conditions: ``local -j2``, ``ray own -j2``, ``ray attached`` (one
node of 2 CPUs) and ``ray 3x2`` (three nodes of 2 CPUs each). The *fixed cost*: from launching
``collect run`` to the first program's start; the
*cost per run*, ``(end - first start - waves x the median program's seconds) / runs`` with ``waves =
runs / slots``: what the collector and executor add to each run beyond the program itself. Start and
end times are the program's own (it logs them; one machine, one clock). Ray's against the local
pool's, and the 3-node cluster's seconds against the pool's.
The records of every condition of a part are checked equal (all fields but times, chain fields,
the run's seconds and the git commit). The machine is shared: the load average is printed.
"""

from __future__ import annotations

import argparse
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
# condition -> (nodes, CPUs per node, head CPUs)
CLUSTERS: dict[str, tuple[int, float, float]] = {
    "ray attached": (1, 2.0, 2.0),
    "ray 2 nodes": (2, 1.0, 1.0),
    "ray 3 nodes": (3, 1.0, 0.0),
    "ray 3x2": (3, 2.0, 2.0),
}
LOCAL = {
    "local -j1": ["--jobs", "1"],
    "local -j2": ["--jobs", "2"],
    "ray own -j2": ["--executor", "ray", "--jobs", "2"],
}
SHORT = ["local -j1", "local -j2", "ray own -j2", "ray attached", "ray 2 nodes", "ray 3 nodes"]
SECONDS = ["local -j2", "ray own -j2", "ray attached", "ray 3x2"]
SLOTS = {"local -j2": 2, "ray own -j2": 2, "ray attached": 2, "ray 3x2": 6}
SLEEP_PROGRAM = """import json, os, time
start = time.time()
time.sleep(1.0)
json.dump({"value": 1.0}, open(os.environ["PREREG_METRICS"], "w"))
open(LOG, "a").write(f"{start} {time.time()}\\n")  # one machine, one clock: when the program ran
"""
SLEEP_PLAN = """schema: prereg/v1
study: executor-seconds
title: Second-long runs through each executor
hypothesis: Nothing; a benchmark.
experiment:
  collector: command
  params: {argv: [python, sleep1.py], workdir: WORKDIR, code: [sleep1.py], sensor: none}
arms:
  a: {}
  b: {}
strata:
  factors:
    seed: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]
  replicates: 1
metrics:
  value: {unit: unit, better: higher, evidence: measured}
gates:
  - {id: same, metric: value, contrast: b - a, method: t, confidence: 0.9, pass_if: lower > -1.0}
decision: {claim: b is no worse}
"""


def comparable(runs: Path) -> list[dict[str, Any]]:
    """The records, less what may differ between conditions: times, the chain fields, the run's
    seconds, the git commit (a commit during the benchmark changes it), a command run's timings."""
    out = []
    for r in read_ledger(runs).records:
        d = r.model_dump(mode="json", exclude_none=True)
        for key in ("started_at", "finished_at", "prev_sha256", "record_sha256"):
            d.pop(key, None)
        d["env"].pop("seconds", None)
        d["code"].pop("git", None)
        d["code"].pop("threads", None)  # Ray presets OMP_NUM_THREADS on its workers (a command run records it)
        if d["code"].pop("timing_s", None) is not None:  # a command run: its timings, and its event trace
            d["trace_sha256"] = {k: v for k, v in d["trace_sha256"].items() if not k.endswith(".events.jsonl")}
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


def timed_run(lock: Path, out: Path, extra: list[str], env: dict[str, str]) -> dict[str, float]:
    """``collect run`` end to end: ``seconds``, ``cpu`` (:class:`CpuSampler`: the command, its pool
    workers, a cluster's processes), ``sweep`` (from its ``running N with ...`` line, printed once the
    lock is verified and the ledger read, to its end), and the wall-clock ``swept`` (that line) and ``ended``."""
    sampler, t0, sweep_start = CpuSampler(), time.perf_counter(), 0.0
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
            started, sweep_start = time.perf_counter(), time.time()
    proc.wait()
    end, ended = time.perf_counter(), time.time()
    cpu = sampler.stop()
    if proc.returncode != 0 or started is None:
        raise SystemExit(f"collect run {' '.join(extra)} failed: {''.join(lines)[-2000:]}")
    return {"seconds": end - t0, "cpu": cpu, "sweep": end - started, "swept": sweep_start, "ended": ended}


def rounds(
    conditions: list[str],
    repeats: int,
    rng: random.Random,
    lock: Path,
    warm: Path | None,
    work: Path,
    log: Path | None = None,
) -> tuple[dict[str, list[dict[str, float]]], list[tuple[float, float]], bool]:
    """Each condition once a round, shuffled; per condition the rounds' measures (plus ``runs``: the
    folder's comparable records are checked equal, then the folder removed)."""
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), *filter(None, [env.get("PYTHONPATH")])])
    got: dict[str, list[dict[str, float]]] = {}
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
                m = timed_run(lock, out, LOCAL[cond], env)
            else:
                cluster = start_local_cluster(*CLUSTERS[cond])
                try:
                    joined = ["--executor", "ray", "--address", cluster.address]
                    if warm is not None:  # as a cluster already in use
                        timed_run(warm, work / f"warm-{cond.replace(' ', '_')}-{r}", joined, env)
                    m = timed_run(lock, out, joined, env)
                finally:
                    cluster.shutdown()
            if log is not None:  # the program's own start and end times
                spans = sorted(tuple(map(float, line.split())) for line in log.read_text().splitlines())
                log.unlink()
                m["starts"], m["last_end"] = [a for a, _ in spans], max(b for _, b in spans)  # type: ignore[assignment]
                m["run_s"] = statistics.median(b - a for a, b in spans)
            got.setdefault(cond, []).append(m)
            comparable_records = comparable(out)
            same = same and (reference is None or comparable_records == reference)
            reference = comparable_records if reference is None else reference
            shutil.rmtree(out)
        loads.append((before, load()))
        print(
            f"round {r + 1}/{repeats} done (load {before:.1f} -> {loads[-1][1]:.1f}): "
            + ", ".join(f"{c} {got[c][-1]['seconds']:.2f} s" for c in order),
            file=sys.stderr,
        )
    return got, loads, same


def med(xs: list[float], unit: str = " s", scale: float = 1.0) -> str:
    return f"{statistics.median(xs) * scale:.2f}{unit} [{min(xs) * scale:.2f}-{max(xs) * scale:.2f}]"


def ratios(got: dict[str, list[dict[str, float]]], a: str, b: str, key: str = "seconds") -> list[float]:
    return [x[key] / y[key] for x, y in zip(got[a], got[b], strict=True)]


def part1(repeats: int, seed: int, work: Path, only: list[str] | None = None) -> None:
    conditions = [c for c in SHORT if not only or c in only]
    lock, warm = freeze(work, SEEDS), work / "ms.lock.json"
    subprocess.run(
        [script("prereg"), "freeze", str(REPO / "examples" / "multisite-recovery.yaml"), "-o", str(warm)],
        check=True,
        capture_output=True,
    )
    got, loads, same = rounds(conditions, repeats, random.Random(seed), lock, warm, work)
    low, high = min(min(pair) for pair in loads), max(max(pair) for pair in loads)
    print(
        f"\nPart 1: {SEEDS * 12} sim.multisite runs, collect run end to end, {repeats} interleaved rounds, "
        f"load average {low:.1f}-{high:.1f}; median [range] over rounds"
    )
    print(f"{'condition':<14} {'seconds':>22} {'CPU seconds':>22} {'after the running line':>24}")
    for cond in conditions:
        rows = got[cond]
        print(
            f"{cond:<14} {med([m['seconds'] for m in rows]):>22} {med([m['cpu'] for m in rows]):>22} "
            f"{med([m['sweep'] for m in rows]):>24}"
        )
    print("ratios inside each round (local -j2's / the other's; > 1: the other is faster or costs less CPU)")
    for other in conditions:
        if other != "local -j2" and "local -j2" in got:
            print(
                f"  local -j2 vs {other:<14} seconds {med(ratios(got, 'local -j2', other), 'x')}, "
                f"CPU {med(ratios(got, 'local -j2', other, 'cpu'), 'x')}"
            )
    print(f"records equal across every condition and round: {'yes' if same else 'NO'}")


def part2(repeats: int, seed: int, work: Path) -> None:
    folder = work / "seconds"
    folder.mkdir()
    (folder / "sleep1.py").write_text(f"LOG = {str(folder / 'spans.log')!r}\n" + SLEEP_PROGRAM)
    (folder / "plan.yaml").write_text(SLEEP_PLAN.replace("WORKDIR", str(folder)))
    lock = folder / "plan.lock.json"
    subprocess.run([script("prereg"), "freeze", str(folder / "plan.yaml")], check=True, capture_output=True)
    got, loads, same = rounds(SECONDS, repeats, random.Random(seed), lock, None, work, folder / "spans.log")
    low, high = min(min(pair) for pair in loads), max(max(pair) for pair in loads)
    runs = 24

    def fixed(m: dict[str, Any]) -> float:  # the sweep's start (the running line) to the first program's
        return float(m["starts"][0] - m["swept"])

    def per_run(m: dict[str, Any], slots: int) -> float:  # steady state: starts after the first wave (with 6
        # slots whose workers start one after another, the first waves overlap: not estimated there)
        later = m["starts"][slots:]
        return slots * (later[-1] - later[0]) / (len(later) - 1) - m["run_s"]

    def teardown(m: dict[str, Any]) -> float:  # the last program's end to collect run's
        return float(m["ended"] - m["last_end"])

    print(
        f"\nPart 2: {runs} command runs of a program that sleeps 1 s, collect run end to end, {repeats} "
        f"interleaved rounds, load average {low:.1f}-{high:.1f}; median [range] over rounds"
    )
    print(f"{'condition':<12} {'seconds':>20} {'fixed cost':>20} {'cost per run':>24} {'teardown':>20} {'a run':>20}")
    for cond in SECONDS:
        rows = got[cond]
        print(
            f"{cond:<12} {med([m['seconds'] for m in rows]):>20} {med([fixed(m) for m in rows]):>20} "
            f"{med([per_run(m, SLOTS[cond]) for m in rows], ' ms', 1000) if SLOTS[cond] == 2 else '-':>24} "
            f"{med([teardown(m) for m in rows]):>20} "
            f"{med([m['run_s'] for m in rows]):>20}"
        )
    pool = got["local -j2"]
    for cond in ("ray own -j2", "ray attached"):
        extra_fixed = [fixed(m) - fixed(p) for m, p in zip(got[cond], pool, strict=True)]
        extra_run = [per_run(m, 2) - per_run(p, 2) for m, p in zip(got[cond], pool, strict=True)]
        print(
            f"{cond} against local -j2, paired: fixed cost {med([fixed(m) for m in got[cond]])} (goal <= 1.5 s; "
            f"{med(extra_fixed)} more than the pool's), cost per run {med(extra_run, ' ms', 1000)} more (goal <= 20 ms)"
        )
    speed = ratios(got, "local -j2", "ray 3x2")
    print(
        f"ray 3x2 (3 nodes of 2 logical CPUs) against local -j2: {med(speed, 'x')} faster "
        f"(goal >= 2x: {'yes' if statistics.median(speed) >= 2 else 'no'})"
    )
    print(f"records equal across every condition and round: {'yes' if same else 'NO'}")


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5, help="rounds of part 1")
    ap.add_argument("--seconds-repeats", type=int, default=3, help="rounds of part 2")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--skip-short", action="store_true", help="part 2 only")
    ap.add_argument("--only", help="comma-separated conditions of part 1 (default all), e.g. 'local -j2,ray attached'")
    args = ap.parse_args()
    os.environ.pop("RAY_ADDRESS", None)
    print(f"machine: shared, {os.cpu_count()} cores; load average before: {load():.2f}")
    work = Path(tempfile.mkdtemp(prefix="bench-executors-"))
    try:
        if not args.skip_short:
            part1(args.repeats, args.seed, work, args.only.split(",") if args.only else None)
        part2(args.seconds_repeats, args.seed, work)
        print(f"load average after: {load():.2f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
