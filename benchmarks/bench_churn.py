"""The vectorised churn Monte Carlo against an equivalent SimPy process model, same parameters.

Run: python benchmarks/bench_churn.py [--mtbf-s M] [--checkpoint-s C] [--restart-s R]
                                      [--workers N ...] [--segments K] [--seed S]

SimPy is optional (``pip install simpy``); without it this says so and exits 0.

The SimPy model is the textbook process form of the same renewal model: a worker process runs
segments of ``w* + C`` seconds back to back; a preempter process sleeps an exponential time of
rate ``workers / mtbf_s`` and interrupts it; the worker pays ``restart_s`` and retries the segment;
the preempter's clock is stopped during restarts (restarts are failure-free, as in the law). Each
model simulates ``K`` segments at the exact optimal interval; printed per worker count: both
efficiencies with their 95 % CI (CLT on i.i.d. segment times), whether they agree within MC error,
the closed form, segments simulated per second by each, and the speed ratio (target >= 50x).
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import sys
import time

import numpy as np

from prereg_seed_studies.multisite import churn_law as law


def simpy_segments(simpy: object, rate: float, T: float, R: float, segments: int, seed: int) -> np.ndarray:
    """Wall time of each completed segment in a SimPy process model."""
    env = simpy.Environment()  # type: ignore[attr-defined]
    rng = random.Random(seed)
    done: list[float] = []
    state = {"restarting": None}

    def worker():  # type: ignore[no-untyped-def]
        start = env.now
        while len(done) < segments:
            try:
                yield env.timeout(T)
                done.append(env.now - start)
                start = env.now
            except simpy.Interrupt:  # type: ignore[attr-defined]
                resumed = env.event()
                state["restarting"] = resumed
                yield env.timeout(R)
                resumed.succeed()

    def preempter(target):  # type: ignore[no-untyped-def]
        while True:
            yield env.timeout(rng.expovariate(rate))
            if not target.is_alive:
                return
            target.interrupt()
            yield env.timeout(0)  # let the worker enter its restart
            yield state["restarting"]

    proc = env.process(worker())
    env.process(preempter(proc))
    env.run(until=proc)
    return np.asarray(done)


def ci(w: float, seg_times: np.ndarray) -> tuple[float, float, float]:
    """Efficiency ``w / mean`` and its 95 % CI from i.i.d. segment times."""
    mean, se = seg_times.mean(), seg_times.std(ddof=1) / math.sqrt(seg_times.size)
    return w / mean, w / (mean + 1.96 * se), w / (mean - 1.96 * se)


def timed(fn, repeats: int):  # type: ignore[no-untyped-def]
    """(result of the last call, median seconds per call)."""
    times, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return out, statistics.median(times)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mtbf-s", type=float, default=3600.0)
    ap.add_argument("--checkpoint-s", type=float, default=120.0)
    ap.add_argument("--restart-s", type=float, default=300.0)
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 8, 32])
    ap.add_argument("--segments", type=int, default=20_000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    try:
        import simpy
    except ImportError:
        print("SimPy is not installed (pip install simpy); nothing to compare against. Skipping.")
        return 0

    C, R, K = args.checkpoint_s, args.restart_s, args.segments
    print(
        f"churn Monte Carlo vs SimPy {simpy.__version__}: MTBF {args.mtbf_s:g} s/worker, C {C:g} s, "
        f"R {R:g} s, {K} segments at the exact interval, seed {args.seed}"
    )
    ratios = []
    for n in args.workers:
        rate = n / args.mtbf_s
        w = law.optimal_interval(rate, C)
        exact = law.efficiency(w, rate, C, R)
        ours, t_ours = timed(lambda w=w, rate=rate: law.mc_efficiency(w, rate, C, R, segments=K, seed=args.seed), 7)
        seg, t_simpy = timed(lambda w=w, rate=rate: simpy_segments(simpy, rate, w + C, R, K, args.seed), 1)
        e, lo, hi = ci(w, seg)
        se = math.hypot((ours.upper - ours.lower) / 3.92, (hi - lo) / 3.92)
        z = (ours.estimate - e) / se
        ratios.append(t_simpy / t_ours)
        print(f"\nworkers {n}: job MTBF {1 / rate:.6g} s, interval {w:.6g} s, closed form {exact:.5f}")
        print(
            f"  numpy MC  {ours.estimate:.5f} [{ours.lower:.5f}, {ours.upper:.5f}]  "
            f"{t_ours * 1e3:8.2f} ms  {K / t_ours:12,.0f} segments/s"
        )
        print(f"  SimPy     {e:.5f} [{lo:.5f}, {hi:.5f}]  {t_simpy * 1e3:8.2f} ms  {K / t_simpy:12,.0f} segments/s")
        print(
            f"  difference {ours.estimate - e:+.5f} = {z:+.2f} combined SE -> "
            f"{'equal within MC error' if abs(z) < 1.96 else 'NOT equal within MC error'}; "
            f"speed ratio {t_simpy / t_ours:,.0f}x"
        )
    hist, t_run = timed(
        lambda: law.simulate_job(
            law.GapStream(args.seed),
            args.workers[-1] / args.mtbf_s,
            law.optimal_interval(args.workers[-1] / args.mtbf_s, C) + C,
            1_000_000,
            R,
        ),
        3,
    )
    print(
        f"\none collector-style history, 1,000,000 segments, {args.workers[-1]} workers: {t_run * 1e3:.1f} ms "
        f"({1e6 / t_run:,.0f} segments/s, {hist.failures:,} failures)"
    )
    print(f"speed ratio (SimPy time / ours): min {min(ratios):,.0f}x (target >= 50x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
