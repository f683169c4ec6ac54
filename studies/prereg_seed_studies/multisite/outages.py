"""Site outage schedules for the multi-site simulators: drawn from a stratum seed, or scripted.

Model, rules and assumptions: docs/seed-studies.md (prereg_seed_studies.multisite.outages).
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from collect.collectors.base import ParamError

SCHEDULE_VERSION = "sim.multisite/outages/v1"
OUTAGE_DEFAULTS: dict[str, Any] = {
    "sites": 3,
    "target_steps": 1000,
    "mtbf_ticks": 1000.0,
    "outage_count": 0,
    "outage_duration_ticks": 100.0,
    "outage_duration_dist": "exponential",
    "outage_horizon_ticks": 0,
    "outage_site": "random",
    "outages": (),
}
OUTAGE_PARAMS: tuple[str, ...] = tuple(OUTAGE_DEFAULTS)
DURATION_DISTS = ("exponential", "fixed")
SITE_CHOICES = ("none", "random")


@dataclass(frozen=True)
class Outage:
    """One site outage: the site is down on ticks ``[start_tick, start_tick + duration_ticks)``."""

    site: int
    start_tick: int
    duration_ticks: int

    @property
    def end_tick(self) -> int:
        """First tick the site is up again."""
        return self.start_tick + self.duration_ticks

    def as_dict(self) -> dict[str, int]:
        """The scripted-schedule form ``{site, start, duration}``."""
        return {"site": self.site, "start": self.start_tick, "duration": self.duration_ticks}


def valid_outage_site(value: Any) -> bool:
    """``none``, ``random`` or a site index >= 0 (the upper bound is checked against ``sites``)."""
    if isinstance(value, bool):
        return False
    return (isinstance(value, int) and value >= 0) or value in SITE_CHOICES


def _int(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ParamError(f"{what} = {value!r} must be an integer")
    return value


def scripted_outages(script: Iterable[Any], sites: int) -> list[Outage]:
    """Parse ``[{site, start, duration}, ...]`` (mappings with exactly these integer keys)."""
    out: list[Outage] = []
    for i, item in enumerate(script):
        if not isinstance(item, Mapping) or set(item) != {"site", "start", "duration"}:
            raise ParamError(f"outages[{i}] = {item!r} must be a mapping with keys site, start, duration")
        site = _int(item["site"], f"outages[{i}].site")
        start = _int(item["start"], f"outages[{i}].start")
        duration = _int(item["duration"], f"outages[{i}].duration")
        if not 0 <= site < sites:
            raise ParamError(f"outages[{i}].site = {site} must be in [0, {sites})")
        if start < 0 or duration < 1:
            raise ParamError(f"outages[{i}] needs start >= 0 and duration >= 1 (ticks)")
        out.append(Outage(site, start, duration))
    return out


def normalize(outages: Iterable[Outage], sites: int) -> list[Outage]:
    """Merge overlapping or touching outages per site; sort by ``(start_tick, site)``."""
    by_site: dict[int, list[Outage]] = {}
    for o in outages:
        if not 0 <= o.site < sites or o.start_tick < 0 or o.duration_ticks < 1:
            raise ParamError(f"bad outage {o} for {sites} sites")
        by_site.setdefault(o.site, []).append(o)
    merged: list[Outage] = []
    for site, items in by_site.items():
        items.sort(key=lambda o: o.start_tick)
        start, end = items[0].start_tick, items[0].end_tick
        for o in items[1:]:
            if o.start_tick <= end:
                end = max(end, o.end_tick)
            else:
                merged.append(Outage(site, start, end - start))
                start, end = o.start_tick, o.end_tick
        merged.append(Outage(site, start, end - start))
    merged.sort(key=lambda o: (o.start_tick, o.site))
    return merged


def outage_settings(params: Mapping[str, Any]) -> dict[str, Any]:
    """The outage parameters of ``params`` with defaults filled and checked; other keys ignored."""
    p = {k: params.get(k, v) for k, v in OUTAGE_DEFAULTS.items()}
    sites = _int(p["sites"], "sites")
    if sites < 1:
        raise ParamError("sites must be >= 1")
    if not valid_outage_site(p["outage_site"]):
        raise ParamError(f"outage_site = {p['outage_site']!r} must be none, random or a site index")
    if isinstance(p["outage_site"], int) and p["outage_site"] >= sites:
        raise ParamError(f"outage_site = {p['outage_site']} must be < sites = {sites}")
    if not float(p["mtbf_ticks"]) > 0 or not float(p["outage_duration_ticks"]) > 0:
        raise ParamError("mtbf_ticks and outage_duration_ticks must be > 0")
    if p["outage_duration_dist"] not in DURATION_DISTS:
        raise ParamError(f"outage_duration_dist must be one of {', '.join(DURATION_DISTS)}")
    if _int(p["outage_count"], "outage_count") < 0 or _int(p["outage_horizon_ticks"], "outage_horizon_ticks") < 0:
        raise ParamError("outage_count and outage_horizon_ticks must be >= 0")
    if _int(p["target_steps"], "target_steps") < 1:
        raise ParamError("target_steps must be >= 1")
    if isinstance(p["outages"], (str, bytes)) or not isinstance(p["outages"], Iterable):
        raise ParamError("outages must be a list of {site, start, duration} mappings")
    return p


def draw_outages(params: Mapping[str, Any], seed: int) -> list[Outage]:
    """The outage schedule of a stratum: a function of the outage params and ``seed`` only."""
    p = outage_settings(params)
    sites, where = p["sites"], p["outage_site"]
    if where == "none":
        return []
    script = list(p["outages"])
    if script:
        raw = scripted_outages(script, sites)
        if isinstance(where, int):
            raw = [Outage(where, o.start_tick, o.duration_ticks) for o in raw]
        return normalize(raw, sites)
    rng = random.Random(f"{SCHEDULE_VERSION}:{int(seed)}")
    horizon = p["outage_horizon_ticks"] or 2 * p["target_steps"]
    mtbf, mean = float(p["mtbf_ticks"]), float(p["outage_duration_ticks"])
    count = p["outage_count"]
    if count > 0:
        onsets = sorted(rng.random() * horizon for _ in range(count))
    else:
        onsets, t = [], rng.expovariate(sites / mtbf)
        while t < horizon:
            onsets.append(t)
            t += rng.expovariate(sites / mtbf)
    raw = []
    for t in onsets:
        site = rng.randrange(sites)  # drawn even when forced, so the stream does not depend on it
        if p["outage_duration_dist"] == "fixed":
            duration = max(1, round(mean))
        else:
            duration = max(1, math.ceil(rng.expovariate(1.0 / mean)))
        raw.append(Outage(where if isinstance(where, int) else site, int(t), duration))
    return normalize(raw, sites)
