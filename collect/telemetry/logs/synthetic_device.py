"""A synthetic GPU with known true energy: a run's power pattern, the energy counter and the driver's
power average as NVML documents them -- SYNTHETIC, for validating the log converters and the energy
bounds (tests, ``benchmarks/bench_energy_logs.py``), never a measurement.

More in ``docs/internals.md``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

Floats = NDArray[np.float64]


@dataclass(frozen=True)
class PowerPattern:
    """One run's power over time (W; ``t`` s from the run's start; the run is ``[0, run_s]``).

    Inside the run: ``scale * (base_w + swing_w sin(2 pi t / swing_period_s + swing_phase_rad)
    + square_w [frac(t / square_period_s) >= 1 - square_duty])``; during the first ``start_s`` the
    base, swing and square are replaced by ``start_w`` (a restore reading a checkpoint, say); during
    the last ``end_burst_s`` ``end_burst_w`` is added on top (a checkpoint written at the end).
    Outside the run the device draws ``idle_w`` (not scaled).
    """

    run_s: float
    base_w: float = 300.0
    swing_w: float = 40.0
    swing_period_s: float = 7.0
    swing_phase_rad: float = 0.0
    square_w: float = 0.0
    square_period_s: float = 0.1
    square_duty: float = 0.5
    start_w: float | None = None
    start_s: float = 0.0
    end_burst_w: float = 0.0
    end_burst_s: float = 0.0
    scale: float = 1.0
    idle_w: float = 60.0

    def __post_init__(self) -> None:
        """``ValueError`` for a pattern that is not a run's power (negative power or lengths)."""
        if not (self.run_s > 0 and self.swing_period_s > 0 and self.square_period_s > 0 and self.scale > 0):
            raise ValueError("run_s, swing_period_s, square_period_s and scale must be > 0")
        if not (0 <= self.square_duty <= 1 and self.start_s >= 0 and self.end_burst_s >= 0):
            raise ValueError("square_duty must be in [0, 1]; start_s and end_burst_s >= 0")
        if self.least_w < 0 or self.idle_w < 0:
            raise ValueError("the pattern's power must never be negative")

    @property
    def least_w(self) -> float:
        """A lower bound of the power inside the run (W)."""
        body = self.base_w - abs(self.swing_w) + min(0.0, self.square_w)
        start = body if self.start_w is None or self.start_s == 0 else min(body, self.start_w)
        return self.scale * (start + min(0.0, self.end_burst_w))

    @property
    def most_w(self) -> float:
        """An upper bound of the power inside the run (W)."""
        body = self.base_w + abs(self.swing_w) + max(0.0, self.square_w)
        start = body if self.start_w is None or self.start_s == 0 else max(body, self.start_w)
        return self.scale * (start + max(0.0, self.end_burst_w))

    def _body(self, x: Floats) -> Floats:
        """``int_0^x`` of base + swing + square (J before scaling), ``x >= 0``."""
        w = 2 * math.pi / self.swing_period_s
        swing = self.swing_w / w * (math.cos(self.swing_phase_rad) - np.cos(w * x + self.swing_phase_rad))
        periods = np.floor(x / self.square_period_s)
        into = x - periods * self.square_period_s
        on = self.square_duty * self.square_period_s
        square = self.square_w * (periods * on + np.maximum(0.0, into - (self.square_period_s - on)))
        return np.asarray(self.base_w * x + swing + square, dtype=np.float64)

    def _inside(self, x: Floats) -> Floats:
        """``int_0^x`` of the run's power (J), ``0 <= x <= run_s``."""
        total = self._body(x)
        if self.start_w is not None and self.start_s > 0:
            s = np.minimum(x, self.start_s)
            total = total - self._body(s) + self.start_w * s
        if self.end_burst_s > 0:
            total = total + self.end_burst_w * np.clip(x - (self.run_s - self.end_burst_s), 0.0, self.end_burst_s)
        return self.scale * total

    def cumulative(self, t: ArrayLike) -> Floats:
        """The exact energy from the run's start to ``t`` (J; negative before it)."""
        x = np.asarray(t, dtype=np.float64)
        inside = self._inside(np.clip(x, 0.0, self.run_s))
        return np.asarray(
            self.idle_w * (np.minimum(x, 0.0) + np.maximum(x - self.run_s, 0.0)) + inside, dtype=np.float64
        )

    def energy(self, a: ArrayLike, b: ArrayLike) -> Floats:
        """The exact energy of ``[a, b]`` (J)."""
        return self.cumulative(b) - self.cumulative(a)

    def run_energy(self) -> float:
        """The exact energy of the run ``[0, run_s]`` (J)."""
        return float(self.energy(0.0, self.run_s))

    def power(self, t: ArrayLike) -> Floats:
        """The power at ``t`` (W), for plots and checks: the step and swing the integral above follows."""
        x = np.asarray(t, dtype=np.float64)
        w = 2 * math.pi / self.swing_period_s
        into = np.mod(x, self.square_period_s)
        square = np.where(into >= (1 - self.square_duty) * self.square_period_s, self.square_w, 0.0)
        body = self.base_w + self.swing_w * np.sin(w * x + self.swing_phase_rad) + square
        if self.start_w is not None:
            body = np.where(x < self.start_s, self.start_w, body)
        body = body + np.where(x >= self.run_s - self.end_burst_s, self.end_burst_w, 0.0)
        inside = (x >= 0) & (x <= self.run_s)
        return np.asarray(np.where(inside, self.scale * body, self.idle_w), dtype=np.float64)


@dataclass(frozen=True)
class EnergyCounter:
    """NVML's cumulative energy counter (mJ): updated every ``period_s`` at times ``phase_s + k
    period_s`` (``0 <= phase_s < period_s``), holding ``offset_mj`` plus the floor of the true energy
    from the run's start to the update (mJ)."""

    pattern: PowerPattern
    period_s: float = 0.1
    phase_s: float = 0.0
    offset_mj: int = 1_000_000_000

    def last_update(self, t: ArrayLike) -> Floats:
        """The time of the last update at or before ``t`` (s)."""
        x = np.asarray(t, dtype=np.float64)
        return np.asarray(np.floor((x - self.phase_s) / self.period_s) * self.period_s + self.phase_s, dtype=np.float64)

    def read_mj(self, t: ArrayLike) -> NDArray[np.int64]:
        """The counter as read at ``t`` (mJ, an integer)."""
        joules = self.pattern.cumulative(self.last_update(t))
        return np.asarray(self.offset_mj + np.floor(joules * 1000.0), dtype=np.int64)


@dataclass(frozen=True)
class PowerGauge:
    """The driver's power reading (W), updated every ``update_s`` at ``phase_s + k update_s``:
    ``average`` reads the mean power over ``[u - window_s, u]`` at the last update u; ``part-time``
    the mean over the last ``covered_s`` of each update period inside that window (Yang et al.,
    SC24: 25 ms of every 100 ms on A100/H100)."""

    pattern: PowerPattern
    model: Literal["average", "part-time"] = "average"
    update_s: float = 0.1
    window_s: float = 1.0
    covered_s: float = 0.025
    phase_s: float = 0.0

    def read_w(self, t: ArrayLike) -> Floats:
        """The reading at ``t`` (W)."""
        x = np.asarray(t, dtype=np.float64)
        u = np.floor((x - self.phase_s) / self.update_s) * self.update_s + self.phase_s
        if self.model == "average":
            return np.asarray(self.pattern.energy(u - self.window_s, u) / self.window_s, dtype=np.float64)
        periods = max(1, round(self.window_s / self.update_s))
        total = np.zeros_like(u)
        for k in range(periods):
            end = u - k * self.update_s
            total += self.pattern.energy(end - self.covered_s, end)
        return np.asarray(total / (periods * self.covered_s), dtype=np.float64)


__all__ = ["EnergyCounter", "PowerGauge", "PowerPattern"]
