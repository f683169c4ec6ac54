"""Two closed-form views of the churn law for ``prereg-studies churn``: a scan over worker counts and the
admission of heterogeneous worker pools (evidence: ``modeled``; model in :mod:`prereg_seed_studies.multisite.churn_law`).

Model, rules and assumptions: docs/seed-studies.md (prereg_seed_studies.multisite.churn_scaling).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from prereg_seed_studies.multisite import churn_law as law

__all__ = ["MAX_POOLS", "Pool", "admission", "parse_pool", "render_admission", "render_worker_scan", "worker_scan"]

MAX_WORKERS = 1_000_000
MAX_POOLS = 64
MAX_SCAN = 100  # worker counts in one scan
MIN_SECONDS, MAX_SECONDS = 1e-6, 1e9
MAX_RATE_COST = 50.0  # n C / MTBF beyond this: a checkpoint almost never completes


@dataclass(frozen=True)
class Pool:
    """``count`` workers, each failing at ``rate`` per second."""

    count: int
    rate: float


def _seconds(name: str, value: float, zero_ok: bool = False) -> float:
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
    return float(value)


def parse_pool(spec: str) -> Pool:
    """``"COUNT:RATE"`` (e.g. ``"600:1e-6"``): COUNT workers (an integer >= 1), RATE failures per
    second per worker (1 / MTBF in s, from 1e-9 to 1e6). Raises ``ValueError`` naming the problem."""
    parts = spec.split(":")
    if len(parts) != 2:
        raise ValueError(f"pool {spec!r} must be COUNT:RATE, e.g. 600:1e-6 (600 workers failing 1e-6 times per s)")
    count_text, rate_text = (p.strip() for p in parts)
    if not count_text.isdigit() or int(count_text) < 1:
        raise ValueError(f"pool {spec!r}: COUNT {count_text!r} must be a whole number of workers >= 1")
    try:
        rate = float(rate_text)
    except ValueError:
        raise ValueError(
            f"pool {spec!r}: RATE {rate_text!r} is not a number (failures per second per worker)"
        ) from None
    if not (math.isfinite(rate) and 1.0 / MAX_SECONDS <= rate <= 1.0 / MIN_SECONDS):
        raise ValueError(
            f"pool {spec!r}: RATE must be from {1 / MAX_SECONDS:g} to {1 / MIN_SECONDS:g} failures per "
            "second per worker (a worker MTBF from 1e-06 to 1e+09 s)"
        )
    return Pool(int(count_text), rate)


# --------------------------------------------------------------------------------- worker scan
def _half_and_peak(lam: float, C: float, R: float) -> tuple[int | None, int | None, float | None]:
    """Smallest n with efficiency at w* <= 0.5, the n of peak n x efficiency and that peak, over every
    n from 1 to min(MAX_WORKERS, MAX_RATE_COST / (lam C)) (None where it is not in that range)."""
    top = int(min(MAX_WORKERS, math.floor(MAX_RATE_COST / (lam * C))))
    if top < 1:
        return None, None, None
    n = np.arange(1, top + 1, dtype=float)
    eff = law.optimal_curves(n * lam, C, R)[1]
    below = np.flatnonzero(eff <= 0.5)
    thr = n * eff
    peak = int(np.argmax(thr))
    return (int(below[0]) + 1 if below.size else None), (peak + 1 if peak + 1 < top else None), float(thr[peak])


def worker_scan(mtbf_s: float, checkpoint_s: float, restart_s: float, workers: Sequence[int]) -> dict[str, Any]:
    """Closed forms for a job of each worker count (see the module doc), as a JSON-ready dict.

    ``rows`` hold ``workers``, ``job_rate_per_s``, ``job_mtbf_s``, ``lambda_c``, ``interval_s`` (w*),
    ``young_s``, ``daly_s``, ``young_overshoot`` and ``daly_overshoot`` (interval / w* - 1),
    ``efficiency`` (at w*), ``loss_half`` and ``loss_double`` (efficiency lost at w*/2 and 2 w*, as a
    fraction of the optimum's) and ``throughput``; ``half_efficiency_workers``,
    ``peak_throughput_workers`` and ``peak_throughput`` summarise every n. Raises ``ValueError``."""
    M, C, R = _seconds("mtbf_s", mtbf_s), _seconds("checkpoint_s", checkpoint_s), _seconds("restart_s", restart_s, True)
    if not workers or len(workers) > MAX_SCAN:
        raise ValueError(f"scan from 1 to {MAX_SCAN} worker counts")
    rows = []
    for n in workers:
        if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_WORKERS:
            raise ValueError(f"workers = {n!r} must be an integer from 1 to {MAX_WORKERS}")
        if n * C / M > MAX_RATE_COST:
            raise ValueError(
                f"workers x checkpoint_s / mtbf_s = {n * C / M:.3g} exceeds {MAX_RATE_COST:g} (at "
                f"{n} workers): a checkpoint would almost never complete; no interval is meaningful"
            )
        rate = n / M
        w = law.optimal_interval(rate, C)
        young, daly = law.young_interval(rate, C), law.daly_interval(rate, C)
        eff = law.optimal_efficiency(rate, C, R)
        rows.append(
            {
                "workers": n,
                "job_rate_per_s": rate,
                "job_mtbf_s": M / n,
                "lambda_c": rate * C,
                "interval_s": w,
                "young_s": young,
                "daly_s": daly,
                "young_overshoot": young / w - 1.0,
                "daly_overshoot": daly / w - 1.0,
                "efficiency": eff,
                "loss_half": law.efficiency_loss(0.5 * w, rate, C, R),
                "loss_double": law.efficiency_loss(2.0 * w, rate, C, R),
                "throughput": n * eff,
            }
        )
    half, peak, peak_thr = _half_and_peak(1.0 / M, C, R)
    return {
        "params": {"mtbf_s": M, "checkpoint_s": C, "restart_s": R, "workers": list(workers)},
        "evidence": "modeled",
        "rows": rows,
        "half_efficiency_workers": half,
        "peak_throughput_workers": peak,
        "peak_throughput": peak_thr if peak is not None else None,
    }


def _pct(x: float) -> str:
    """A signed percentage with 3 decimals."""
    return f"{100 * x:+.3f}%"


def render_worker_scan(t: dict[str, Any]) -> str:
    """A plain-text rendering of :func:`worker_scan` (at most 80 columns)."""
    p = t["params"]
    lines = [
        "churn law (modeled, closed forms) over worker counts",
        f"worker MTBF {p['mtbf_s']:g} s, checkpoint {p['checkpoint_s']:g} s, restart {p['restart_s']:g} s",
        "",
        f"{'workers':>7} {'lambda*C':>9} {'w* (s)':>9} {'Young':>8} {'Daly':>8} {'effic.':>7} {'loss .5x':>8} "
        f"{'loss 2x':>8} {'thruput':>8}",
    ]
    for r in t["rows"]:
        lines.append(
            f"{r['workers']:>7} {r['lambda_c']:>9.3g} {r['interval_s']:>9.5g} {_pct(r['young_overshoot']):>8} "
            f"{_pct(r['daly_overshoot']):>8} {r['efficiency']:>7.4f} {100 * r['loss_half']:>7.3f}% "
            f"{100 * r['loss_double']:>7.3f}% {r['throughput']:>8.5g}"
        )
    lines.append("Young, Daly: their interval / w* - 1; loss: efficiency lost at w*/2, 2 w*;")
    lines.append("thruput = workers x efficiency; w* and losses do not depend on restart cost")
    half, peak = t["half_efficiency_workers"], t["peak_throughput_workers"]
    lines.append(
        f"efficiency at w* falls to 50% at n = {half} workers"
        if half is not None
        else "efficiency at w* stays above 50% for every n searched"
    )
    lines.append(
        f"throughput peaks at n = {peak} workers ({t['peak_throughput']:.5g} worker-equivalents)"
        if peak is not None
        else "throughput does not peak within the n searched"
    )
    return "\n".join(lines)


# ------------------------------------------------------------------------------------- admission
def admission(pools: Sequence[Pool], checkpoint_s: float, restart_s: float) -> dict[str, Any]:
    """Which workers to admit (see the module doc), as a JSON-ready dict.

    ``pools`` lists the pools as given (``pool`` numbers from 1) with ``workers``, ``rate_per_s``,
    ``mtbf_s``; ``order`` is the admission order (most reliable first). ``rows`` are the jobs on the
    first ``j`` pools in that order, ``best`` the best job; each has ``label``, ``admitted`` (pool
    number -> workers), ``workers``, ``job_rate_per_s``, ``interval_s`` (w*), ``efficiency``,
    ``throughput`` (workers x efficiency). ``threshold_rate_per_s`` is the flakiest admitted rate;
    ``all_vs_best`` and ``all_vs_first`` compare admitting everyone with the best job and with the
    most reliable pool alone (throughput ratio - 1). Raises ``ValueError``."""
    C, R = _seconds("checkpoint_s", checkpoint_s), _seconds("restart_s", restart_s, True)
    if not 1 <= len(pools) <= MAX_POOLS:
        raise ValueError(f"give from 1 to {MAX_POOLS} pools")
    total = sum(p.count for p in pools)
    if total > MAX_WORKERS:
        raise ValueError(f"the pools hold {total} workers; at most {MAX_WORKERS} in all")
    order = sorted(range(len(pools)), key=lambda i: (pools[i].rate, i))
    if pools[order[0]].rate * C > MAX_RATE_COST:
        raise ValueError(
            f"even one worker of the most reliable pool has rate x checkpoint_s = "
            f"{pools[order[0]].rate * C:.3g} > {MAX_RATE_COST:g}: a checkpoint would almost never complete"
        )
    parts, start = [], 0.0
    for i in order:  # job rate with the first k admitted, built pool by pool (no long running sum)
        parts.append(start + pools[i].rate * np.arange(1, pools[i].count + 1, dtype=float))
        start += pools[i].rate * pools[i].count
    rates = np.concatenate(parts)
    w, eff = law.optimal_curves(rates, C, R)
    thr = np.arange(1, rates.size + 1) * eff
    bounds = np.cumsum([pools[i].count for i in order])

    def job(k: int, label: str) -> dict[str, Any]:
        admitted, left = {}, k
        for i in order:
            take = min(left, pools[i].count)
            if take:
                admitted[str(i + 1)] = take
            left -= take
        return {
            "label": label,
            "admitted": admitted,
            "workers": k,
            "job_rate_per_s": float(rates[k - 1]),
            "interval_s": float(w[k - 1]),
            "efficiency": float(eff[k - 1]),
            "throughput": float(thr[k - 1]),
        }

    rows = [
        job(int(b), ("pool " if j == 0 else "pools ") + "+".join(str(i + 1) for i in order[: j + 1]))
        for j, b in enumerate(bounds)
    ]
    k_best = int(np.argmax(thr)) + 1
    best = job(k_best, "")
    best["label"] = "best: " + " + ".join(
        f"pool {i}" if n == pools[int(i) - 1].count else f"{n} of pool {i}" for i, n in best["admitted"].items()
    )
    everyone, first = rows[-1]["throughput"], rows[0]["throughput"]
    return {
        "params": {"checkpoint_s": C, "restart_s": R},
        "evidence": "modeled",
        "pools": [
            {"pool": i + 1, "workers": p.count, "rate_per_s": p.rate, "mtbf_s": 1.0 / p.rate}
            for i, p in enumerate(pools)
        ],
        "order": [i + 1 for i in order],
        "rows": rows,
        "best": best,
        "threshold_rate_per_s": max(pools[int(i) - 1].rate for i in best["admitted"]),
        "all_vs_best": everyone / best["throughput"] - 1.0,
        "all_vs_first": everyone / first - 1.0,
    }


def render_admission(t: dict[str, Any]) -> str:
    """A plain-text rendering of :func:`admission` (at most 80 columns)."""
    p = t["params"]
    lines = [
        "churn law (modeled, closed forms): which workers to admit to one synchronous job",
        f"checkpoint {p['checkpoint_s']:g} s, restart {p['restart_s']:g} s; each job checkpoints at its own exact w*",
        "",
        f"{'pool':>4} {'workers':>8} {'rate (1/s)':>11} {'worker MTBF (s)':>16}",
    ]
    for q in t["pools"]:
        lines.append(f"{q['pool']:>4} {q['workers']:>8} {q['rate_per_s']:>11.4g} {q['mtbf_s']:>16.6g}")
    lines += ["", f"{'admitted':<28} {'workers':>7} {'job MTBF (s)':>12} {'w* (s)':>9} {'effic.':>7} {'thruput':>9}"]
    for r in [*t["rows"], t["best"]]:
        label = r["label"] if len(r["label"]) <= 28 else r["label"][:25] + "..."
        lines.append(
            f"{label:<28} {r['workers']:>7} {1 / r['job_rate_per_s']:>12.5g} {r['interval_s']:>9.5g} "
            f"{r['efficiency']:>7.4f} {r['throughput']:>9.5g}"
        )
    lines.append("thruput = workers x efficiency (worker-equivalents of useful work)")
    b = t["best"]
    lines.append(
        f"admission threshold: admit the {b['workers']} most reliable workers (up to "
        f"{t['threshold_rate_per_s']:.4g} /s)"
    )
    lines.append(
        f"admitting every pool: throughput {_pct(t['all_vs_best'])} vs the best, "
        f"{_pct(t['all_vs_first'])} vs pool {t['order'][0]} alone"
    )
    return "\n".join(lines)
