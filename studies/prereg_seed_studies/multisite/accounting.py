"""Types, constants and invariants of the multi-site recovery model (see :mod:`prereg_seed_studies.multisite.recovery`)."""

from __future__ import annotations

import hashlib
from array import array
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import pairwise

from prereg.errors import EXIT_INTERNAL, ToolkitError

POLICIES = ("wait", "restart", "continue", "oracle")
BYTE_CLASSES = (
    "gradient_sync",
    "parameter_broadcast",
    "checkpoint_upload",
    "restore_download",
    "rejoin_transfer",
    "control",
)
EVENT_KINDS = (
    "compute",
    "collective",
    "state_transfer",
    "checkpoint",
    "failure",
    "preemption",
    "restore",
    "replay",
    "rejoin",
)
FRONTIER_VERSION = b"sim.multisite/frontier/v1"
STATE_VERSION = b"sim.multisite/frontier-state/v1"
WORK_FATES = ("retained", "lost", "replayed")
Segment = tuple[int, int, tuple[int, ...]]  # (first step, last step, sites whose micro-batches made each step)


class InvariantError(ToolkitError, AssertionError):
    """A model invariant was violated (a bug, never a property of the inputs): exit ``EXIT_INTERNAL``."""

    exit_code = EXIT_INTERNAL


def frontier_hash(target: int, step_ids: Iterable[int]) -> str:
    """sha256 of the target and the retained step ids in checkpoint-lineage order: *which steps* are durable.

    A complete simulated run retains each of steps 1..target exactly once, so every policy gives the
    same hash for the same target; a lost, duplicated or reordered step changes it.
    """
    h = hashlib.sha256(FRONTIER_VERSION)
    h.update(int(target).to_bytes(8, "little"))
    h.update(array("q", step_ids).tobytes())
    return h.hexdigest()


def merge_segments(segments: Iterable[Segment]) -> list[Segment]:
    """Retained segments in lineage order with contiguous runs of the same sites merged (canonical:
    where a compute batch happened to be split, e.g. at an outage tick, does not matter)."""
    out: list[Segment] = []
    for first, last, sites in segments:
        if out and out[-1][1] + 1 == first and out[-1][2] == sites:
            out[-1] = (out[-1][0], last, sites)
        else:
            out.append((first, last, tuple(sites)))
    return out


def frontier_state_hash(count: str, target: int, segments: Iterable[Segment]) -> str:
    """sha256 of the *state* at the durable frontier, as the model describes it: the target (``count``
    steps or tokens) and, for every retained step in lineage order, the sites whose micro-batches
    made that optimizer step (the retained attempt's, not a lost one's).

    A data-parallel replica's state is a pure function of that sequence (data for step ``s`` and site
    ``i`` is a function of the seed, ``s`` and ``i``; a restore puts the checkpointed state back and a
    replay recomputes the same step), so two runs of one stratum have the same hash exactly when
    their durable states must be equal. Without outages every policy gives the same hash; ``wait``
    always matches the no-outage control (it computes only with every site); ``continue``,
    ``restart`` and ``oracle`` differ once a retained step was made by fewer sites.
    """
    h = hashlib.sha256(STATE_VERSION)
    h.update(count.encode() + b"\0" + int(target).to_bytes(8, "little"))
    for first, last, sites in merge_segments(segments):
        h.update(array("q", [first, last, len(sites), *sites]).tobytes())
    return h.hexdigest()


@dataclass(frozen=True)
class SimConfig:
    """Model settings (ticks, steps, bytes). Outages come separately (see ``prereg_seed_studies.multisite.outages``)."""

    policy: str
    sites: int = 3
    target_steps: int = 1000
    checkpoint_every_steps: int = 100
    checkpoint_ticks: int = 5
    restore_ticks: int = 20
    rejoin_ticks: int = 10
    param_bytes: int = 50_000_000
    gradient_bytes: int = 50_000_000
    buffer_bytes: int = 4_096
    checkpoint_bytes: int = 300_000_000
    rejoin_bytes: int = 300_000_000
    control_bytes: int = 256


@dataclass
class Event:
    """One trace event; times in ticks (converted to ns when written)."""

    kind: str
    site: int | None
    start: int
    end: int
    work: int = 0
    steps: tuple[int, int] | None = None
    checkpoint: int | None = None
    parent: int | None = None
    bytes: dict[str, int] = field(default_factory=dict)
    aborted: bool = False
    fate: str | None = None  # compute / replay events: "retained" or "lost" once known

    def work_fate(self) -> dict[str, int]:
        """Site-steps of this event retained, lost and replayed (zeros for events without work).

        Each compute batch ends wholly retained (a checkpoint covered it) or wholly lost (a rollback
        discarded it), so retained + lost = ``work``; replayed is ``work`` for a replay (re-doing step
        ids attempted before, whatever its own fate) and 0 otherwise. Summed over a run's events
        these are its retained, lost and replayed work exactly."""
        w = self.work
        return {
            "retained": w if self.fate == "retained" else 0,
            "lost": w if self.fate == "lost" else 0,
            "replayed": w if self.kind == "replay" else 0,
        }


@dataclass
class Batch:
    """One compute call's attempt: steps, site-steps, tokens, the segments it would make durable and
    its trace events (which get the batch's fate)."""

    first: int
    last: int
    site_steps: int
    tokens: int
    segments: list[Segment] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)


@dataclass(frozen=True)
class Checkpoint:
    """A durable checkpoint: id, the step it holds, its parent's id, the tick it completed."""

    id: int
    step: int
    parent: int | None
    tick: int


@dataclass
class SimResult:
    """Outcome of one run. Work in site-steps (``*_steps``: step attempts); time in ticks."""

    policy: str
    end_tick: int = 0
    attempted: int = 0
    retained: int = 0
    lost: int = 0
    replayed: int = 0
    attempted_steps: int = 0
    retained_steps: int = 0
    lost_steps: int = 0
    replayed_steps: int = 0
    compute_ticks: int = 0
    checkpoint_ticks: int = 0
    stall_ticks: int = 0
    checkpoints_aborted: int = 0
    state_losses: int = 0
    failures: int = 0
    restores: int = 0
    rejoins: int = 0
    bytes: dict[str, int] = field(default_factory=lambda: dict.fromkeys(BYTE_CLASSES, 0))
    lineage: list[Checkpoint] = field(default_factory=list)
    retained_step_ids: list[int] = field(default_factory=list)
    retained_segments: list[Segment] = field(default_factory=list)  # merged, lineage order
    frontier_sha256: str = ""  # state at the durable frontier (frontier_state_hash)
    frontier_steps_sha256: str = ""  # which steps are durable (frontier_hash)
    up_site_ticks: int = 0  # site-ticks with the site up (not in an outage) over the run
    events: list[Event] = field(default_factory=list)
    # token accounting, for the torch collector (in step mode a site-step is one token)
    attempted_tokens: int = 0
    retained_tokens: int = 0
    lost_tokens: int = 0
    replayed_tokens: int = 0
    checkpoint_bytes_written: int = 0  # bytes of real checkpoint files (0 in the simulator)
    final_step: int = 0  # the durable frontier's step id at the end

    @property
    def wan_bytes(self) -> int:
        """Total inter-site bytes (the sum of the disjoint classes)."""
        return sum(self.bytes.values())


def set_frontier(r: SimResult, count: str, target: int, segments: list[Segment]) -> None:
    """Fill the retained step ids, the merged retained segments and both frontier hashes of ``r``
    from the retained segments in lineage order."""
    for first, last, _ in segments:
        r.retained_step_ids.extend(range(first, last + 1))
    r.retained_segments = merge_segments(segments)
    r.frontier_steps_sha256 = frontier_hash(r.final_step, r.retained_step_ids)
    r.frontier_sha256 = frontier_state_hash(count, target, r.retained_segments)


def check_invariants(r: SimResult, cfg: SimConfig) -> None:
    """Raise :class:`InvariantError` unless the run's accounting is exact."""

    def need(ok: bool, what: str) -> None:
        if not ok:
            raise InvariantError(f"{cfg.policy}: {what}")

    need(r.attempted == r.retained + r.lost, f"attempted {r.attempted} != retained {r.retained} + lost {r.lost}")
    need(r.attempted_steps == r.retained_steps + r.lost_steps, "step attempts != retained + lost")
    need(r.replayed_steps == r.lost_steps, f"replayed steps {r.replayed_steps} != lost steps {r.lost_steps}")
    need(0 <= r.replayed <= r.attempted, "replayed work outside attempted work")
    need(r.retained_step_ids == list(range(1, cfg.target_steps + 1)), "retained steps are not 1..target once each")
    need(r.lineage[-1].step == cfg.target_steps, "durable frontier is not the target")
    for a, b in pairwise(r.lineage):
        need(b.parent == a.id and b.step > a.step and b.tick >= a.tick, f"broken lineage at checkpoint {b.id}")
    need(r.compute_ticks + r.checkpoint_ticks + r.stall_ticks == r.end_tick, "ticks do not add up")
    need(set(r.bytes) == set(BYTE_CLASSES) and all(v >= 0 for v in r.bytes.values()), "bad byte classes")
    by_class = dict.fromkeys(BYTE_CLASSES, 0)
    for e in r.events:
        if e.kind not in EVENT_KINDS or e.start > e.end:
            raise InvariantError(f"{cfg.policy}: bad event {e}")
        for c, v in e.bytes.items():
            by_class[c] += v
    need(all(by_class[c] == r.bytes[c] for c in BYTE_CLASSES if c != "control"), "event bytes != class totals")
    fates = dict.fromkeys(WORK_FATES, 0)
    for e in r.events:
        for k, v in e.work_fate().items():
            fates[k] += v
        need(e.work == 0 or e.fate in ("retained", "lost"), f"work event without a fate: {e}")
    need(
        (fates["retained"], fates["lost"], fates["replayed"]) == (r.retained, r.lost, r.replayed),
        f"event work fates {fates} != retained {r.retained}, lost {r.lost}, replayed {r.replayed}",
    )
    need(r.frontier_steps_sha256 == frontier_hash(cfg.target_steps, r.retained_step_ids), "stale frontier steps hash")
    need(
        r.frontier_sha256 == frontier_state_hash("steps", cfg.target_steps, r.retained_segments),
        "stale frontier state hash",
    )
    need(0 <= r.up_site_ticks <= cfg.sites * r.end_tick, "up site-ticks outside [0, sites x end tick]")
    if cfg.policy == "oracle":
        need(r.lost == 0, "the oracle lost work")
    if cfg.policy in ("wait", "continue"):
        need(r.lost == 0 or r.state_losses > 0, "work lost without a state loss")
