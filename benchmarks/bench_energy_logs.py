"""Energy from logs against a device with known truth: coverage of the gate's interval and power to decide.

Run: python benchmarks/bench_energy_logs.py [--sims N] [--sims-long N] [--jobs J] [--seed S] [--lengths 10,600,3600]
[--out PATH]

Every simulated run is a synthetic GPU (``collect.telemetry.logs.synthetic_device``) observed at once
by every logger (``collect.telemetry.logs.synthetic_writers``): Zeus (one window; ten back-to-back
windows), CodeCarbon (a line every 15 s), ``dcgmi dmon -e 155,156`` at ``-d 100`` and ``-d 1000``
(its ``TOTEC`` counter and its ``POWER`` under the ``average`` model) and nvidia-smi ``power.draw``
at ``-lms 100`` (the driver's true 1 s average under ``average``; a part-time reading, 25 ms of each
100 ms, under ``part-time``). Each log is converted by the real converter (``FORMATS``) with the
device's power range and declared counter period, and its energy taken as ``run_energy``'s total
(``interval_energy`` over the interval ``run_energy`` takes: a log has no idle window).

A study is 6 blocks (pairs) of ``continue`` and ``restart`` runs of the same length; each block has
its own scale (log-normal, sd 0.05), each run 1% log-normal noise; ``continue`` draws 0.85 x the
power of plain ``restart`` (a true 15% saving). Power patterns (the arm-dependent edges are in
``restart``): ``plain``; ``end-burst`` (restart writes a checkpoint at its end: +200 W for the last
2 s); ``start-power`` (restart reads its checkpoint at 120 W for the first 5 s). The population
log ratio is known exactly from the patterns. Each log kind's gate is the one a plan would run:
the paired log ratios (continue / restart) with a 90% t interval, and
``estimators.resolution_check`` with each run's arm-dependent bound (``systematic_bound_j``)
propagated to the blocks, rule ``upper < 0.95``.

Printed per cell (log kind x run length x counter period x pattern):

* coverage: how often the t interval widened by the resolution shift (``interval_bound``, log scale)
  holds the true log ratio; goal >= 90% in every cell;
* pass: how often the gate PASSES and is resolvable (not ``could_change``); with the plain pattern
  at 600 s this is the power to decide a true 15% saving against a 5% margin (goal >= 80% for
  counter logs at 100 ms);
* bounds: how often each run's guaranteed bounds ``[lower_j, upper_j]`` held the true energy of the
  interval its trace covers (every run of the cell), and the median arm-dependent bound (% of energy).

Monte Carlo standard errors are binomial: sqrt(p (1 - p) / N); a cell is flagged **below** when its
coverage's 95% Monte Carlo upper bound (p + 1.96 SE) is under 90%. A summary (the lowest coverage
per log kind and run length, and the plain pattern's pass rate) comes first, then every cell. Cells of one length, period and
pattern share their simulated runs (every logger watched the same device), so they are correlated
with each other; the studies of a cell are independent.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from collect.telemetry.analysis.phases import interval_energy
from collect.telemetry.logs.common import LogOptions
from collect.telemetry.logs.formats import FORMATS
from collect.telemetry.logs.synthetic_device import EnergyCounter, PowerGauge, PowerPattern
from collect.telemetry.logs.synthetic_writers import (
    SyntheticLog,
    codecarbon_csv,
    dcgm_dmon,
    dmon_sample_times,
    nvidia_smi_csv,
    smi_poll_times,
    zeus_csv,
)
from estimators import propagate_bounds, resolution_check
from estimators.vocabulary import Rule

POWER_RANGE_W = (50.0, 700.0)  # the simulated device's physical range, given to every converter
SAVING = 0.85  # continue / restart, plain pattern
PAIRS = 6
CONFIDENCE = 0.90
RULE = "upper < 0.95"
NOISE_SD = 0.01  # run-to-run, log scale
BLOCK_SD = 0.05  # block scale, log scale
LENGTHS_S = (10.0, 600.0, 3600.0)
PERIODS_MS = (20.0, 100.0, 1000.0)
PATTERNS = ("plain", "end-burst", "start-power")
COUNTER_KINDS = ("zeus-1window", "zeus-windows", "codecarbon", "dcgm-counter-d100", "dcgm-counter-d1000")
POWER_KINDS = ("dcgm-power-average", "smi-average", "smi-part-time")
POWER_PERIOD_MS = 100.0  # power logs do not depend on the counter period: run with this one only


def restart_pattern(pattern: str, run_s: float, scale: float) -> PowerPattern:
    """The restart arm's power (module doc)."""
    extra: dict[str, float] = {}
    if pattern == "end-burst":
        extra = {"end_burst_w": 200.0, "end_burst_s": 2.0}
    elif pattern == "start-power":
        extra = {"start_w": 120.0, "start_s": 5.0}
    return PowerPattern(run_s=run_s, scale=scale, **extra)


def continue_pattern(run_s: float, scale: float) -> PowerPattern:
    """The continue arm's power: plain restart's times :data:`SAVING`."""
    return PowerPattern(run_s=run_s, scale=SAVING * scale)


def true_log_ratio(pattern: str, run_s: float) -> float:
    """The population log ratio continue / restart (exact: both at unit scale)."""
    return math.log(continue_pattern(run_s, 1.0).run_energy() / restart_pattern(pattern, run_s, 1.0).run_energy())


@dataclass(frozen=True)
class Observed:
    """One log kind's reading of one run: estimate, guaranteed bounds and arm-dependent bound (J),
    and whether the bounds held the true energy of the trace's interval."""

    estimate_j: float
    systematic_j: float
    held: bool


def _energy(log: SyntheticLog, pattern: PowerPattern, signal: str, options: LogOptions) -> Observed:
    trace = FORMATS[log.fmt](log.text, log.fmt, options)
    a = int(trace.poll_ns[0])  # the run's interval as ``run_energy`` takes it (a log has no idle window)
    b = int(max(int(trace.t_after_ns.max()), int(trace.poll_ns[-1])))
    total = interval_energy(trace, signal, a, b, *POWER_RANGE_W)  # ``run_energy(...).total``
    truth = log.true_energy_j(pattern, a, b)
    return Observed(total.estimate_j, total.systematic_bound_j, total.lower_j <= truth <= total.upper_j)


def observe(pattern: PowerPattern, period_ms: float, power: bool, rng: np.random.Generator) -> dict[str, Observed]:
    """Every logger's reading of one run of ``pattern`` (module doc); ``power``: the power logs too."""
    run_s = pattern.run_s
    counter = EnergyCounter(pattern, period_ms / 1000.0, rng.uniform(0.0, period_ms / 1000.0))
    gauge_phase = rng.uniform(0.0, 0.1)
    average = PowerGauge(pattern, "average", phase_s=gauge_phase)
    counter_options = LogOptions(power_range_w=POWER_RANGE_W, counter_period_ms=period_ms)
    out = {
        "zeus-1window": _energy(
            zeus_csv(counter, start_offset_s=rng.uniform()), pattern, "energy_counter", counter_options
        ),
        "zeus-windows": _energy(
            zeus_csv(counter, window_s=run_s / 10, start_offset_s=rng.uniform()),
            pattern,
            "energy_counter",
            counter_options,
        ),
        "codecarbon": _energy(
            codecarbon_csv(counter, start_offset_s=rng.uniform()), pattern, "energy_counter", counter_options
        ),
    }
    for delay_ms in (100.0, 1000.0):
        delay = delay_ms / 1000.0
        times = dmon_sample_times(run_s, delay, rng.uniform(0.0, 0.9 * delay), 0.05 * delay, int(rng.integers(2**31)))
        want_power = power and delay_ms == 100.0
        log = dcgm_dmon(counter, average if want_power else None, delay, times)
        options = LogOptions(
            power_range_w=POWER_RANGE_W,
            counter_period_ms=period_ms,
            poll_ms=delay_ms,
            power_model="average" if want_power else None,
        )
        trace_kind = f"dcgm-counter-d{delay_ms:.0f}"
        out[trace_kind] = _energy(log, pattern, "energy_counter", options)
        if want_power:
            out["dcgm-power-average"] = _energy(log, pattern, "power_average", options)
    if power:
        polls = smi_poll_times(run_s, 0.1, rng.uniform(0.0, 0.005), 0.003, int(rng.integers(2**31)))
        for kind, model in (("smi-average", "average"), ("smi-part-time", "part-time")):
            gauge = PowerGauge(pattern, model, phase_s=gauge_phase)  # type: ignore[arg-type]
            out[kind] = _energy(
                nvidia_smi_csv(gauge, polls, start_offset_s=rng.uniform()),
                pattern,
                "power_average",
                LogOptions(power_range_w=POWER_RANGE_W, power_model=model),
            )  # type: ignore[arg-type]
    return out


def judge(estimates: np.ndarray, systematic: np.ndarray, theta: float, rule: Rule) -> tuple[bool, bool]:
    """``(covered, passed)`` of one study's gate: ``estimates`` and ``systematic`` (J) are (pairs, 2)
    arrays of (continue, restart); covered: the 90% t interval widened by the resolution shift
    holds ``theta`` (log scale); passed: the rule holds and the bounds cannot change that."""
    d_bounds = np.full(estimates.shape[0], math.inf)
    finite = np.all(np.isfinite(systematic), axis=1)
    if finite.any():
        d_bounds[finite] = propagate_bounds(estimates[finite], [1, -1], systematic[finite], "ratio")
    d = np.log(estimates[:, 0]) - np.log(estimates[:, 1])
    check = resolution_check(rule, d, d_bounds, CONFIDENCE, "t", "ratio")
    _, lo, hi = check.result.analysis_scale()
    shift = check.interval_bound
    covered = bool(lo - shift <= theta <= hi + shift)
    return covered, bool(check.holds and not check.could_change)


@dataclass
class Cell:
    """Tallies of one cell (module doc)."""

    studies: int = 0
    covered: int = 0
    passed: int = 0
    runs: int = 0
    held: int = 0
    systematic_pct: list[float] = field(default_factory=list)

    def add(self, other: Cell) -> None:
        """Add another chunk's tallies."""
        self.studies += other.studies
        self.covered += other.covered
        self.passed += other.passed
        self.runs += other.runs
        self.held += other.held
        self.systematic_pct += other.systematic_pct


Key = tuple[str, float, float, str]  # kind, length (s), period (ms), pattern


def simulate(run_s: float, period_ms: float, studies: int, seed: int) -> dict[Key, Cell]:
    """``studies`` studies of every pattern and log kind at one length and counter period; each
    block's four runs (continue; restart plain, end-burst, start-power) serve the three patterns."""
    rng = np.random.default_rng(seed)
    power = period_ms == POWER_PERIOD_MS
    kinds = COUNTER_KINDS + (POWER_KINDS if power else ())
    rule = Rule.parse(RULE)
    theta = {p: true_log_ratio(p, run_s) for p in PATTERNS}
    cells: dict[Key, Cell] = {(k, run_s, period_ms, p): Cell() for k in kinds for p in PATTERNS}
    for _ in range(studies):
        blocks = []
        for _ in range(PAIRS):
            scale = math.exp(rng.normal(0.0, BLOCK_SD))
            runs = {
                "continue": observe(
                    continue_pattern(run_s, scale * math.exp(rng.normal(0.0, NOISE_SD))), period_ms, power, rng
                )
            }
            for p in PATTERNS:
                runs[p] = observe(
                    restart_pattern(p, run_s, scale * math.exp(rng.normal(0.0, NOISE_SD))), period_ms, power, rng
                )
            blocks.append(runs)
        for kind in kinds:
            for p in PATTERNS:
                pairs = [(b["continue"][kind], b[p][kind]) for b in blocks]
                est = np.array([[c.estimate_j, r.estimate_j] for c, r in pairs])
                sys_j = np.array([[c.systematic_j, r.systematic_j] for c, r in pairs])
                covered, passed = judge(est, sys_j, theta[p], rule)
                cell = cells[(kind, run_s, period_ms, p)]
                cell.studies += 1
                cell.covered += covered
                cell.passed += passed
                cell.runs += 2 * PAIRS
                cell.held += sum(c.held + r.held for c, r in pairs)
                cell.systematic_pct += (100 * sys_j / est).ravel().tolist()
    return cells


def _chunks(
    sims: int, sims_long: int, jobs: int, seed: int, lengths_s: tuple[float, ...] = LENGTHS_S
) -> Iterator[tuple[float, float, int, int]]:
    """Work units: (length, period, studies, seed), each cell's studies split across ``jobs``; the
    seeds of a length's units do not depend on which other lengths are run."""
    seeds = np.random.SeedSequence(seed)
    for run_s, length_seeds in zip(LENGTHS_S, seeds.spawn(len(LENGTHS_S)), strict=True):
        if run_s not in lengths_s:
            continue
        n = sims_long if run_s >= 3600 else sims
        for period_ms, period_seeds in zip(PERIODS_MS, length_seeds.spawn(len(PERIODS_MS)), strict=True):
            for part, child in zip(np.array_split(np.arange(n), jobs), period_seeds.spawn(jobs), strict=True):
                if part.size:
                    yield run_s, period_ms, int(part.size), int(child.generate_state(1)[0])


def _unit(args: tuple[float, float, int, int]) -> dict[Key, Cell]:
    return simulate(*args)


def run_all(
    sims: int, sims_long: int, jobs: int, seed: int, lengths_s: tuple[float, ...] = LENGTHS_S
) -> dict[Key, Cell]:
    """Every cell's tallies (module doc) at the run lengths ``lengths_s``."""
    units = list(_chunks(sims, sims_long, jobs, seed, lengths_s))
    total: dict[Key, Cell] = {}
    if jobs > 1:
        with ProcessPoolExecutor(jobs) as pool:
            results = list(pool.map(_unit, units))
    else:
        results = [_unit(u) for u in units]
    for result in results:
        for key, cell in result.items():
            total.setdefault(key, Cell()).add(cell)
    return total


def _pct(k: int, n: int) -> str:
    p = k / n
    return f"{100 * p:5.1f} +- {100 * math.sqrt(p * (1 - p) / n):3.1f}"


def _below(c: Cell) -> bool:
    """Coverage below the goal by more than Monte Carlo error (its 95% upper bound under 90%)."""
    p = c.covered / c.studies
    return p + 1.96 * math.sqrt(max(p * (1 - p), 1e-12) / c.studies) < 0.90


def summary(cells: dict[Key, Cell]) -> str:
    """Per log kind and run length: the lowest coverage over counter periods and patterns (and where),
    the pass rate of the plain pattern (a true 15% saving, margin 5%) at a 100 ms counter, and its
    median arm-dependent bound (% of the energy)."""
    lines = [
        "| log kind | run | lowest coverage % (cell) | pass %, plain, 100 ms | arm-dependent bound, median % |",
        "| --- | --- | --- | --- | --- |",
    ]
    for kind in COUNTER_KINDS + POWER_KINDS:
        for run_s in LENGTHS_S:
            mine = {k: c for k, c in cells.items() if k[0] == kind and k[1] == run_s}
            if not mine:
                continue
            worst = min(mine, key=lambda k: mine[k].covered / mine[k].studies)
            where = f"{worst[3]}" if kind in POWER_KINDS else f"{worst[2]:g} ms, {worst[3]}"
            flag = " **below**" if _below(mine[worst]) else ""
            plain = mine.get((kind, run_s, POWER_PERIOD_MS, "plain"))
            passed = _pct(plain.passed, plain.studies) if plain else "-"
            median = f"{float(np.median(plain.systematic_pct)):.3g}" if plain and plain.systematic_pct else "-"
            lines.append(
                f"| {kind} | {run_s:g} s | {_pct(mine[worst].covered, mine[worst].studies)}{flag} ({where}) "
                f"| {passed} | {median} |"
            )
    return "\n".join(lines)


def table(cells: dict[Key, Cell]) -> str:
    """The cells as a Markdown table (module doc)."""
    lines = [
        "| log kind | run | counter period | pattern | studies | coverage % (goal >= 90) | pass % | "
        "bounds held % | arm-dependent bound, median % |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    order = {k: i for i, k in enumerate(COUNTER_KINDS + POWER_KINDS)}
    for key in sorted(cells, key=lambda k: (order[k[0]], k[1], k[2], PATTERNS.index(k[3]))):
        kind, run_s, period_ms, pattern = key
        c = cells[key]
        flag = " **below**" if _below(c) else ""
        period = "-" if kind in POWER_KINDS else f"{period_ms:g} ms"
        median = float(np.median(c.systematic_pct)) if c.systematic_pct else math.nan
        lines.append(
            f"| {kind} | {run_s:g} s | {period} | {pattern} | {c.studies} | {_pct(c.covered, c.studies)}{flag} "
            f"| {_pct(c.passed, c.studies)} | {100 * c.held / c.runs:.2f} | {median:.3g} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sims", type=int, default=200, help="studies per cell for 10 s and 600 s runs")
    parser.add_argument(
        "--sims-long", type=int, default=20, help="studies per cell for 3600 s runs (each costs about 6x a 600 s study)"
    )
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--seed", type=int, default=38)
    parser.add_argument(
        "--lengths",
        default=",".join(f"{x:g}" for x in LENGTHS_S),
        help="the run lengths to simulate (s, comma-separated, of 10,600,3600)",
    )
    parser.add_argument("--out", type=Path, default=Path(__file__).with_name("energy_logs_output.txt"))
    args = parser.parse_args(argv)
    lengths = tuple(float(x) for x in args.lengths.split(","))
    if not set(lengths) <= set(LENGTHS_S):
        parser.error(f"--lengths must be some of {','.join(f'{x:g}' for x in LENGTHS_S)}")
    start = time.perf_counter()
    cells = run_all(args.sims, args.sims_long, max(1, args.jobs), args.seed, lengths)
    text = (
        f"{summary(cells)}\n\n{table(cells)}\n\nstudies of {PAIRS} pairs, 90% t interval, rule {RULE!r}, true saving "
        f"{1 - SAVING:.0%} (plain), noise {NOISE_SD:.0%}, power range {POWER_RANGE_W[0]:g}-{POWER_RANGE_W[1]:g} W; "
        f"--sims {args.sims} --sims-long {args.sims_long} --jobs {args.jobs} --seed {args.seed} --lengths "
        f"{args.lengths}: "
        f"{time.perf_counter() - start:.0f} s\n"
    )
    print(text)
    args.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
