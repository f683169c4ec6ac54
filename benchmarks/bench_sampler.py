"""Does the telemetry recorder slow a real torch training step? And how fast are the summaries?

Run: python benchmarks/bench_sampler.py [--seconds S] [--repeats R] [--sensor SPEC] [--rows N]
     (needs torch: pip install torch==2.13.0)

Part 1 (throughput, steps/s): the toolkit's own trainer (:class:`prereg_seed_studies.torch.trainer.Trainer`,
the collector's default WindowMLP, Adam, 3 sites' micro-batches per step, one torch thread,
deterministic algorithms) runs optimizer steps for S seconds per segment under six conditions,
interleaved in a shuffled order R times: no recorder, no recorder again (a control: this
machine's noise floor), the old in-process thread poller (``mode="thread"``) at 10 ms and 1 ms,
and the out-of-process poller (``mode="process"``, :mod:`collect.telemetry.recording.sampler`) at 10 ms and
1 ms. The recorder polls energy counter + average power and marks one phase per 50 steps.
Printed per condition: median steps/s, the q1 / median / q3 of its ratio to the no-recorder
segment of the same repeat, and the achieved poll interval (median / p95, ms); then each
recorder's loss as the median paired ratio and as the ratio of median steps/s to the pooled
no-recorder segments (less sensitive to one noisy reference segment).
Targets: loss < 2 % at 10 ms and < 5 % at 1 ms (process poller).

Part 2 (summaries): a synthetic N-row energy-counter trace (default 10M rows, updates every 4
polls, wraps) summarised by ``bounds.ledger_summary``; the old per-row unwrap loop
(``old_value_changes`` in ``_baseline_telemetry.py``, the code this replaced) is timed on the same rows and its update
windows, values and resets checked equal to the vectorised ones. Seconds, and ns per row.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

import numpy as np
import torch
from _baseline_telemetry import old_value_changes, synthetic_trace  # benchmarks/ is sys.path[0] as a script

from collect.telemetry.analysis import bounds
from collect.telemetry.analysis import resolution as analysis
from collect.telemetry.recording.recorder import Recorder
from collect.telemetry.sensors.registry import open_sensor
from prereg_seed_studies.torch.collector import PARAMS
from prereg_seed_studies.torch.markov import SourceSpec, make_corpora
from prereg_seed_studies.torch.model import Batches, WindowMLP
from prereg_seed_studies.torch.trainer import Trainer, deterministic

D = {k: v.default for k, v in PARAMS.items()}
SITES = [0, 1, 2]
LABELS = ["none", "none (control)", "thread 10 ms", "thread 1 ms", "process 10 ms", "process 1 ms"]


def train_steps(trainer: Trainer, seconds: float, rec: Recorder | None, start: int) -> tuple[float, int]:
    """Steps per second of real optimizer steps over ``seconds``; a phase mark every 50 steps."""
    steps = 0
    t0 = time.perf_counter()
    end = t0 + seconds
    while time.perf_counter() < end:
        if rec is not None and steps % 50 == 0:
            with rec.phase("compute"):
                for _ in range(50):
                    trainer.step(start + steps, SITES)
                    steps += 1
            continue
        for _ in range(50):
            trainer.step(start + steps, SITES)
            steps += 1
    return steps / (time.perf_counter() - t0), start + steps


def quartiles(values: list[float]) -> tuple[float, float, float]:
    q = statistics.quantiles(values, n=4)
    return q[0], statistics.median(values), q[2]


def throughput(args: argparse.Namespace) -> None:
    spec = SourceSpec(vocab=D["vocab"], order=D["markov_order"], support=D["markov_support"], seed=D["source_seed"])
    corpora = make_corpora(spec, 1, 64, 2048, 1, 256 + D["context"])
    rates: dict[str, list[float]] = {k: [] for k in LABELS}
    polls: dict[str, list[tuple[float, float]]] = {k: [] for k in LABELS[2:]}
    with deterministic(1, 1):
        model = WindowMLP(D["vocab"], D["context"], D["emb"], D["width"])
        trainer = Trainer(model, Batches(corpora.train, D["context"], D["micro_batch"], 1), D["lr"], None)
        _, step = train_steps(trainer, 1.0, None, 1)  # warm up
        order = random.Random(0)
        for _ in range(args.repeats):
            for label in order.sample(LABELS, len(LABELS)):
                if label.startswith("none"):
                    rate, step = train_steps(trainer, args.seconds, None, step)
                    rates[label].append(rate)
                    continue
                mode, ms, _ = label.split()
                with open_sensor(args.sensor) as sensor:
                    rec = Recorder(sensor, ["energy_counter", "power_average"], float(ms), spec=args.sensor, mode=mode)
                    with rec:  # the child's start-up is outside the timed segment
                        rate, step = train_steps(trainer, args.seconds, rec, step)
                    rates[label].append(rate)
                    polls[label].append(rec.achieved_poll_ms())  # type: ignore[arg-type]
    print(
        f"real torch step (WindowMLP vocab {D['vocab']} ctx {D['context']} emb {D['emb']} width {D['width']}, "
        f"3 x {D['micro_batch']} windows, Adam, 1 thread), {args.repeats} shuffled repeats of {args.seconds:g} s, "
        f"sensor {args.sensor}"
    )
    print(f"{'recorder':16s} {'steps/s':>9s} {'ratio to none: q1 / median / q3':>34s} {'poll median / p95 ms':>22s}")
    for label in LABELS:
        ratios = [r / n for r, n in zip(rates[label], rates["none"], strict=True)]
        q1, med, q3 = quartiles(ratios)
        poll = ""
        if label in polls:
            poll = (
                f"{statistics.median(p[0] for p in polls[label]):.3f} / "
                f"{statistics.median(p[1] for p in polls[label]):.3f}"
            )
        print(f"{label:16s} {statistics.median(rates[label]):9.1f} {q1:10.4f} / {med:.4f} / {q3:.4f} {poll:>22s}")
    noise = quartiles([r / n for r, n in zip(rates["none (control)"], rates["none"], strict=True)])
    for label in LABELS[2:]:
        loss = 1 - quartiles([r / n for r, n in zip(rates[label], rates["none"], strict=True)])[1]
        pooled = 1 - statistics.median(rates[label]) / statistics.median(rates["none"] + rates["none (control)"])
        print(
            f"throughput loss, {label}: median of paired ratios {100 * loss:.2f}%, "
            f"ratio of medians (both no-recorder conditions pooled) {100 * pooled:.2f}%"
        )
    print(
        f"targets: process 10 ms < 2%, process 1 ms < 5%; control ratio q1..q3 {noise[0]:.3f}..{noise[2]:.3f} "
        "is this machine's noise floor"
    )


def summaries(rows: int) -> None:
    """Each measurement on a fresh trace (no row selection cached from an earlier one)."""
    wrap = 2**32
    synthetic_trace(rows, wrap).rows("energy_counter")  # warm-up: the first touch of this much memory
    trace = synthetic_trace(rows, wrap)
    t0 = time.perf_counter()
    new = analysis.value_changes(trace, "energy_counter", wrap)
    t_new = time.perf_counter() - t0
    trace = synthetic_trace(rows, wrap)
    t0 = time.perf_counter()
    old = old_value_changes(trace, "energy_counter", wrap)
    t_old = time.perf_counter() - t0
    same = (
        np.array_equal(old.lo_ns, new.lo_ns)
        and np.array_equal(old.hi_ns, new.hi_ns)
        and np.array_equal(old.value, new.value)
        and old.resets == new.resets
        and old.first_value == new.first_value
        and old.first_hi_ns == new.first_hi_ns
    )
    trace = synthetic_trace(rows, wrap)
    a, b = int(trace.poll_ns[rows // 4]), int(trace.poll_ns[3 * rows // 4])
    t0 = time.perf_counter()
    summary = bounds.ledger_summary(trace, "energy_counter", a, b, 50.0, 700.0, wrap_mj=wrap)
    t_sum = time.perf_counter() - t0
    print(
        f"summaries of {rows:,} rows (fresh trace each): value_changes with the old per-row loop {t_old:.2f} s "
        f"({1e9 * t_old / rows:.0f} ns/row), vectorised {t_new:.3f} s ({1e9 * t_new / rows:.1f} ns/row), "
        f"identical: {same}; whole ledger_summary (vectorised) {t_sum:.2f} s; summary {summary}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--seconds", type=float, default=0.5)
    parser.add_argument("--repeats", type=int, default=24)
    parser.add_argument("--sensor", default="sim:clock=real")
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--skip", choices=["throughput", "summaries"], default=None)
    args = parser.parse_args()
    torch.set_num_threads(1)
    if args.skip != "summaries":
        summaries(args.rows)
    if args.skip != "throughput":
        throughput(args)


if __name__ == "__main__":
    main()
