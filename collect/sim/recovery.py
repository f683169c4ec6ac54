"""The multi-site recovery model behind ``sim.multisite``: integer ticks, exact work accounting.

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

from collect.sim.accounting import (
    BYTE_CLASSES,
    EVENT_KINDS,
    POLICIES,
    Checkpoint,
    Event,
    InvariantError,
    SimConfig,
    SimResult,
    check_invariants,
    frontier_hash,
)
from collect.sim.outages import Outage

__all__ = ["BYTE_CLASSES", "EVENT_KINDS", "POLICIES", "InvariantError", "SimConfig", "SimResult",
           "check_invariants", "frontier_hash", "simulate"]
MAX_ITERATIONS = 5_000_000


def _prorate(total: int, elapsed: int, length: int) -> int:
    return total if elapsed >= length else total * elapsed // length


class _Sim:
    def __init__(self, cfg: SimConfig, outages: Sequence[Outage]) -> None:
        if cfg.policy not in POLICIES:
            raise ValueError(f"policy {cfg.policy!r} must be one of {', '.join(POLICIES)}")
        self.cfg, self.outages = cfg, list(outages)
        # (tick, 0 = return / 1 = onset, site, end): returns first at a tick
        tl = [(o.end_tick, 0, o.site, o.end_tick) for o in outages]
        tl += [(o.start_tick, 1, o.site, o.end_tick) for o in outages]
        self.timeline = sorted(tl)
        self.next_ev = 0
        self.now = 0
        self.up = [True] * cfg.sites
        self.members = set(range(cfg.sites))
        self.progress = self.durable = self.high = 0
        self.pending: list[tuple[int, int, int]] = []  # (first step, last step, sites)
        self.needs_restore = False
        self.r = SimResult(cfg.policy)
        self.r.lineage.append(Checkpoint(0, 0, None, 0))  # the initial state, durable by definition
        self.seg_by_ckpt: dict[int, list[tuple[int, int]]] = {0: []}

    # --- outages -------------------------------------------------------------------------------
    def _process_events(self, until: int) -> None:
        """Apply every outage onset/return with tick <= ``until``."""
        tl = self.timeline
        while self.next_ev < len(tl) and tl[self.next_ev][0] <= until:
            tick, onset, site, end = tl[self.next_ev]
            self.next_ev += 1
            if not onset:
                self.up[site] = True
                continue
            if site in self.members and tick < self.now:
                raise InvariantError(f"member failure at tick {tick} missed (now {self.now})")
            self.up[site] = False
            self.r.failures += 1
            self.r.events.append(Event("failure", site, tick, end))
            if site in self.members:
                self._member_failed(site, tick)

    def _member_failed(self, site: int, tick: int) -> None:
        self.members.discard(site)
        if not self.members:  # nobody holds the in-memory state any more
            self.r.state_losses += 1
            self._lose_pending()
            self.needs_restore = True
        elif self.cfg.policy in ("restart", "oracle"):
            for s in sorted(self.members):
                self.r.events.append(Event("preemption", s, tick, tick))
            self._lose_pending()
            self.needs_restore = True

    def _next_event_tick(self) -> int | None:
        return self.timeline[self.next_ev][0] if self.next_ev < len(self.timeline) else None

    def _next_onset(self, sites: set[int]) -> int | None:
        """Earliest onset strictly after now at one of ``sites``."""
        for tick, onset, site, _ in self.timeline[self.next_ev:]:
            if onset and site in sites and tick > self.now:
                return tick
        return None

    # --- work ledger ---------------------------------------------------------------------------
    def _lose_pending(self) -> None:
        for first, last, m in self.pending:
            self.r.lost += (last - first + 1) * m
            self.r.lost_steps += last - first + 1
        self.pending.clear()
        self.progress = self.durable

    def _retain_pending(self, ckpt_id: int) -> None:
        segs = self.seg_by_ckpt.setdefault(ckpt_id, [])
        for first, last, m in self.pending:
            self.r.retained += (last - first + 1) * m
            self.r.retained_steps += last - first + 1
            segs.append((first, last))
        self.pending.clear()

    # --- phases --------------------------------------------------------------------------------
    def _phase(self, length: int, involved: set[int]) -> tuple[int, bool]:
        """Advance up to ``length`` ticks; stop early at a failure of an involved site."""
        f = self._next_onset(involved)
        elapsed = f - self.now if f is not None and f < self.now + length else length
        return elapsed, elapsed == length

    def _checkpoint(self) -> None:
        cfg, r = self.cfg, self.r
        start, parent = self.now, r.lineage[-1].id
        elapsed, done = self._phase(cfg.checkpoint_ticks, set(self.members))
        self.now += elapsed
        r.checkpoint_ticks += elapsed
        nbytes = _prorate(cfg.checkpoint_bytes, elapsed, cfg.checkpoint_ticks)
        r.bytes["checkpoint_upload"] += nbytes
        ckpt = None
        steps = (self.durable + 1, self.progress)
        if done:
            ckpt = len(r.lineage)
            r.lineage.append(Checkpoint(ckpt, self.progress, parent, self.now))
            self._retain_pending(ckpt)
            self.durable = self.progress
        else:
            r.checkpoints_aborted += 1
        r.events.append(Event("checkpoint", min(self.members), start, self.now, steps=steps, checkpoint=ckpt,
                              parent=parent, bytes={"checkpoint_upload": nbytes}, aborted=not done))

    def _restore(self, sites: set[int]) -> None:
        """``sites`` load the last durable checkpoint; members not in ``sites`` idle meanwhile."""
        cfg, r = self.cfg, self.r
        if self.progress != self.durable:
            raise InvariantError("restore with undurable work in memory")
        start, ckpt = self.now, r.lineage[-1].id
        elapsed, done = self._phase(cfg.restore_ticks, self.members | sites)
        self.now += elapsed
        r.stall_ticks += elapsed
        each = _prorate(cfg.checkpoint_bytes, elapsed, cfg.restore_ticks)
        for s in sorted(sites):
            r.bytes["restore_download"] += each
            r.events.append(Event("restore", s, start, self.now, checkpoint=ckpt,
                                  bytes={"restore_download": each}, aborted=not done))
        if done:
            self.members |= sites
            self.needs_restore = False
            r.restores += 1

    def _rejoin(self, joiners: set[int]) -> None:
        """Live state transfer from a member to each joiner (wait, continue)."""
        cfg, r = self.cfg, self.r
        start = self.now
        elapsed, done = self._phase(cfg.rejoin_ticks, self.members | joiners)
        self.now += elapsed
        r.stall_ticks += elapsed
        each = _prorate(cfg.rejoin_bytes, elapsed, cfg.rejoin_ticks)
        for s in sorted(joiners):
            r.bytes["rejoin_transfer"] += each
            r.events.append(Event("state_transfer", s, start, self.now, parent=r.lineage[-1].id,
                                  bytes={"rejoin_transfer": each}, aborted=not done))
            r.events.append(Event("rejoin", s, start, self.now, aborted=not done))
        if done:
            self.members |= joiners
            r.rejoins += len(joiners)

    def _compute(self, n: int) -> None:
        cfg, r = self.cfg, self.r
        m, first, last = len(self.members), self.progress + 1, self.progress + n
        replay = first <= self.high
        kind = "replay" if replay else "compute"
        parent = r.lineage[-1].id
        for s in sorted(self.members):
            r.events.append(Event(kind, s, self.now, self.now + n, work=n, steps=(first, last), parent=parent))
        grad, buf = 2 * (m - 1) * cfg.gradient_bytes * n, (m - 1) * cfg.buffer_bytes * n
        r.bytes["gradient_sync"] += grad
        r.bytes["parameter_broadcast"] += buf
        r.events.append(Event("collective", None, self.now, self.now + n, steps=(first, last),
                              bytes={"gradient_sync": grad, "parameter_broadcast": buf}))
        self.pending.append((first, last, m))
        r.attempted += n * m
        r.attempted_steps += n
        if replay:
            r.replayed += n * m
            r.replayed_steps += n
        self.high = max(self.high, last)
        self.progress = last
        self.now += n
        r.compute_ticks += n

    def _idle(self) -> None:
        nxt = self._next_event_tick()
        if nxt is None or nxt <= self.now:
            raise InvariantError(f"policy {self.cfg.policy} stalled at tick {self.now} with nothing to wait for")
        self.r.stall_ticks += nxt - self.now
        self.now = nxt

    # --- the policy ----------------------------------------------------------------------------
    def _step(self) -> None:
        cfg, pol = self.cfg, self.cfg.policy
        returners = {s for s in range(cfg.sites) if self.up[s] and s not in self.members}
        if not self.members:
            return self._restore(returners) if returners else self._idle()
        if self.needs_restore:
            return self._restore(self.members | returners)
        if returners:
            if pol in ("wait", "continue"):
                return self._rejoin(returners)
            if self.progress == self.durable:
                return self._restore(returners)
        k, target = cfg.checkpoint_every_steps, cfg.target_steps
        if self.progress > self.durable and (self.progress % k == 0 or self.progress == target):
            return self._checkpoint()
        limits = [k - self.progress % k, target - self.progress]
        if pol == "oracle":
            f = self._next_onset(self.members)
            if f is not None:
                # compute ticks that leave time for a checkpoint to start before f and end by f
                room = f - max(cfg.checkpoint_ticks, 1) - self.now
                if room < 1 and self.progress > self.durable:
                    return self._checkpoint()
                limits.append(room)
        if pol == "wait" and len(self.members) < cfg.sites:
            return self._idle()
        nxt = self._next_event_tick()
        if nxt is not None:
            limits.append(nxt - self.now)
        if self.progress < self.high:
            limits.append(self.high - self.progress)
        n = min(limits)
        return self._compute(n) if n >= 1 else self._idle()

    def run(self) -> SimResult:
        cfg, r = self.cfg, self.r
        init = (cfg.sites - 1) * cfg.param_bytes
        r.bytes["parameter_broadcast"] += init
        r.events.append(Event("collective", None, 0, 0, bytes={"parameter_broadcast": init}))
        for _ in range(MAX_ITERATIONS):
            if self.durable >= cfg.target_steps:
                break
            self._process_events(self.now)
            self._step()
        else:
            raise InvariantError("no completion within the iteration limit")
        r.end_tick = self.now
        self._process_events(self.now - 1)  # count outages that began before the end
        down = sum(max(0, min(o.end_tick, self.now) - o.start_tick) for o in self.outages if o.start_tick < self.now)
        r.bytes["control"] += cfg.control_bytes * (cfg.sites * self.now - down)
        steps: list[int] = []
        for c in r.lineage:  # the lineage is a chain: each checkpoint's parent is the one before it
            for first, last in self.seg_by_ckpt.get(c.id, []):
                steps.extend(range(first, last + 1))
        r.retained_step_ids = steps
        r.frontier_sha256 = frontier_hash(cfg.target_steps, steps)
        r.events.sort(key=lambda e: e.start)  # stable: emission order within a tick
        check_invariants(r, cfg)
        return r


def simulate(cfg: SimConfig, outages: Sequence[Outage]) -> SimResult:
    """Run one policy against an outage schedule; invariants are checked before returning."""
    return _Sim(cfg, outages).run()

