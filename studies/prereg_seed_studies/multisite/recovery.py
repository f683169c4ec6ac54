"""The multi-site recovery model behind ``sim.multisite``: integer ticks, exact work accounting.

Model, rules and assumptions: docs/seed-studies.md (prereg_seed_studies.multisite.recovery).
"""

from __future__ import annotations

from collections.abc import Sequence

from prereg_seed_studies.multisite.accounting import (
    BYTE_CLASSES,
    EVENT_KINDS,
    POLICIES,
    InvariantError,
    SimConfig,
    SimResult,
    check_invariants,
    frontier_hash,
    frontier_state_hash,
)
from prereg_seed_studies.multisite.harness import Harness
from prereg_seed_studies.multisite.outages import Outage

__all__ = [
    "BYTE_CLASSES",
    "EVENT_KINDS",
    "POLICIES",
    "InvariantError",
    "SimConfig",
    "SimResult",
    "check_invariants",
    "frontier_hash",
    "frontier_state_hash",
    "simulate",
]


class NullWorker:
    """The simulator's worker: decisions only, no real work (checkpoint size from the config)."""

    def step(self, step_id: int, sites: Sequence[int]) -> None:
        """Nothing to compute."""

    def save(self, ckpt_id: int, step_id: int, tokens: int) -> int:
        """Nothing written: 0 bytes, so the configured ``checkpoint_bytes`` is charged."""
        return 0

    def load(self, ckpt_id: int) -> None:
        """Nothing to restore."""


def simulate(cfg: SimConfig, outages: Sequence[Outage]) -> SimResult:
    """Run one policy against an outage schedule; invariants are checked before returning."""
    r = Harness(cfg, outages, NullWorker(), target=cfg.target_steps, count="steps").run()
    check_invariants(r, cfg)
    return r
