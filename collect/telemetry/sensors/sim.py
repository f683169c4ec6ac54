"""A simulated GPU power sensor, for CPU machines and tests (evidence class ``modeled``).

Spec: ``sim:update_ms=100,window_ms=25,power_w=300,noise_w=5,counter_update_ms=100,...``

More in ``docs/internals.md``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import replace
from itertools import pairwise

import numpy as np

from collect.telemetry.sensors.base import Reading, Sensor, SensorError, SignalInfo, parse_spec_options

OPTIONS: dict[str, type] = {
    "update_ms": float,
    "window_ms": float,
    "power_w": float,
    "idle_w": float,
    "checkpoint_w": float,
    "noise_w": float,
    "counter_update_ms": float,
    "cell_ms": float,
    "wrap_mj": int,
    "reset_at_ms": float,
    "clock": str,
    "seed": int,
    "read_cost_us": float,
    "signals": str,
    "read_latency_ms": float,
}
DEFAULTS: dict[str, object] = {
    "update_ms": 100.0,
    "window_ms": 25.0,
    "power_w": 300.0,
    "idle_w": 60.0,
    "checkpoint_w": 150.0,
    "noise_w": 5.0,
    "counter_update_ms": 100.0,
    "cell_ms": 10.0,
    "wrap_mj": 0,
    "reset_at_ms": 0.0,
    "clock": "real",
    "seed": 0,
    "read_cost_us": 20.0,
    "signals": "energy_counter+power_average+power_instant",
    "read_latency_ms": 0.0,
}
PHASE_LEVEL = {"idle": "idle_w", "stall": "idle_w", "checkpoint": "checkpoint_w"}  # others: power_w
SIGNALS = {
    "energy_counter": SignalInfo("energy_counter", "mJ", "counter", "modeled"),
    "power_average": SignalInfo("power_average", "W", "gauge", "modeled"),
    "power_instant": SignalInfo("power_instant", "W", "gauge", "modeled"),
}
_MS = 1_000_000  # ns per ms
MAX_READ_LATENCY_MS = 60_000.0  # a query answered later than a minute is a dead meter, not a slow one
_MASK = (1 << 64) - 1


def offered_signals(names: str, window_ms: float) -> dict[str, SignalInfo]:
    """The signals of a ``signals=a+b`` option, each with its averaging window; ``SensorError`` on junk."""
    chosen = [n.strip() for n in names.split("+") if n.strip()]
    unknown = [n for n in chosen if n not in SIGNALS]
    if unknown or not chosen:
        raise SensorError(f"sim option signals={names!r}: name one or more of {' + '.join(SIGNALS)}")
    windows = {"power_average": window_ms, "power_instant": 0.0}
    return {n: replace(SIGNALS[n], window_ms=windows.get(n)) for n in SIGNALS if n in chosen}


def spec_signals(rest: str) -> set[str]:
    """The signals a ``sim:...`` spec (the part after ``sim:``) offers, without opening it."""
    options = parse_spec_options(rest, OPTIONS)
    return set(offered_signals(str(options.get("signals", DEFAULTS["signals"])), 0.0))


class SimSensor(Sensor):
    """See the module doc. All times are ns on the sensor's clock, starting at 0."""

    evidence = "modeled"

    def __init__(self, **options: object) -> None:
        unknown = set(options) - set(OPTIONS)
        if unknown:
            raise SensorError(f"unknown sim option(s) {sorted(unknown)}")
        o = {**DEFAULTS, **options}
        self.o = o
        for key in ("update_ms", "window_ms", "counter_update_ms", "cell_ms"):
            if not float(o[key]) > 0:  # type: ignore[arg-type]
                raise SensorError(f"sim option {key} must be > 0")
        if float(o["window_ms"]) > float(o["update_ms"]):  # type: ignore[arg-type]
            raise SensorError("sim window_ms must not exceed update_ms")
        if not 0 <= float(o["read_latency_ms"]) <= MAX_READ_LATENCY_MS:  # type: ignore[arg-type]
            raise SensorError(f"sim option read_latency_ms must be from 0 to {MAX_READ_LATENCY_MS:g} ms")
        if o["clock"] not in ("real", "virtual"):
            raise SensorError("sim clock must be 'real' or 'virtual'")
        self.virtual = o["clock"] == "virtual"
        self._signals = offered_signals(str(o["signals"]), float(o["window_ms"]))  # type: ignore[arg-type]
        self._t0 = time.monotonic_ns()
        self._vt = 0
        self._cell_ns = int(float(o["cell_ms"]) * _MS)  # type: ignore[arg-type]
        # load segments: start times (ns) and levels (W), piecewise constant
        self._seg_t: list[int] = [0]
        self._seg_w: list[float] = [float(o["idle_w"])]  # type: ignore[arg-type]
        self._cum: dict[int, tuple[int, float]] = {}

    @classmethod
    def from_spec(cls, rest: str) -> SimSensor:
        """Parse ``key=value,...`` (see the module doc for the keys)."""
        return cls(**parse_spec_options(rest, OPTIONS))

    # --- the interface ----------------------------------------------------------------------
    def signals(self) -> dict[str, SignalInfo]:
        """The simulated signals this meter offers (option ``signals``)."""
        return dict(self._signals)

    @property
    def unavailable(self) -> dict[str, str]:
        """Nothing is unavailable on the simulator."""
        return {}

    def now_ns(self) -> int:
        """Virtual time, or real monotonic time since the sensor was made."""
        return self._vt if self.virtual else time.monotonic_ns() - self._t0

    def advance(self, ns: int) -> None:
        """Let ``ns`` of virtual time pass (real clock: sleep)."""
        if self.virtual:
            self._vt += int(ns)
        else:
            time.sleep(ns / 1e9)

    def set_phase(self, name: str) -> None:
        """From now on, draw the load of phase ``name`` (idle, compute, checkpoint, ...)."""
        level = float(self.o[PHASE_LEVEL.get(name, "power_w")])  # type: ignore[arg-type]
        t = self.now_ns()
        if t <= self._seg_t[-1]:
            self._seg_w[-1] = level
        else:
            self._seg_t.append(t)
            self._seg_w.append(level)

    def read(self, signals: Sequence[str]) -> list[Reading]:
        """Poll each signal once; virtual reads cost ``read_cost_us`` of virtual time, and each
        answer comes ``read_latency_ms`` after it was asked (module doc)."""
        out = []
        latency_ns = int(float(self.o["read_latency_ms"]) * _MS)  # type: ignore[arg-type]
        for name in signals:
            if name not in self._signals:
                raise KeyError(name)
            before = self.now_ns()
            if self.virtual:
                self._vt += int(float(self.o["read_cost_us"]) * 1000)  # type: ignore[arg-type]
            after = self.now_ns()
            value, stamp = self._value(name, (before + after) // 2)
            if latency_ns:
                if self.virtual:
                    after += latency_ns
                else:
                    time.sleep(latency_ns / 1e9)
                    after = self.now_ns()
            out.append(Reading(name, before, after, value, SIGNALS[name].unit, "ok", stamp))
        return out

    # --- the physics ------------------------------------------------------------------------
    def _noise(self, cell: int) -> float:
        """Seeded uniform fluctuation of one cell (splitmix64 of seed and cell: cheap, reproducible)."""
        x = (int(self.o["seed"]) * 0x9E3779B97F4A7C15 + cell + 1) & _MASK  # type: ignore[call-overload]
        x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
        x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK
        x ^= x >> 31
        return (x / _MASK * 2.0 - 1.0) * float(self.o["noise_w"])  # type: ignore[arg-type]

    def _cumulative_j(self, start_ns: int, u_ns: int) -> float:
        """Energy from ``start_ns`` to ``u_ns``, memoised (past energy never changes)."""
        key = start_ns
        t, j = self._cum.get(key, (start_ns, 0.0))
        if u_ns < t:
            t, j = start_ns, 0.0
        j += self.true_energy_j(t, u_ns)
        self._cum[key] = (u_ns, j)
        return j

    def power_w(self, t_ns: int) -> float:
        """True power at ``t_ns``."""
        i = int(np.searchsorted(self._seg_t, t_ns, side="right")) - 1
        return self._seg_w[max(i, 0)] + self._noise(t_ns // self._cell_ns)

    def true_energy_j(self, a_ns: int, b_ns: int) -> float:
        """Exact energy (J) of the true power over [a, b] (b >= a)."""
        if b_ns <= a_ns:
            return 0.0
        edges = {a_ns, b_ns}
        edges.update(t for t in self._seg_t if a_ns < t < b_ns)
        first, last = a_ns // self._cell_ns + 1, (b_ns - 1) // self._cell_ns
        edges.update(range(first * self._cell_ns, (last + 1) * self._cell_ns, self._cell_ns))
        pts = sorted(t for t in edges if a_ns <= t <= b_ns)
        total = 0.0
        for lo, hi in pairwise(pts):
            total += self.power_w(lo) * (hi - lo) / 1e9
        return total

    def power_range_w(self) -> tuple[float, float]:
        """The true power's range: (lowest level - noise, highest level + noise)."""
        levels = [float(self.o[k]) for k in ("idle_w", "power_w", "checkpoint_w")]  # type: ignore[arg-type]
        noise = float(self.o["noise_w"])  # type: ignore[arg-type]
        return max(0.0, min(levels) - noise), max(levels) + noise

    def _value(self, name: str, t_ns: int) -> tuple[float, int]:
        """The signal's value as shown at ``t_ns`` and the driver timestamp (us) of that value."""
        if name == "energy_counter":
            period = int(float(self.o["counter_update_ms"]) * _MS)  # type: ignore[arg-type]
            u = (t_ns // period) * period
            start = 0
            reset = int(float(self.o["reset_at_ms"]) * _MS)  # type: ignore[arg-type]
            if reset and u >= reset:
                start = reset
            mj = math.floor(self._cumulative_j(start, u) * 1000.0)
            wrap = int(self.o["wrap_mj"])  # type: ignore[call-overload]
            if wrap:
                mj %= wrap
            return float(mj), u // 1000
        period = int(float(self.o["update_ms"]) * _MS)  # type: ignore[arg-type]
        u = (t_ns // period) * period
        if name == "power_instant":
            return self.power_w(u), u // 1000
        window = int(float(self.o["window_ms"]) * _MS)  # type: ignore[arg-type]
        a = max(0, u - window)
        value = self.true_energy_j(a, u) / ((u - a) / 1e9) if u > a else self.power_w(u)
        return value, u // 1000
