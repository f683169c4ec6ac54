"""MLflow import benchmark: ``collect import mlflow:sqlite:///...`` of 10 000 runs against MLflow's own ``search_runs``.

Run from the repository root (inside the venv, with the ``[mlflow]`` extra):
python benchmarks/bench_mlflow_import.py [--runs 10000] [--repeat 5] [--nll-take last|final-step|step] [--store-dir DIR]
[--profile FILE]

Set-up (kept in ``--store-dir``, default ``prereg-bench-mlflow-import-TAKE`` in the temporary folder, and reused
while its plan is the same): a plan without an ``experiment:`` section (two arms, factors ``site`` x ``trial``, one
replicate), frozen with ``prereg freeze``; every planned run logged to a sqlite MLflow store with MLflow's own
client, one run at a time: ``create_run`` with the tags ``collect plan`` hands out (``prereg.run_id`` ...) and
a git commit tag, one ``log_batch`` of its params and metrics (``nll`` at 5 steps, ``steps`` once), and
``set_terminated``. The set-up's wall time is printed when it is built.

Timed, in alternating order, each in a fresh process so both sides pay their imports and open the store:
(a) ``python -c`` with ``MlflowClient(uri).search_runs([experiment id], max_results=50000)`` paged until no
token: MLflow's run objects with params, tags and latest metrics; (b) the ``collect import`` console script
into a fresh runs folder, which runs the same search and then matches each run to the plan by its tags,
checks every value, hashes what it read, and appends 10 000 sealed, chained records to the ledger in one
atomic batch. Printed: min / median / max wall seconds and the children's CPU seconds of each, the ratio of
the medians (goal <= 3x), the load average. Every import is checked: 10 000 records, one per planned run,
each with its MLflow provenance, and sampled records' metrics equal to the values logged.
``--nll-take final-step`` freezes ``nll`` as its value at its last step, 4 (``tracker: {take: step, step: 4}``):
MLflow's latest value is that value, so the import reads it from the search as for ``last``.
``--nll-take step`` freezes ``nll`` as its value at step 2 (``tracker: {take: step, step: 2}``), which the import
reads from each run's metric history (one ``get_metric_history`` per run); a third side is then timed, MLflow's
own ``search_runs`` followed by ``get_metric_history(run, "nll")`` for every run, the same reads the import makes.
``--profile FILE`` also runs one import under cProfile and prints where its time goes.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BIN = Path(sys.executable).parent
EXPERIMENT = "mlflow-import-bench"
SITES = 50
NLL_STEPS = 5
TAKE_STEP = 2  # the step --nll-take step reads

PLAN = """schema: prereg/v1
study: mlflow-import-bench
title: MLflow import benchmark, {runs} runs
hypothesis: Arm b is noninferior to arm a in held-out NLL.
arms:
  a: {{policy: a}}
  b: {{policy: b}}
strata:
  factors:
    site: [{sites}]
    trial: [{trials}]
  replicates: 1
metrics:
  nll:   {{unit: nats, better: lower, evidence: measured{nll_tracker}}}
  steps: {{unit: steps, better: lower, evidence: measured}}
invalidators:
  - {{id: sane_nll, kind: metric_bounds, metric: nll, min: 0.0, max: 20.0, blocks: all}}
gates:
  - {{id: nll_t, metric: nll, contrast: b - a, method: t, confidence: 0.90, pass_if: upper < 0.05}}
decision:
  claim: b is noninferior to a.
  require: all
  multiplicity: none
"""

SEARCH = """
import sys
from mlflow import MlflowClient
client = MlflowClient(tracking_uri=sys.argv[1])
runs, token = [], None
while True:
    page = client.search_runs([sys.argv[2]], max_results=50000, page_token=token)
    runs.extend(page)
    token = page.token
    if not token:
        break
if len(sys.argv) > 3:  # and each run's history of one metric, as the import reads a value at a step
    for r in runs:
        client.get_metric_history(r.info.run_id, sys.argv[3])
print(len(runs), sum(len(r.data.metrics) + len(r.data.params) + len(r.data.tags) for r in runs))
"""


def logged_values(seed: int, arm: str) -> tuple[list[float], float]:
    """The ``nll`` series (one value per step 0..4; the last is the run's) and ``steps`` logged for a run."""
    digest = hashlib.sha256(f"{seed}:{arm}".encode()).digest()
    base = 2.0 + int.from_bytes(digest[:4], "big") / 2**32
    series = [round(base + 0.5 * (NLL_STEPS - 1 - s), 6) for s in range(NLL_STEPS)]
    return series, float(1000 + digest[4])


def plan_text(runs: int, take: str) -> str:
    """The plan; ``take`` is how ``nll`` is read: ``last`` (MLflow's latest value), ``final-step`` (at step 4,
    the last) or ``step`` (at step 2)."""
    trials = runs // (2 * SITES)
    return PLAN.format(
        runs=runs,
        sites=", ".join(map(str, range(SITES))),
        trials=", ".join(map(str, range(trials))),
        nll_tracker={
            "last": "",
            "final-step": f", tracker: {{take: step, step: {NLL_STEPS - 1}}}",
            "step": f", tracker: {{take: step, step: {TAKE_STEP}}}",
        }[take],
    )


def build_store(folder: Path, runs: int, take: str) -> tuple[dict[str, object], bool]:
    """Plan, lock and sqlite MLflow store with every planned run logged (module doc), and whether it was
    reused: a complete store of the same plan is (``complete.json`` is written last)."""
    text = plan_text(runs, take)
    marker = folder / "complete.json"
    key = hashlib.sha256(text.encode()).hexdigest()
    uri = f"sqlite:///{(folder / 'mlflow.db').resolve()}"  # four slashes: an absolute path
    if marker.is_file() and json.loads(marker.read_text()).get("plan_sha256") == key:
        return {**json.loads(marker.read_text()), "uri": uri}, True
    building = folder / "building.json"
    if folder.exists() and any(folder.iterdir()) and not (marker.is_file() or building.is_file()):
        raise SystemExit(f"{folder}: not empty and not a store this benchmark made; name another --store-dir")
    if folder.exists():
        shutil.rmtree(folder)  # an unfinished or other-sized store of this benchmark
    folder.mkdir(parents=True)
    building.write_text("{}")
    (folder / "plan.yaml").write_text(text)
    lock = folder / "plan.lock.json"
    subprocess.run(
        [str(BIN / "prereg"), "freeze", str(folder / "plan.yaml"), "-o", str(lock)], check=True, capture_output=True
    )
    time.sleep(0.01)  # every run starts after the freeze

    import logging

    from mlflow import MlflowClient
    from mlflow.entities import Metric, Param

    from collect.api import planned_runs
    from collect.importing.planned import planned_tags
    from prereg.api import load_lock

    logging.getLogger("mlflow").setLevel(logging.WARNING)
    plan = load_lock(lock).plan
    planned = planned_runs(lock)
    start = time.perf_counter()
    client = MlflowClient(tracking_uri=uri)
    experiment_id = client.create_experiment(EXPERIMENT)
    for i, run in enumerate(planned):
        now = int(time.time() * 1000)
        tags = {**planned_tags(plan, run), "mlflow.source.git.commit": "0" * 40}
        created = client.create_run(experiment_id, start_time=now, tags=tags, run_name=f"{run.arm}-{i}")
        series, steps = logged_values(run.seed, run.arm)
        metrics = [Metric("nll", v, now + s, s) for s, v in enumerate(series)] + [Metric("steps", steps, now, 0)]
        params = [Param(k, str(v)) for k, v in sorted(run.params.items())] + [Param("seed", str(run.seed))]
        client.log_batch(created.info.run_id, metrics=metrics, params=params)
        client.set_terminated(created.info.run_id, "FINISHED", end_time=now + 1)
        if (i + 1) % 1000 == 0:
            print(f"  logged {i + 1} / {len(planned)} runs, {time.perf_counter() - start:.0f} s", flush=True)
    info: dict[str, object] = {
        "plan_sha256": key,
        "runs": len(planned),
        "experiment_id": experiment_id,
        "setup_s": round(time.perf_counter() - start, 1),
        "load_at_setup": [round(x, 2) for x in os.getloadavg()],
    }
    marker.write_text(json.dumps(info))
    building.unlink()
    return {**info, "uri": uri}, False


def timed(cmd: list[str]) -> tuple[float, float, subprocess.CompletedProcess[str]]:
    """Wall seconds (from the parent, interpreter start included) and the child's CPU seconds."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return wall, cpu, done


def check_import(out: Path, expected: dict[str, tuple[float, float]], source: str, rng: random.Random) -> None:
    """10 000 records, one per planned run, each from the store; sampled metrics equal to the logged values."""
    records = [json.loads(line) for line in (out / "ledger.jsonl").read_text().splitlines()]
    by_id = {r["run_id"]: r for r in records}
    if len(records) != len(expected) or set(by_id) != set(expected):
        raise SystemExit(f"import wrote {len(records)} records for {len(expected)} planned runs")
    if any((r.get("provenance") or {}).get("uri") != source for r in records):
        raise SystemExit("a record without the store's provenance")
    for run_id in rng.sample(sorted(expected), 20):
        got = by_id[run_id]["metrics"]
        got = {k: (v["value"] if isinstance(v, dict) else v) for k, v in got.items()}
        if (got["nll"], got["steps"]) != expected[run_id]:
            raise SystemExit(f"{run_id}: imported {got}, logged {expected[run_id]}")


def summary(values: list[float]) -> str:
    return f"{min(values):.2f} / {statistics.median(values):.2f} / {max(values):.2f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10000, help="runs in the store (a multiple of 100)")
    parser.add_argument("--repeat", type=int, default=5, help="timed repetitions of each side")
    parser.add_argument(
        "--nll-take",
        choices=("last", "final-step", "step"),
        default="last",
        help="how the plan reads nll: MLflow's latest value (default), the value at its last step (4), or at "
        "step 2 (from its metric history)",
    )
    parser.add_argument("--store-dir", type=Path, help="default: prereg-bench-mlflow-import-TAKE in the temp folder")
    parser.add_argument("--profile", type=Path, help="also profile one import (cProfile) into this file")
    args = parser.parse_args()
    if args.runs <= 0 or args.runs % (2 * SITES):
        parser.error("--runs must be a positive multiple of 100")
    print(
        f"python {sys.version.split()[0]}, {os.cpu_count()} cpus; console scripts from {BIN}; "
        f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}",
        flush=True,
    )
    if args.store_dir is None:
        args.store_dir = Path(tempfile.gettempdir()) / f"prereg-bench-mlflow-import-{args.nll_take}"
    info, reused = build_store(args.store_dir, args.runs, args.nll_take)
    print(
        f"store {info['uri']}: {info['runs']} runs, set-up {info['setup_s']} s "
        f"(load then {info['load_at_setup']}){'; reused' if reused else ''}",
        flush=True,
    )
    from collect.api import planned_runs

    lock = args.store_dir / "plan.lock.json"
    expected = {}
    for run in planned_runs(lock):
        series, steps = logged_values(run.seed, run.arm)
        expected[run.run_id] = (series[TAKE_STEP] if args.nll_take == "step" else series[-1], steps)
    source = f"mlflow:{info['uri']}"
    search_cmd = [sys.executable, "-c", SEARCH, str(info["uri"]), str(info["experiment_id"])]
    rng = random.Random(0)
    sides = ["search_runs", "import"] + (["search_runs+history"] if args.nll_take == "step" else [])
    times: dict[str, list[float]] = {side: [] for side in sides}
    cpus: dict[str, list[float]] = {side: [] for side in sides}
    loads = [os.getloadavg()[0]]
    import_cmd = [str(BIN / "collect"), "import", source, "--lock", str(lock), "--experiment", EXPERIMENT, "--out"]
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.repeat + 1):  # round 0 warms the file cache and the bytecode, untimed
            order = sides if i % 2 else sides[::-1]
            for side in order:
                out = Path(tmp) / f"runs{i}"
                cmd = {"search_runs": search_cmd, "search_runs+history": [*search_cmd, "nll"]}.get(
                    side, [*import_cmd, str(out)]
                )
                wall, cpu, done = timed(cmd)
                if done.returncode != 0:
                    raise SystemExit(f"{side} failed ({done.returncode}): {done.stderr[-2000:]}")
                if side != "import":
                    if int(done.stdout.split()[0]) != len(expected):
                        raise SystemExit(f"search_runs returned {done.stdout.split()[0]} runs")
                else:
                    check_import(out, expected, source, rng)
                    shutil.rmtree(out)
                if i:
                    times[side].append(wall)
                    cpus[side].append(cpu)
            loads.append(os.getloadavg()[0])
        for side in sides:
            print(
                f"{side:19s} wall min / median / max {summary(times[side])} s; CPU {summary(cpus[side])} s "
                f"({args.repeat} fresh processes)"
            )
        ratio = statistics.median(times["import"]) / statistics.median(times["search_runs"])
        cpu_ratio = statistics.median(cpus["import"]) / statistics.median(cpus["search_runs"])
        print(
            json.dumps(
                {
                    "runs": len(expected),
                    "search_runs_s_median": round(statistics.median(times["search_runs"]), 2),
                    "import_s_median": round(statistics.median(times["import"]), 2),
                    "ratio_wall_medians": round(ratio, 2),
                    "ratio_cpu_medians": round(cpu_ratio, 2),
                    "load_1min_range": [round(min(loads), 2), round(max(loads), 2)],
                    "imports_checked": args.repeat + 1,
                    **(
                        {
                            "search_runs_history_s_median": round(statistics.median(times["search_runs+history"]), 2),
                            "ratio_import_to_search_runs_history": round(
                                statistics.median(times["import"]) / statistics.median(times["search_runs+history"]), 2
                            ),
                        }
                        if args.nll_take == "step"
                        else {}
                    ),
                }
            )
        )
        if args.profile:
            out = Path(tmp) / "profiled"
            cmd = [sys.executable, "-m", "cProfile", "-o", str(args.profile), *import_cmd, str(out)]
            wall, _, done = timed(cmd)
            if done.returncode != 0:
                raise SystemExit(f"profiled import failed: {done.stderr[-2000:]}")
            import pstats

            print(f"profiled import: {wall:.2f} s under cProfile; top functions by cumulative time:")
            pstats.Stats(str(args.profile)).sort_stats("cumulative").print_stats(40)
    print(
        f"import / search_runs = {ratio:.2f}x (goal <= 3x: {'met' if ratio <= 3 else 'MISSED'}); "
        f"load average at the end {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
