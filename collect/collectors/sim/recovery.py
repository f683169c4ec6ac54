"""The multi-site recovery model behind ``sim.multisite``: integer ticks, exact work accounting.

The rules below are implemented once, in :mod:`collect.collectors.sim.harness`; :func:`simulate` runs that
harness in step mode with a worker that does nothing (``torch.multisite`` runs the same harness
with a real trainer), then checks the invariants and the frontier hash.

One tick is the time of one synchronous data-parallel step. The job holds a set of *member* sites
(replicas with the current state); a step computed by m members is m *site-steps* of work and
advances the in-memory frontier ``progress`` by one step id, whatever m is (survivors keep their
per-replica batch, so the global batch shrinks: the "learns a little differently" of continuing).
A checkpoint snapshots ``progress`` and becomes durable only when it completes; the run ends when
the durable frontier reaches ``target_steps`` (a final checkpoint is written at the target).

Work accounting (every compute tick appends an *attempt* of one step id by m sites):

* attempted = every site-step computed; retained = site-steps of attempts covered by a completed
  checkpoint; lost = site-steps of attempts discarded by a rollback to the last durable checkpoint.
  Each attempt ends retained or lost, never both: attempted = retained + lost, exactly.
* replayed = site-steps of attempts of a step id that had been attempted before (re-doing lost
  work); it is part of attempted, counted once. Each step id ends with exactly one retained
  attempt, so the number of replayed step attempts equals the number of lost ones.
* each compute batch is wholly retained or wholly lost; its trace events carry that fate
  (``work_fate``), so the events' retained / lost / replayed site-steps sum to the run's totals.

The durable frontier: every policy makes steps 1..target durable (``frontier_steps_sha256``,
equal across policies); the *state* there (``frontier_sha256``) is described by each retained step
and the sites whose micro-batches made it, so it is equal across policies without outages and
``wait``'s equals the control's, while ``continue``, ``restart`` and ``oracle`` reach a different
state once a retained step ran on fewer sites (see :func:`collect.collectors.sim.accounting.frontier_state_hash`).

Outages, phases and policies (a failure at tick t hits between steps; phases are atomic and a
member failure inside one aborts it at that tick, prorating its bytes):

* ``wait``: compute only with all sites; survivors keep their state; a returning site gets a
  rejoin state transfer from a member (``rejoin_ticks``).
* ``restart``: a member failure tears the job down: pending work is lost, the survivors and every
  up non-member restore the last durable checkpoint (``restore_ticks``) and replay. A site that
  returns later joins at the next durable boundary (right after a checkpoint or restart), by
  restoring the checkpoint (``restore_ticks``, the others idle); until then the job runs without it.
* ``continue``: survivors carry on; a returning site rejoins at once with a state transfer.
* ``oracle``: ``restart`` with perfect foresight -- it stops computing in time to complete a
  checkpoint just before each member failure (idling when it cannot), so it never loses work; a
  yardstick for restart's lost work, never deployable.
* every policy: if no member is left (all sites down together, or the last member fails before a
  returning site has received the state) the in-memory state is gone (a *state loss*): pending work
  is lost and the first sites to return restore the last durable checkpoint. Only then can wait
  and continue lose work. Onsets and returns at tick t are applied before any phase starting at t;
  a site that is up but not yet a member can fail without touching the job.

Time: end tick = compute + checkpoint ticks (aborted ones included) + stall ticks, where stall is
restore, rejoin (the whole job pauses) and idle ticks (waiting for sites, or the oracle holding
off work it could not checkpoint before a failure). Checkpoints are written by the lowest member.

Inter-site bytes fall into :data:`BYTE_CLASSES`: gradient_sync ``2 (m - 1) gradient_bytes`` per
step (ring all-reduce), parameter_broadcast (parameters from site 0 at start, ``(S - 1)
param_bytes``, and buffers ``(m - 1) buffer_bytes`` per step), checkpoint_upload (``checkpoint_bytes``
per checkpoint), restore_download (``checkpoint_bytes`` per restoring site), rejoin_transfer
(``rejoin_bytes`` per joining site), control (``control_bytes`` per up site per tick: heartbeats).
"""

from __future__ import annotations

from collections.abc import Sequence

from collect.collectors.sim.accounting import (
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
from collect.collectors.sim.harness import Harness
from collect.collectors.sim.outages import Outage

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
