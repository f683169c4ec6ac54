"""The churn law: checkpointing under Poisson preemption, in closed form and by Monte Carlo.

Model, rules and assumptions: docs/seed-studies.md (prereg_seed_studies.multisite.churn_law).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np
from scipy.optimize import brentq
from scipy.special import lambertw

__all__ = [
    "MAX_GAPS",
    "GapStream",
    "JobHistory",
    "MCEstimate",
    "admission_threshold",
    "break_even_rate",
    "check_number",
    "daly_first_order_interval",
    "daly_interval",
    "efficiency",
    "efficiency_loss",
    "job_rate",
    "mc_efficiency",
    "optimal_curves",
    "optimal_efficiency",
    "optimal_interval",
    "pool_throughput",
    "segment_time",
    "simulate_job",
    "young_interval",
]

MAX_GAPS = 1 << 24  # failures one simulated history may draw (128 MiB of float64)


def check_number(name: str, value: float, *, zero_ok: bool = False) -> float:
    """``value`` as a float; ``ValueError`` unless finite and > 0 (>= 0 with ``zero_ok``)."""
    value = float(value)
    if not math.isfinite(value) or value < 0 or (value == 0 and not zero_ok):
        raise ValueError(f"{name} = {value!r} must be a finite number {'>= 0' if zero_ok else '> 0'}")
    return value


# ---------------------------------------------------------------------------------- closed forms
def segment_time(w: float, lam: float, C: float, R: float) -> float:
    """Expected wall time (s) to complete ``w`` s of work plus a ``C`` s checkpoint:
    ``(1/lam + R) (e^(lam (w + C)) - 1)``."""
    w, lam = check_number("w", w), check_number("lam", lam)
    C, R = check_number("C", C, zero_ok=True), check_number("R", R, zero_ok=True)
    with np.errstate(over="ignore"):
        return float((1.0 / lam + R) * np.expm1(lam * (w + C)))


def efficiency(w: float, lam: float, C: float, R: float) -> float:
    """Useful work per wall second (fraction in (0, 1)) at checkpoint interval ``w`` s."""
    return check_number("w", w) / segment_time(w, lam, C, R)


def _series_h(x: np.ndarray) -> np.ndarray:
    """``-log(1 - x) - x`` without cancellation: the series sum_k>=2 x^k / k for small x."""
    out = np.empty_like(x)
    small = x < 0.05
    xs = x[small]
    acc = np.zeros_like(xs)
    for k in range(15, 1, -1):  # smallest terms first
        acc = acc + xs**k / k
    out[small] = acc
    out[~small] = -np.log1p(-x[~small]) - x[~small]
    return out


def _optimal_x(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(x, 1 - x)`` with ``x = lam * w*`` as a function of ``a = lam * C`` (vectorised): the root
    in (0, 1) of ``(1 - x) e^x = e^-a``, i.e. ``x = 1 + W0(-e^(-1-a))`` and ``1 - x = -W0(...)``
    (kept separately: it is tiny, and needed to full relative precision, when ``a`` is large).

    For ``a >= 1e-4`` it is scipy's ``lambertw`` (principal branch; the imaginary part is checked to
    be ~0). Near the branch point the argument ``-e^(-1-a)`` keeps few digits of ``a``, so for
    ``a < 0.5`` the value is polished by Newton's method on ``-log(1-x) - x = a`` evaluated by its
    series (no cancellation); below ``a = 1e-4`` the start is the branch-point series
    ``p - p^2/3 + 11 p^3/72`` with ``p = sqrt(2 (1 - e^-a))``.
    """
    a = np.asarray(a, dtype=float)
    x, y = np.empty_like(a), np.empty_like(a)
    big = a >= 1e-4
    if big.any():
        wz = lambertw(-np.exp(-1.0 - a[big]), 0)
        if np.any(np.abs(wz.imag) > 1e-9):
            raise ArithmeticError("lambertw left the real principal branch")
        x[big], y[big] = 1.0 + wz.real, -wz.real
    p = np.sqrt(-2.0 * np.expm1(-a[~big]))
    x[~big] = p - p * p / 3.0 + 11.0 * p**3 / 72.0
    polish = (a < 0.5) & (a > 0)
    if polish.any():
        xp, ap = x[polish], a[polish]
        for _ in range(8):
            step = (_series_h(xp) - ap) * (1.0 - xp) / xp
            xp = xp - step
            if np.all(np.abs(step) <= 4e-16 * xp):
                break
        x[polish] = xp
    small = a < 0.5
    y[small] = 1.0 - x[small]
    return x, y


def optimal_interval(lam: float, C: float) -> float:
    """Exact optimal work (s) between checkpoints: ``(1 + W0(-exp(-1 - lam C))) / lam``.

    It does not depend on the restart cost ``R`` (``R`` scales the expected segment time by the
    constant ``1 + lam R``)."""
    lam, C = check_number("lam", lam), check_number("C", C)
    return float(_optimal_x(np.array([lam * C]))[0][0] / lam)


def optimal_efficiency(lam: float, C: float, R: float) -> float:
    """Efficiency at the exact optimum: ``(1 - lam w*) / (1 + lam R)`` (from ``(1 - x) e^(x + lam C) = 1``)."""
    lam, C, R = check_number("lam", lam), check_number("C", C), check_number("R", R, zero_ok=True)
    return float(_optimal_x(np.array([lam * C]))[1][0] / (1.0 + lam * R))


def optimal_curves(rates: np.ndarray, C: float, R: float) -> tuple[np.ndarray, np.ndarray]:
    """Vectorised over job failure rates (1/s): the exact optimum ``w*`` (s) and the efficiency there
    (clamped at 0 where ``rate * C`` is so large that it underflows)."""
    rates = np.asarray(rates, dtype=float)
    if np.any(~np.isfinite(rates)) or np.any(rates <= 0):
        raise ValueError("job failure rates must be finite and > 0")
    C, R = check_number("C", C), check_number("R", R, zero_ok=True)
    x, y = _optimal_x(rates * C)
    return x / rates, np.maximum(y, 0.0) / (1.0 + rates * R)


def young_interval(lam: float, C: float) -> float:
    """Young (1974): ``sqrt(2 C / lam)`` s."""
    return math.sqrt(2.0 * check_number("C", C) / check_number("lam", lam))


def daly_first_order_interval(lam: float, C: float, R: float) -> float:
    """Daly's first-order estimate (Daly 2003, ICCS, LNCS 2660): ``sqrt(2 C (1/lam + R))`` s."""
    return math.sqrt(2.0 * check_number("C", C) * (1.0 / check_number("lam", lam) + check_number("R", R, zero_ok=True)))


def daly_interval(lam: float, C: float) -> float:
    """Daly's higher-order estimate (J. T. Daly, FGCS 22(3):303-312, 2006), in seconds:

    ``sqrt(2 C M) * (1 + sqrt(C/(2M))/3 + (C/(2M))/9) - C`` for ``C < 2M``, else ``M``,

    with ``M = 1/lam`` the mean time between interrupts. In Daly's cost function the restart time
    only multiplies the run time by ``e^(R/M)``, so his optimum, like ours, is independent of
    ``R``; his worked examples (M = 24 h, 6 h, 15 min with delta = 5 min, R = 10 min -> 117, 57,
    9.1 min) are reproduced with ``M = 1/lam`` and not with ``M = 1/lam + R``. It agrees with the
    exact ``w*`` to second order in ``sqrt(lam C)``."""
    lam, C = check_number("lam", lam), check_number("C", C)
    M = 1.0 / lam
    if C >= 2.0 * M:
        return M
    xi = C / (2.0 * M)
    return math.sqrt(2.0 * C * M) * (1.0 + math.sqrt(xi) / 3.0 + xi / 9.0) - C


def efficiency_loss(w: float, lam: float, C: float, R: float) -> float:
    """Fraction of the optimal efficiency lost at interval ``w``: ``1 - eff(w) / eff(w*)`` (>= 0)."""
    return 1.0 - efficiency(w, lam, C, R) / optimal_efficiency(lam, C, R)


# ---------------------------------------------------------------------------- jobs and pools
def job_rate(rates: float | list[float] | np.ndarray, workers: int = 1) -> float:
    """Failure rate (1/s) of a synchronous job: the sum of its workers' rates (``workers`` copies of
    a scalar rate, or an array of per-worker rates)."""
    r = np.atleast_1d(np.asarray(rates, dtype=float))
    if np.any(~np.isfinite(r)) or np.any(r <= 0):
        raise ValueError("worker failure rates must be finite and > 0")
    return float(r.sum() * (workers if r.size == 1 else 1))


def pool_throughput(rates: list[float] | np.ndarray, C: float, R: float) -> float:
    """Workers x efficiency of a synchronous job over a pool of per-worker rates (1/s), each job
    checkpointing at its own exact optimum for the summed rate (worker-seconds of work per s)."""
    r = np.atleast_1d(np.asarray(rates, dtype=float))
    return float(r.size * optimal_efficiency(job_rate(r), C, R))


def _throughput_curve(
    n_base: int, base_rate: float, flaky_rate: float, C: float, R: float, k: np.ndarray
) -> np.ndarray:
    rate = n_base * base_rate + k * flaky_rate
    return (n_base + k) * _optimal_x(rate * C)[1] / (1.0 + rate * R)


def admission_threshold(
    base_rate: float, n_base: int, flaky_rate: float, C: float, R: float, max_flaky: int = 10**7
) -> int:
    """How many workers of rate ``flaky_rate`` to admit to ``n_base`` workers of rate ``base_rate``.

    Throughput with ``k`` admitted is ``T(k) = (n_base + k) * E*(n_base base_rate + k flaky_rate)``,
    ``E*`` the efficiency at that job's own exact optimum. Returns the smallest ``k`` in
    ``[0, max_flaky]`` maximising ``T``: every pool with more flaky workers has lower (or, at a
    tie, equal) throughput, so admitting the ``(k+1)``-th and beyond lowers it. ``0`` means no
    flaky worker is worth admitting.

    ``T`` need not be unimodal: the efficiency lost grows like ``sqrt(2 rate C)`` (concave in the
    rate), so the first flaky worker can cost more than it adds while a dozen together add more
    than they cost; ``T(1) < T(0)`` does not imply ``k = 0`` (:func:`break_even_rate` is the
    marginal test). The search is therefore global: blocks of ``k`` (1024, doubling up to 2^20),
    stopping once the bound ``T(k) <= (n_base + k_hi) E*(rate at k_lo)`` on the next block is
    below the best so far.
    """
    base_rate, flaky_rate = check_number("base_rate", base_rate), check_number("flaky_rate", flaky_rate)
    C, R = check_number("C", C), check_number("R", R, zero_ok=True)
    if n_base < 1:
        raise ValueError("n_base must be >= 1")
    best_k, best = 0, _throughput_curve(n_base, base_rate, flaky_rate, C, R, np.zeros(1))[0]
    lo, size = 1, 1024
    while lo <= max_flaky:
        hi = min(lo + size - 1, max_flaky)
        ks = np.arange(lo, hi + 1, dtype=float)
        t = _throughput_curve(n_base, base_rate, flaky_rate, C, R, ks)
        i = int(np.argmax(t))
        if t[i] > best:
            best_k, best = lo + i, float(t[i])
        nxt_lo = hi + 1
        nxt_hi = min(nxt_lo + min(2 * size, 1 << 20) - 1, max_flaky)
        bound = (
            (n_base + nxt_hi)
            / (n_base + nxt_lo)
            * _throughput_curve(n_base, base_rate, flaky_rate, C, R, np.array([float(nxt_lo)]))[0]
        )
        if bound <= best:
            break
        lo, size = nxt_lo, min(2 * size, 1 << 20)
    return best_k


def break_even_rate(base_rate: float, n_base: int, C: float, R: float, k: int = 1) -> float:
    """The failure rate (1/s) at which admitting ``k`` equal flaky workers to ``n_base`` workers of
    rate ``base_rate`` leaves throughput unchanged: admitting them raises throughput iff their rate
    is below it. ``E*`` falls strictly with the job's rate, so the root is unique."""
    base_rate, C, R = check_number("base_rate", base_rate), check_number("C", C), check_number("R", R, zero_ok=True)
    if n_base < 1 or k < 1:
        raise ValueError("n_base and k must be >= 1")
    target = n_base * optimal_efficiency(n_base * base_rate, C, R)

    def gap(log_rate: float) -> float:
        return _throughput_curve(n_base, base_rate, math.exp(log_rate), C, R, np.array([float(k)]))[0] - target

    lo, hi = math.log(base_rate) - 50.0, math.log(base_rate) + 10.0
    while gap(hi) > 0:
        hi += 10.0
    return math.exp(brentq(gap, lo, hi, xtol=1e-14, rtol=1e-13))


# ---------------------------------------------------------------------------------- Monte Carlo
class GapStream:
    """Unit-rate exponential gaps from one seed, drawn in a fixed chunk schedule (4096, 8192, ...)
    so every consumer of the same seed sees the same sequence, however much of it it uses."""

    def __init__(self, seed: int) -> None:
        self._rng = np.random.default_rng(seed)
        self._gaps = np.empty(0)
        self._chunks = 0

    def take(self, n: int) -> np.ndarray:
        """The first ``n`` gaps (read-only view)."""
        if n > MAX_GAPS:
            raise ValueError(
                f"this history needs more than {MAX_GAPS:,} failures (the interval is far too long "
                "for this failure rate, or the work too large); simulate less work"
            )
        while self._gaps.size < n:
            new = self._rng.standard_exponential(4096 << self._chunks)
            self._chunks += 1
            self._gaps = np.concatenate([self._gaps, new])
        view = self._gaps[:n]
        view.flags.writeable = False
        return view


@dataclass(frozen=True)
class JobHistory:
    """One simulated job: ``n_full`` segments of ``T`` s, then optionally a last one of ``T_last`` s."""

    wall_s: float  # wall time to the end of the last segment
    exposed_s: float  # computing or checkpointing time (wall minus restarts)
    failures: int
    failure_exposed_s: np.ndarray  # failure instants on the exposed clock (CRN: interval-free)
    segment_stats: tuple[float, float] | None  # mean, sample variance of full segments' wall times


def simulate_job(
    stream: GapStream, rate: float, T: float, n_full: int, R: float, T_last: float = 0.0, stats: bool = False
) -> JobHistory:
    """Simulate ``n_full`` segments of length ``T`` (work + checkpoint, s), then one of ``T_last``
    (if > 0), under failures at ``stream``'s gaps / ``rate`` on the exposed clock; restart ``R`` s.

    With ``stats``, also the mean and variance of the ``n_full`` segments' wall times, without
    listing them: a segment that is not the first to complete in its gap takes exactly ``T``."""
    rate, T, R = check_number("rate", rate), check_number("T", T), check_number("R", R, zero_ok=True)
    if n_full < 0 or (n_full == 0 and T_last <= 0):
        raise ValueError("nothing to simulate")
    with np.errstate(over="ignore"):
        per = float(np.expm1(min(rate * max(T, T_last), 700.0)))
    L = int(min(MAX_GAPS, (n_full + 1) * per * 1.1 + 10.0 * math.sqrt((n_full + 1) * per) + 64))
    while True:
        G = stream.take(L) / rate
        F = np.cumsum(G)
        Fp = F - G
        m = np.floor(G / T).astype(np.int64)
        Mc = np.cumsum(m)
        if Mc[-1] >= n_full:
            J = int(np.searchsorted(Mc, n_full, side="left"))
            before = int(Mc[J] - m[J])
            s = float(Fp[J] + (n_full - before) * T)
            end, failures = s, J
            if T_last > 0 and s + T_last > F[J]:
                fits = np.flatnonzero(G[J + 1 :] >= T_last)
                end, failures = (float(Fp[J + 1 + fits[0]] + T_last), J + 1 + int(fits[0])) if fits.size else (-1.0, 0)
            elif T_last > 0:
                end = s + T_last
            if end >= 0:
                break
        if L >= MAX_GAPS:
            stream.take(MAX_GAPS + 1)  # raises with the explanation
        L = min(2 * L, MAX_GAPS)
    seg_stats = None
    if stats and n_full >= 2:
        mm = m[: J + 1].copy()
        mm[J] = n_full - before
        nz = np.flatnonzero(mm)  # gaps where segments complete
        first = Fp[nz] + T + R * nz  # wall time of the first completion in each
        last = first + (mm[nz] - 1) * T
        d = np.diff(first, prepend=0.0)
        d[1:] -= last[:-1] - first[:-1]  # first completion minus the previous gap's last
        mean = float(last[-1]) / n_full
        ss = float(np.sum((d - mean) ** 2)) + (n_full - nz.size) * (T - mean) ** 2
        seg_stats = (mean, ss / (n_full - 1))
    return JobHistory(end + R * failures, end, failures, F[:failures], seg_stats)


@dataclass(frozen=True)
class MCEstimate:
    """A Monte Carlo efficiency with its two-sided confidence interval over ``n`` segments."""

    estimate: float
    lower: float
    upper: float
    n: int


def mc_efficiency(
    w: float, rate: float, C: float, R: float, segments: int = 20_000, seed: int = 0, confidence: float = 0.95
) -> MCEstimate:
    """Efficiency at interval ``w`` from one seeded history of ``segments`` segments.

    Segment wall times are i.i.d. (each completion is a renewal point: Poisson failures are
    memoryless), so the estimate is ``w / mean`` and the interval maps the normal (CLT) interval of
    the mean segment time through ``w / t``; the upper end is capped at ``w / (w + C)``."""
    w, C = check_number("w", w), check_number("C", C, zero_ok=True)
    if segments < 2 or not 0 < confidence < 1:
        raise ValueError("need segments >= 2 and 0 < confidence < 1")
    hist = simulate_job(GapStream(seed), rate, w + C, segments, R, stats=True)
    assert hist.segment_stats is not None
    mean, se = hist.segment_stats[0], math.sqrt(hist.segment_stats[1] / segments)
    z = NormalDist().inv_cdf(0.5 + confidence / 2.0)
    top = w / (w + C)
    upper = top if mean - z * se <= 0 else min(top, w / (mean - z * se))
    return MCEstimate(w / mean, w / (mean + z * se), upper, segments)
