"""The ``sim.churn`` collector and the churn table: checkpoint intervals under Poisson preemption.

Model, rules and assumptions: docs/seed-studies.md (prereg_seed_studies.multisite.churn).
"""

from __future__ import annotations

import math
import re
from typing import Any, ClassVar

from collect.collectors.base import Collector, Param, RunContext, RunResult, check_params
from prereg_seed_studies.multisite import churn_law as law

__all__ = [
    "INTERVAL_NAMES",
    "TABLE_INTERVALS",
    "ChurnCollector",
    "churn_table",
    "render_churn_table",
    "resolve_interval",
]

INTERVAL_NAMES = ("exact", "young", "daly", "daly1")
TABLE_INTERVALS = ("exact", "young", "daly", "daly1", "0.5x", "2x")
_MULTIPLE = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*x\s*$")


def resolve_interval(spec: str | float, rate: float, C: float, R: float) -> float:
    """Seconds of work between checkpoints for an interval spec at job failure rate ``rate`` (1/s):

    ``exact`` (Lambert-W optimum), ``young`` (sqrt(2C/rate)), ``daly`` (Daly 2006 higher order),
    ``daly1`` (Daly first order, sqrt(2C(1/rate + R))), a number of seconds (> 0), or ``"<k>x"``:
    ``k`` (> 0) times the exact optimum, e.g. ``"2x"``, ``"0.5x"``. Raises ``ValueError`` (or
    ``TypeError`` for a spec that is neither a string nor a number)."""
    if isinstance(spec, bool):
        raise TypeError(f"interval {spec!r} is not a number of seconds or a rule")
    if isinstance(spec, int | float):
        if not math.isfinite(spec) or spec <= 0:
            raise ValueError(f"interval {spec!r} s must be finite and > 0")
        return float(spec)
    if not isinstance(spec, str):
        raise TypeError(f"interval {spec!r} is not a number of seconds or a rule")
    name = spec.strip().lower()
    if name == "exact":
        return law.optimal_interval(rate, C)
    if name == "young":
        return law.young_interval(rate, C)
    if name == "daly":
        return law.daly_interval(rate, C)
    if name == "daly1":
        return law.daly_first_order_interval(rate, C, R)
    m = _MULTIPLE.match(name)
    if m:
        k = float(m.group(1))
        if math.isfinite(k) and k > 0:
            return k * law.optimal_interval(rate, C)
    raise ValueError(f"interval {spec!r} must be exact, young, daly, daly1, seconds > 0, or '<k>x' with k > 0")


def _interval_ok(spec: Any) -> bool:
    try:
        resolve_interval(spec, 1.0, 1.0, 0.0)
    except (ValueError, TypeError):
        return False
    return True


def _positive(v: float) -> bool:
    return math.isfinite(v) and v > 0


def _job_run(rate: float, C: float, R: float, w: float, work_s: float, seed: int) -> dict[str, float]:
    """Metrics of one seeded history completing ``work_s`` s of work at interval ``w`` s."""
    n_full = max(0, math.ceil(work_s / w) - 1)
    last = work_s - n_full * w
    while last <= 0 and n_full > 0:  # float rounding at exact multiples
        n_full -= 1
        last = work_s - n_full * w
    hist = law.simulate_job(law.GapStream(seed), rate, w + C, n_full, R, T_last=last + C)
    return {
        "efficiency": work_s / hist.wall_s,
        "wasted_time_s": hist.wall_s - work_s,
        "failures": float(hist.failures),
        "checkpoints": float(n_full + 1),
        "exposed_s": hist.exposed_s,
    }


class ChurnCollector(Collector):
    """One seeded job history under Poisson preemption; see the module doc."""

    name: ClassVar[str] = "sim.churn"
    PARAMS: ClassVar[dict[str, Param]] = {
        "mtbf_s": Param(float, None, "mean time between preemptions of one worker (s)", _positive, "must be > 0"),
        "checkpoint_s": Param(float, None, "time to write one checkpoint (s)", _positive, "must be > 0"),
        "restart_s": Param(
            float, None, "time to restart after a preemption (s)", lambda v: math.isfinite(v) and v >= 0, "must be >= 0"
        ),
        "workers": Param(
            int,
            1,
            "workers in the synchronous job (job rate = workers / mtbf_s)",
            lambda v: 1 <= v <= 10**7,
            "must be between 1 and 10**7",
        ),
        "work_s": Param(
            float, 1_000_000.0, "useful work each run completes (s), equal across arms", _positive, "must be > 0"
        ),
        "interval": Param(
            (str, float),
            "exact",
            "work between checkpoints: exact | young | daly | daly1 | seconds | '<k>x'",
            _interval_ok,
            "must be exact, young, daly, daly1, seconds > 0, or '<k>x' with k > 0",
        ),
    }
    METRICS: ClassVar[dict[str, str]] = {
        "efficiency": "fraction",  # useful work / wall time
        "wasted_time_s": "s",  # wall time - useful work: checkpoints, lost work, restarts
        "failures": "count",  # preemptions of the job (any worker)
        "checkpoints": "count",  # completed checkpoints (one per segment, the last included)
        "exposed_s": "s",  # time exposed to preemption (wall minus restarts): failures ~ Poisson(job rate * exposed_s)
    }

    def run(self, ctx: RunContext) -> RunResult:
        """Simulate one history with ``ctx.seed``; same params and seed give the same metrics."""
        p = check_params(type(self), ctx.params)
        rate = p["workers"] / p["mtbf_s"]
        w = resolve_interval(p["interval"], rate, p["checkpoint_s"], p["restart_s"])
        metrics = _job_run(rate, p["checkpoint_s"], p["restart_s"], w, p["work_s"], ctx.seed)
        info = {
            "interval_s": w,
            "job_rate_per_s": rate,
            "law_efficiency": law.efficiency(w, rate, p["checkpoint_s"], p["restart_s"]),
        }
        return RunResult(metrics=metrics, info=info)


MAX_WORKERS = 1_000_000
MAX_SEGMENTS = 10_000_000
MIN_SECONDS, MAX_SECONDS = 1e-6, 1e9  # times from a microsecond to ~30 years
MAX_RATE_COST = 50.0  # n C / MTBF beyond this: a checkpoint almost never completes (exp overflows)


def _check_range(mtbf_s: float, checkpoint_s: float, restart_s: float, workers: int, segments: int) -> None:
    """Refuse inputs outside what the closed forms and the Monte Carlo can compute (``ValueError``)."""
    for name, value, zero_ok in (
        ("mtbf_s", mtbf_s, False),
        ("checkpoint_s", checkpoint_s, False),
        ("restart_s", restart_s, True),
    ):
        ok = (
            isinstance(value, (int, float))
            and math.isfinite(value)
            and ((zero_ok and value == 0) or MIN_SECONDS <= value <= MAX_SECONDS)
        )
        if not ok:
            raise ValueError(
                f"{name} = {value!r} must be a number from {MIN_SECONDS:g} to {MAX_SECONDS:g} s"
                + (" (or 0)" if zero_ok else "")
            )
    if not isinstance(segments, int) or not 100 <= segments <= MAX_SEGMENTS:
        raise ValueError(f"segments = {segments!r} must be an integer from 100 to {MAX_SEGMENTS}")
    if workers * checkpoint_s / mtbf_s > MAX_RATE_COST:
        raise ValueError(
            f"workers x checkpoint_s / mtbf_s = {workers * checkpoint_s / mtbf_s:.3g} exceeds "
            f"{MAX_RATE_COST:g}: a checkpoint would almost never complete; no interval is meaningful"
        )


def churn_table(
    mtbf_s: float,
    checkpoint_s: float,
    restart_s: float,
    workers: int = 1,
    segments: int = 20_000,
    seed: int = 0,
    confidence: float = 0.95,
) -> dict[str, Any]:
    """Closed-form and Monte Carlo efficiency of each interval rule, as a JSON-ready dict.

    ``intervals.<name>`` for names exact, young, daly (higher order), daly1 (first order), 0.5x,
    2x holds ``interval_s``, ``efficiency`` (closed form), ``mc`` (``estimate``, ``lower``,
    ``upper``, ``n`` segments; one history per interval, all from ``seed``: common random numbers)
    and ``loss_vs_exact`` (fraction of the exact optimum's efficiency lost). Where a history would
    need more than ``MAX_GAPS / 2`` failures (an interval far beyond the job's MTBF), the ``mc``
    values are ``None`` and ``n`` is 0: not simulated. Raises ``ValueError`` on bad inputs."""
    if not isinstance(workers, int) or isinstance(workers, bool) or not 1 <= workers <= MAX_WORKERS:
        raise ValueError(f"workers = {workers!r} must be an integer from 1 to {MAX_WORKERS}")
    _check_range(mtbf_s, checkpoint_s, restart_s, workers, segments)
    rate = law.job_rate(1.0 / law.check_number("mtbf_s", mtbf_s), workers)
    C, R = law.check_number("checkpoint_s", checkpoint_s), law.check_number("restart_s", restart_s, zero_ok=True)
    best = law.optimal_efficiency(rate, C, R)
    rows: dict[str, Any] = {}
    for name in TABLE_INTERVALS:
        w = resolve_interval(name, rate, C, R)
        eff = law.efficiency(w, rate, C, R)
        mc_row: dict[str, Any] = {"estimate": None, "lower": None, "upper": None, "n": 0}
        if segments * math.expm1(min(rate * (w + C), 700.0)) <= law.MAX_GAPS / 2:
            try:
                mc = law.mc_efficiency(w, rate, C, R, segments=segments, seed=seed, confidence=confidence)
                mc_row = {"estimate": mc.estimate, "lower": mc.lower, "upper": mc.upper, "n": mc.n}
            except ValueError:  # an unlucky history past MAX_GAPS failures
                pass
        rows[name] = {"interval_s": w, "efficiency": eff, "mc": mc_row, "loss_vs_exact": 1.0 - eff / best}
    return {
        "params": {
            "mtbf_s": float(mtbf_s),
            "checkpoint_s": C,
            "restart_s": R,
            "workers": workers,
            "segments": segments,
            "seed": seed,
            "confidence": confidence,
        },
        "job_rate_per_s": rate,
        "job_mtbf_s": 1.0 / rate,
        "evidence": "modeled",
        "intervals": rows,
    }


def _num(x: float) -> str:
    """An efficiency: 5 decimals, or 4 significant digits when below 0.001."""
    return f"{x:.5f}" if x >= 1e-3 or x == 0 else f"{x:.3e}"


def render_churn_table(table: dict[str, Any]) -> str:
    """A plain-text rendering of :func:`churn_table` (at most 80 columns)."""
    p = table["params"]
    conf = f"{100 * p['confidence']:g}%"
    lines = [
        (
            f"churn law (modeled): worker MTBF {p['mtbf_s']:g} s x {p['workers']} worker(s)"
            f" = job MTBF {table['job_mtbf_s']:.6g} s"
        ),
        (
            f"checkpoint {p['checkpoint_s']:g} s, restart {p['restart_s']:g} s; Monte Carlo: "
            f"{p['segments']} segments, seed {p['seed']}, {conf} CI"
        ),
        "",
        (
            f"{'interval':<8} {'every (s)':>11} {'efficiency':>10} {'MC estimate':>11} "
            f"{'MC ' + conf + ' CI':>19} {'loss vs exact':>13}"
        ),
    ]
    for name, row in table["intervals"].items():
        mc = row["mc"]
        if mc["estimate"] is None:
            est, ci = "n/a", "too many failures"
        else:
            est, ci = _num(mc["estimate"]), f"[{_num(mc['lower'])}, {_num(mc['upper'])}]"
        lines.append(
            f"{name:<8} {row['interval_s']:>11.5g} {_num(row['efficiency']):>10} "
            f"{est:>11} {ci:>19} {100 * row['loss_vs_exact']:>12.3f}%"
        )
    lines.append("efficiency = useful work / wall time; loss = 1 - efficiency / exact optimum's")
    return "\n".join(lines)
