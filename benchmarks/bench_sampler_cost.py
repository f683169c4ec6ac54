"""What does ``collect.measure``'s sampler cost a real torch training step?

Run: python benchmarks/bench_sampler_cost.py [--steps N] [--repeats R] [--sensor SPEC]
     python benchmarks/bench_sampler_cost.py --design toggle [--pairs P] [--block-steps K]
     (needs torch: pip install torch==2.13.0)

One torch thread (``torch.set_num_threads(1)``), one small MLP (256 -> 512 -> 512 -> 10, ReLU,
batch 64, cross-entropy, SGD with momentum) on the CPU: each step is a forward, a backward and an
optimizer step of a few ms. Each *segment* times the same N steps (the same model, data and thread
count) under one condition; conditions run interleaved in a shuffled order, R times:

* ``none`` and ``none (control)``: no sampler (the control's ratio to ``none`` is this machine's noise);
* ``process 10 ms`` / ``process 1 ms``: ``collect.measure(SPEC, poll_ms=...)`` with its default
  ``mode="auto"``, which polls ``sim:...`` and ``nvml`` from a child process;
* ``thread 10 ms`` / ``thread 1 ms``: the same with ``mode="thread"`` (a polling thread in this
  process, which takes the GIL at every poll), for comparison.

Every sampled segment marks one phase per 50 steps (``m.phase("compute")``); the sampler's start-up
(a fresh interpreter for the child) is outside the timed steps. Two figures per segment: its median
step time (robust to this process being descheduled now and then by other load) and its whole
time (steps and phase marks). Printed per condition and figure: ms per step, the q1 / median / q3
of its ratio to the ``none`` segment of the same repeat, the slowdown (median paired ratio - 1,
and the ratio of pooled medians), the achieved poll interval, and the sampler child's CPU use (``/proc/<pid>/stat`` utime + stime over the timed steps, as a share
of one core: the spare core it needs). Targets: slowdown < 2 % at 10 ms.

``--design toggle`` measures the child sampler's running cost with far less machine noise: one
``collect.measure`` per poll interval stays open while the training steps run in short blocks of K
steps; before each block the polling child is resumed (``SIGCONT``, the sampler runs) or stopped
(``SIGSTOP``, it takes no CPU and sends nothing), in a shuffled order within each round of three
blocks: ``on``, ``off`` and ``off (control)``. Neighbouring blocks share the machine's load of the
moment, so the ratio of a round's ``on`` block to its ``off`` block cancels slow drift; the
``off (control)`` / ``off`` ratio is the same figure with no sampler in either (it must sit at 0).
Printed per interval: the mean of the log ratios as a slowdown with its 95% interval (t over the
rounds), the median ratio, and the control's. The sampler's start-up and its final hand-over are
outside the blocks (the segment design above counts neither either); the phase marks, one per
block, happen in every condition and cancel.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import random
import signal
import statistics
import time
from typing import Any

import torch

import collect

LABELS = ["none", "none (control)", "process 10 ms", "process 1 ms", "thread 10 ms", "thread 1 ms"]
PHASE_STEPS = 50


class Step:
    """One training step of a small MLP on fixed random data (a few ms on one CPU thread)."""

    def __init__(self, seed: int = 0) -> None:
        torch.manual_seed(seed)
        self.model = torch.nn.Sequential(
            torch.nn.Linear(256, 512),
            torch.nn.ReLU(),
            torch.nn.Linear(512, 512),
            torch.nn.ReLU(),
            torch.nn.Linear(512, 10),
        )
        self.opt = torch.optim.SGD(self.model.parameters(), lr=1e-3, momentum=0.9)
        self.x = torch.randn(64, 256)
        self.y = torch.randint(0, 10, (64,))
        self.loss = torch.nn.CrossEntropyLoss()

    def __call__(self) -> None:
        self.opt.zero_grad(set_to_none=True)
        self.loss(self.model(self.x), self.y).backward()
        self.opt.step()


def cpu_ticks(pid: int) -> int | None:
    """utime + stime of process ``pid`` in clock ticks (Linux ``/proc``), None elsewhere."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(") ", 1)[1].split()
        return int(fields[11]) + int(fields[12])
    except (OSError, IndexError, ValueError):
        return None


def child_pid(m: Any) -> int | None:
    """The polling child's pid (process mode only)."""
    rec = getattr(m, "_rec", None)
    child = getattr(rec, "_child", None)
    proc = getattr(child, "_proc", None)
    return getattr(proc, "pid", None)


def timed_steps(step: Step, n: int, m: Any | None) -> tuple[float, float]:
    """``n`` steps: (whole segment's seconds, median seconds of one step); with a measurement, one
    phase per :data:`PHASE_STEPS` steps (its marks count in the segment, not in a step)."""
    clock = time.perf_counter
    times: list[float] = []
    t0 = clock()
    while len(times) < n:
        k = min(PHASE_STEPS, n - len(times))
        mark = m.phase("compute") if m is not None else contextlib.nullcontext()
        with mark:
            for _ in range(k):
                a = clock()
                step()
                times.append(clock() - a)
    return clock() - t0, statistics.median(times)


def quartiles(values: list[float]) -> tuple[float, float, float]:
    q = statistics.quantiles(values, n=4)
    return q[0], statistics.median(values), q[2]


def run(args: argparse.Namespace) -> None:
    step = Step()
    timed_steps(step, 3 * args.steps, None)  # warm up
    whole: dict[str, list[float]] = {k: [] for k in LABELS}  # segment seconds
    typical: dict[str, list[float]] = {k: [] for k in LABELS}  # median step seconds
    polls: dict[str, list[float]] = {k: [] for k in LABELS[2:]}
    cpu: dict[str, list[float]] = {k: [] for k in LABELS[2:]}
    tick = os.sysconf("SC_CLK_TCK")
    order = random.Random(0)
    load0 = os.getloadavg()
    for _ in range(args.repeats):
        for label in order.sample(LABELS, len(LABELS)):
            if label.startswith("none"):
                seg, med = timed_steps(step, args.steps, None)
            else:
                mode, ms, _ = label.split()
                with collect.measure(args.sensor, poll_ms=float(ms), mode=mode) as m:
                    pid = child_pid(m)
                    before = cpu_ticks(pid) if pid else None
                    seg, med = timed_steps(step, args.steps, m)
                    after = cpu_ticks(pid) if pid else None
                achieved = m.result().achieved_poll_ms
                if achieved is not None:
                    polls[label].append(achieved)
                if before is not None and after is not None:
                    cpu[label].append((after - before) / tick / seg)
            whole[label].append(seg)
            typical[label].append(med)
    load1 = os.getloadavg()
    print(
        f"small MLP step (256-512-512-10, batch 64, SGD), 1 torch thread, {args.steps} steps per segment, "
        f"{args.repeats} shuffled repeats, sensor {args.sensor}; {os.cpu_count()} cores; load average (1 min) "
        f"{load0[0]:.2f} at the start, {load1[0]:.2f} at the end; no sampler: "
        f"{1e3 * statistics.median(typical['none']):.3f} ms per step (median)"
    )
    for name, data in (("median step time", typical), ("whole segment (steps + phase marks)", whole)):
        print(f"\n{name}: ratio to the no-sampler segment of the same repeat")
        print(
            f"{'sampler':15s} {'ms/step':>8s} {'ratio q1 / median / q3':>26s} {'slowdown: paired / pooled':>26s}"
            f" {'poll ms':>8s} {'child CPU':>10s}"
        )
        pooled_none = statistics.median(data["none"] + data["none (control)"])
        for label in LABELS:
            ratios = [s / n for s, n in zip(data[label], data["none"], strict=True)]
            q1, med, q3 = quartiles(ratios)
            slow = f"{100 * (med - 1):+.2f}% / {100 * (statistics.median(data[label]) / pooled_none - 1):+.2f}%"
            poll = f"{statistics.median(polls[label]):.3f}" if polls.get(label) else ""
            share = f"{100 * statistics.median(cpu[label]):.1f}%" if cpu.get(label) else ""
            per_step = statistics.median(data[label]) / (args.steps if data is whole else 1) * 1e3
            print(f"{label:15s} {per_step:8.3f} {q1:8.4f} / {med:.4f} / {q3:.4f} {slow:>26s} {poll:>8s} {share:>10s}")
    print(
        "\nslowdown = time with the sampler / without, minus 1 (positive: slower; pooled: against both "
        "no-sampler conditions' median); target < 2% at 10 ms; child CPU = the polling child's share of one core"
    )


def toggle(args: argparse.Namespace) -> None:
    """The ``--design toggle`` measurement (see the module doc)."""
    step = Step()
    timed_steps(step, 3 * args.block_steps * 10, None)  # warm up
    order = random.Random(1)
    load0 = os.getloadavg()
    rows = []
    for ms in (10.0, 1.0):
        med: dict[str, list[float]] = {"on": [], "off": [], "off (control)": []}
        with collect.measure(args.sensor, poll_ms=ms, mode="process") as m:
            pid = child_pid(m)
            if pid is None:
                raise SystemExit(f"sensor {args.sensor!r} is not polled from a child process: nothing to toggle")
            try:
                for _ in range(args.pairs):
                    for label in order.sample(list(med), 3):
                        os.kill(pid, signal.SIGCONT if label == "on" else signal.SIGSTOP)
                        med[label].append(timed_steps(step, args.block_steps, m)[1])
            finally:
                os.kill(pid, signal.SIGCONT)
        for label in ("on", "off (control)"):
            logs = [math.log(a / b) for a, b in zip(med[label], med["off"], strict=True)]
            mean, se = statistics.fmean(logs), statistics.stdev(logs) / math.sqrt(len(logs))
            half = 1.96 * se
            ratio = statistics.median(a / b for a, b in zip(med[label], med["off"], strict=True))
            rows.append(
                (
                    f"{ms:g} ms",
                    label,
                    1e3 * statistics.median(med[label]),
                    100 * math.expm1(mean),
                    100 * math.expm1(mean - half),
                    100 * math.expm1(mean + half),
                    ratio,
                )
            )
    load1 = os.getloadavg()
    print(
        f"toggle design: small MLP step, 1 torch thread, {args.pairs} rounds of 3 blocks x {args.block_steps} steps "
        f"per poll interval, sensor {args.sensor}; {os.cpu_count()} cores; load average (1 min) {load0[0]:.2f} at "
        f"the start, {load1[0]:.2f} at the end"
    )
    print(f"{'poll':>6s} {'block':14s} {'ms/step':>8s} {'slowdown (95% interval)':>28s} {'median ratio':>13s}")
    for poll, label, per_step, mid, lo, hi, ratio in rows:
        print(f"{poll:>6s} {label:14s} {per_step:8.3f} {mid:+8.2f}% ({lo:+.2f}% .. {hi:+.2f}%) {ratio:13.4f}")
    print(
        "\nslowdown = exp(mean log(block / its round's 'off' block)) - 1; 'on': the sampler child running, "
        "'off (control)': stopped in both (this machine's noise); target < 2% at 10 ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=12)
    parser.add_argument("--sensor", default="sim:clock=real")
    parser.add_argument("--design", choices=("segments", "toggle"), default="segments")
    parser.add_argument("--pairs", type=int, default=300, help="toggle design: rounds per poll interval")
    parser.add_argument("--block-steps", type=int, default=25, help="toggle design: steps per block")
    args = parser.parse_args()
    torch.set_num_threads(1)
    toggle(args) if args.design == "toggle" else run(args)


if __name__ == "__main__":
    main()
