"""Stress families: parameterised WAN/site stress timelines drawn from the stratum seed (no torch).

Model, rules and assumptions: docs/seed-studies.md (prereg_seed_studies.controller.stress).
"""

from __future__ import annotations

import hashlib
import math
import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

FAMILIES = (
    "calm",
    "bandwidth_collapse",
    "latency_spikes",
    "site_outage",
    "straggler",
    "flapping_membership",
    "partition_heals",
    "congestion",
    "compound",
    "rolling_outages",
)
STRESS_FAMILIES = FAMILIES[1:]  # the stress families proper (calm is the control)
REGIONS = ("all", "low", "high")
EPISODE_KINDS = ("bandwidth", "latency", "down", "unreachable", "slow")


@dataclass(frozen=True)
class Episode:
    """One stress episode on ``[start_ms, end_ms)``: bandwidth multiplier, added latency (ms), a site
    down, a site unreachable (alive, partitioned), or a site's compute slowed by ``value``."""

    kind: str
    start_ms: float
    end_ms: float
    value: float = 1.0
    site: int | None = None

    def active(self, t_ms: float) -> bool:
        return self.start_ms <= t_ms < self.end_ms

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "start_ms": self.start_ms,
            "end_ms": self.end_ms,
            "value": self.value,
            "site": self.site,
        }


@dataclass(frozen=True)
class Conditions:
    """The infrastructure at one instant."""

    bandwidth_mbps: float
    latency_ms: float
    up: tuple[bool, ...]
    reachable: tuple[bool, ...]  # alive and connected to the WAN
    slow: tuple[float, ...]  # compute time multiplier per site


@dataclass(frozen=True)
class Stress:
    """A run's stress timeline: base conditions and episodes (see the module doc)."""

    family: str
    sites: int
    base_bandwidth_mbps: float
    base_latency_ms: float
    outage_rate_per_min: float
    horizon_ms: float
    episodes: tuple[Episode, ...] = field(default_factory=tuple)

    def at(self, t_ms: float) -> Conditions:
        bw, lat = self.base_bandwidth_mbps, self.base_latency_ms
        up = [True] * self.sites
        reach = [True] * self.sites
        slow = [1.0] * self.sites
        for e in self.episodes:
            if not e.active(t_ms):
                continue
            if e.kind == "bandwidth":
                bw *= e.value
            elif e.kind == "latency":
                lat += e.value
            elif e.kind == "down" and e.site is not None:
                up[e.site] = reach[e.site] = False
            elif e.kind == "unreachable" and e.site is not None:
                reach[e.site] = False
            elif e.kind == "slow" and e.site is not None:
                slow[e.site] = max(slow[e.site], e.value)
        return Conditions(bw, lat, tuple(up), tuple(reach), tuple(slow))

    def down_during(self, site: int, t0: float, t1: float) -> bool:
        """Whether ``site`` is down at any instant of ``[t0, t1]``."""
        return any(e.kind == "down" and e.site == site and e.start_ms <= t1 and e.end_ms > t0 for e in self.episodes)

    def next_change(self, t_ms: float) -> float | None:
        """The first episode boundary after ``t_ms`` (None when nothing changes any more)."""
        later = [x for e in self.episodes for x in (e.start_ms, e.end_ms) if x > t_ms]
        return min(later) if later else None

    def as_dict(self) -> dict[str, Any]:
        return {
            "family": self.family,
            "base_bandwidth_mbps": self.base_bandwidth_mbps,
            "base_latency_ms": self.base_latency_ms,
            "outage_rate_per_min": self.outage_rate_per_min,
            "horizon_ms": self.horizon_ms,
            "episodes": [e.as_dict() for e in self.episodes],
        }


def region_range(lo: float, hi: float, region: str, geometric: bool = False) -> tuple[float, float]:
    """The sub-range of ``[lo, hi]`` a region label names (``all``, ``low`` half, ``high`` half)."""
    if region not in REGIONS:
        raise ValueError(f"region {region!r} must be one of {', '.join(REGIONS)}")
    mid = math.sqrt(lo * hi) if geometric else (lo + hi) / 2
    return {"all": (lo, hi), "low": (lo, mid), "high": (mid, hi)}[region]


def _rng(seed: int, domain: str) -> random.Random:
    digest = hashlib.sha256(f"controller/stress/v1/{domain}/{int(seed)}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def _poisson(rng: random.Random, mean: float) -> int:
    limit, k, prod = math.exp(-mean), 0, rng.random()
    while prod > limit and k < 1000:
        k += 1
        prod *= rng.random()
    return k


def draw_stress(p: Mapping[str, Any], seed: int) -> Stress:
    """The stratum's stress timeline: a pure function of the stress params and ``seed``."""
    family, n = p["family"], p["sites"]
    if family not in FAMILIES:
        raise ValueError(f"family {family!r} must be one of {', '.join(FAMILIES)}")
    base = _rng(seed, "base")  # the base draws do not depend on the family: regions are comparable
    bw_lo, bw_hi = region_range(p["bandwidth_mbps_min"], p["bandwidth_mbps_max"], p["bandwidth_region"], True)
    bw = math.exp(base.uniform(math.log(bw_lo), math.log(bw_hi)))
    lat = base.uniform(*region_range(p["latency_ms_min"], p["latency_ms_max"], p["latency_region"]))
    rate = base.uniform(*region_range(p["outage_rate_per_min_min"], p["outage_rate_per_min_max"], p["outage_region"]))
    horizon = p["stress_horizon_s"] * 1e3
    rng = _rng(seed, f"family/{family}")
    eps: list[Episode] = []

    def span(a: tuple[float, float], d: tuple[float, float]) -> tuple[float, float]:
        start = rng.uniform(*a) * horizon
        return start, start + rng.uniform(*d) * horizon

    expected = rate * horizon / 60e3  # expected outages over the horizon
    if family == "bandwidth_collapse":
        eps.append(Episode("bandwidth", *span((0.1, 0.5), (0.2, 0.5)), 10 ** -rng.uniform(1, 2)))
    elif family == "latency_spikes":
        for _ in range(rng.randint(3, 8)):
            eps.append(Episode("latency", *span((0.0, 0.9), (0.02, 0.06)), rng.uniform(5, 20) * lat))
    elif family == "site_outage":
        for _ in range(max(1, _poisson(rng, expected))):
            eps.append(Episode("down", *span((0.0, 0.8), (0.1, 0.3)), site=rng.randrange(n)))
    elif family == "straggler":
        eps.append(Episode("slow", *span((0.0, 0.3), (0.3, 0.6)), rng.uniform(2, 6), site=rng.randrange(n)))
    elif family == "flapping_membership":
        site, t = rng.randrange(n), rng.uniform(0.0, 0.2) * horizon
        for _ in range(max(3, _poisson(rng, 2 * expected))):
            d = rng.uniform(0.02, 0.05) * horizon
            eps.append(Episode("down", t, t + d, site=site))
            t += d + rng.uniform(0.03, 0.08) * horizon
    elif family == "partition_heals":
        eps.append(Episode("unreachable", *span((0.1, 0.4), (0.15, 0.35)), site=rng.randrange(n)))
    elif family == "congestion":
        phase, seg = rng.uniform(0, 2 * math.pi), horizon / 20
        for k in range(20):
            mult = 0.1 + 0.9 * (1 + math.sin(phase + k * 2 * math.pi / 10)) / 2
            eps.append(Episode("bandwidth", k * seg, (k + 1) * seg, mult))
    elif family == "compound":
        start, end = span((0.1, 0.5), (0.15, 0.3))
        eps.append(Episode("bandwidth", start, end, 10 ** -rng.uniform(0.5, 1.5)))
        eps.append(Episode("down", start, end, site=rng.randrange(n)))
    elif family == "rolling_outages":
        t = rng.uniform(0.0, 0.2) * horizon
        for site in rng.sample(range(n), n):
            d = rng.uniform(0.05, 0.12) * horizon
            eps.append(Episode("down", t, t + d, site=site))
            t += d + rng.uniform(0.02, 0.1) * horizon
    return Stress(family, n, bw, lat, rate, horizon, tuple(eps))
