"""Consistency modes, the WAN cost model and the adaptive controller's rules (one implementation, no torch).

Model, rules and assumptions: docs/seed-studies.md (prereg_seed_studies.controller.policy).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field


def parse_mode(mode: str) -> int:
    """``sync`` -> 1, ``local:H`` -> H (H >= 2); ValueError otherwise."""
    if mode == "sync":
        return 1
    head, _, tail = mode.partition(":")
    if head == "local" and tail.isdigit() and int(tail) >= 2:
        return int(tail)
    raise ValueError(f"mode {mode!r} must be sync or local:H with H >= 2")


def parse_modes(text: str) -> tuple[str, ...]:
    """A comma-separated mode list, each checked; at least one."""
    modes = tuple(m.strip() for m in text.split(",") if m.strip())
    if not modes:
        raise ValueError("the mode list is empty")
    for m in modes:
        parse_mode(m)
    if len(set(modes)) != len(modes):
        raise ValueError(f"mode list {text!r} repeats a mode")
    return modes


def allreduce_ms(nbytes: float, m: int, bandwidth_mbps: float, latency_ms: float) -> float:
    """Modeled time of a ring all-reduce of ``nbytes`` over ``m`` sites (see the module doc)."""
    if m <= 1:
        return 0.0
    return 2 * (m - 1) * (latency_ms + (nbytes / m) * 8 / (bandwidth_mbps * 1e3))


def allreduce_bytes(nbytes: int, m: int) -> int:
    """WAN bytes of that all-reduce: ``2 (m - 1) nbytes``."""
    return 2 * (m - 1) * nbytes if m > 1 else 0


@dataclass(frozen=True)
class CycleReport:
    """What one finished communication cycle let the controller observe."""

    cycle: int
    mode: str
    steps: int  # inner steps per site (sync: steps of the cycle)
    compute_ms_per_step: float
    observed_bandwidth_mbps: float | None  # None: no WAN transfer in the cycle
    observed_latency_ms: float | None
    members: tuple[int, ...]
    update_age: int
    disagreement: float


@dataclass(frozen=True)
class Decision:
    """The next cycle's mode, what the controller did, and why."""

    mode: str
    action: str  # fixed | keep | switch | abstain
    reason: str


@dataclass
class ControllerConfig:
    modes: tuple[str, ...]
    safe_mode: str
    sync_cycle_steps: int
    sync_bytes: int  # payload of one sync step's all-reduce (gradients)
    outer_bytes: int  # payload of one outer synchronisation (parameters)
    min_observations: int = 2
    window: int = 3
    max_bw_spread: float = 4.0
    staleness_cost: float = 0.02
    max_disagreement: float = 0.1


@dataclass
class Controller:
    """The adaptive rules (module doc); ``decide`` is called once per finished cycle."""

    cfg: ControllerConfig
    history: list[CycleReport] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.cfg.safe_mode not in self.cfg.modes:
            raise ValueError(f"safe mode {self.cfg.safe_mode} is not one of the modes {', '.join(self.cfg.modes)}")

    def start(self) -> Decision:
        """The first cycle's mode: the safe mode, for want of any observation."""
        return Decision(self.cfg.safe_mode, "abstain", "no observations yet")

    def comm_ms(self, mode: str, m: int, bw: float, lat: float) -> float:
        """Modeled WAN time of one cycle of ``mode`` per step: sync all-reduces every step."""
        h = parse_mode(mode)
        return (
            allreduce_ms(self.cfg.sync_bytes, m, bw, lat) * h
            if h == 1
            else allreduce_ms(self.cfg.outer_bytes, m, bw, lat)
        )

    def decide(self, report: CycleReport) -> Decision:
        safe = self.cfg.safe_mode
        if self.history and self.history[-1].members != report.members:
            self.history = [report]
            return Decision(safe, "abstain", f"membership changing ({list(self.history[0].members)})")
        self.history.append(report)
        window = [r for r in self.history[-self.cfg.window :] if r.observed_bandwidth_mbps is not None]
        if len(window) < self.cfg.min_observations:
            return Decision(safe, "abstain", f"too few observations ({len(window)} < {self.cfg.min_observations})")
        bws = [r.observed_bandwidth_mbps for r in window if r.observed_bandwidth_mbps is not None]
        lats = [r.observed_latency_ms for r in window if r.observed_latency_ms is not None]
        if max(bws) / min(bws) > self.cfg.max_bw_spread:
            return Decision(safe, "abstain", f"evidence unstable (bandwidth spread {max(bws) / min(bws):.1f}x)")
        bw, lat = statistics.median(bws), statistics.median(lats)
        step = statistics.median(r.compute_ms_per_step for r in window)
        m = len(report.members)
        local = [r for r in self.history if parse_mode(r.mode) > 1 and r.disagreement > 0]
        per_step = local[-1].disagreement / parse_mode(local[-1].mode) if local else 0.0
        candidates: Sequence[str] = [
            c for c in self.cfg.modes if parse_mode(c) == 1 or per_step * parse_mode(c) <= self.cfg.max_disagreement
        ]
        candidates = candidates or [min(self.cfg.modes, key=parse_mode)]

        def score(mode: str) -> tuple[float, int]:
            h = parse_mode(mode)
            per_step = step + self.comm_ms(mode, m, bw, lat) / h
            return per_step * (1 + self.cfg.staleness_cost * (h - 1)), h

        best = min(candidates, key=score)
        why = f"bw {bw:.3g} Mbit/s, latency {lat:.3g} ms, disagreement/step {per_step:.3g}"
        return Decision(best, "keep" if best == report.mode else "switch", why)
