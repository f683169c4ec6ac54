"""Does the telemetry recorder slow the training thread? Throughput with and without it, one run.

Run: python benchmarks/bench_sampler.py [--seconds S] [--repeats R] [--sensor SPEC]

A CPU training-like loop (float32 matmuls and a tanh, the shapes of a small MLP layer; numerics
stationary) runs in short segments of S seconds under four conditions, interleaved in a shuffled
order R times: no recorder, no recorder again (a control that shows this machine's noise floor),
the recorder polling the sensor (energy counter + average power) every 20 ms, and every 1 ms.
Printed per condition: median steps per second, the median and interquartile range of its ratio
to the no-recorder segment of the same repeat, and the achieved poll interval (median / p95).
Target: < 2 % throughput loss at 1 ms.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

import numpy as np

from collect.telemetry.registry import open_sensor
from collect.telemetry.recorder import Recorder


def train_steps(seconds: float, w: np.ndarray, x: np.ndarray) -> float:
    """Steps per second of the training-like loop over ``seconds``."""
    grad = np.empty_like(w)
    steps = 0
    start = time.perf_counter()
    end = start + seconds
    while time.perf_counter() < end:
        h = np.tanh(x @ w)
        np.matmul(x.T, h, out=grad)
        steps += 1
    return steps / (time.perf_counter() - start)


def quartiles(values: list[float]) -> tuple[float, float, float]:
    q = statistics.quantiles(values, n=4)
    return q[0], statistics.median(values), q[2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=0.5)
    parser.add_argument("--repeats", type=int, default=16)
    parser.add_argument("--sensor", default="sim:clock=real")
    parser.add_argument("--size", type=int, default=512, help="layer width (batch = width / 2)")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    w = rng.standard_normal((args.size, args.size)).astype(np.float32)
    x = rng.standard_normal((args.size // 2, args.size)).astype(np.float32)
    labels = ["none", "none (control)", "20 ms", "1 ms"]
    rates: dict[str, list[float]] = {k: [] for k in labels}
    polls: dict[str, list[tuple[float, float]]] = {"20 ms": [], "1 ms": []}
    train_steps(0.5, w, x)  # warm up
    order = random.Random(0)
    for _ in range(args.repeats):
        for label in order.sample(labels, len(labels)):
            if label.startswith("none"):
                rates[label].append(train_steps(args.seconds, w, x))
                continue
            sensor = open_sensor(args.sensor)
            recorder = Recorder(sensor, ["energy_counter", "power_average"], float(label.split()[0]))
            with recorder, recorder.phase("train"):
                rates[label].append(train_steps(args.seconds, w, x))
            polls[label].append(recorder.achieved_poll_ms())  # type: ignore[arg-type]
            sensor.close()
    print(f"training-like loop ({args.size}x{args.size}, batch {args.size // 2}), {args.repeats} shuffled repeats "
          f"of {args.seconds:g} s per condition, sensor {args.sensor}")
    print(f"{'recorder':16s} {'steps/s':>9s} {'ratio to none: q1 / median / q3':>34s} {'poll median / p95 ms':>22s}")
    for label in labels:
        ratios = [r / n for r, n in zip(rates[label], rates["none"])]
        q1, med, q3 = quartiles(ratios)
        poll = ""
        if label in polls:
            poll = f"{statistics.median(p[0] for p in polls[label]):.3f} / {statistics.median(p[1] for p in polls[label]):.3f}"
        print(f"{label:16s} {statistics.median(rates[label]):9.1f} {q1:10.4f} / {med:.4f} / {q3:.4f} {poll:>22s}")
    loss = 1 - quartiles([r / n for r, n in zip(rates["1 ms"], rates["none"])])[1]
    noise = quartiles([r / n for r, n in zip(rates["none (control)"], rates["none"])])
    print(f"median throughput loss at 1 ms: {100 * loss:.2f}% (target < 2%; the control's interquartile range "
          f"{noise[0]:.3f}..{noise[2]:.3f} is this machine's noise)")


if __name__ == "__main__":
    main()
