"""The failure harness: the one implementation of the multi-site policy rules (no torch here).

Model, rules and assumptions: docs/seed-studies.md (prereg_seed_studies.multisite.harness).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from itertools import pairwise
from typing import Protocol

from prereg_seed_studies.multisite.accounting import (
    POLICIES,
    Batch,
    Checkpoint,
    Event,
    InvariantError,
    Segment,
    SimConfig,
    SimResult,
    set_frontier,
)
from prereg_seed_studies.multisite.outages import Outage

MAX_ITERATIONS = 5_000_000


class Worker(Protocol):
    """The real work behind the harness's decisions."""

    def step(self, step_id: int, sites: Sequence[int]) -> None:
        """One synchronous optimizer step: gradients of ``sites``' micro-batches for ``step_id``, averaged."""

    def save(self, ckpt_id: int, step_id: int, tokens: int) -> int:
        """Write a durable checkpoint of the current state; returns its size in bytes."""

    def load(self, ckpt_id: int) -> None:
        """Replace the in-memory state by the last durable checkpoint (``ckpt_id``)."""


PhaseHook = Callable[[str, int], AbstractContextManager[object]]


def _no_phase(name: str, ticks: int) -> AbstractContextManager[object]:
    return nullcontext()


def _prorate(total: int, elapsed: int, length: int) -> int:
    return total if elapsed >= length else total * elapsed // length


class Harness:
    """Run one policy against an outage schedule, driving ``worker``; see the module doc.

    ``cfg`` holds the simulator's settings (its ``target_steps`` is ignored: the target is
    ``target`` in tokens, or in steps with ``count="steps"``). ``phase(name, ticks)`` wraps every
    phase (compute, replay, checkpoint, restore, stall) so the caller can mark telemetry and let
    modeled time pass.
    """

    def __init__(
        self,
        cfg: SimConfig,
        outages: Sequence[Outage],
        worker: Worker,
        target: int,
        site_tokens: int = 1,
        count: str = "tokens",
        phase: PhaseHook = _no_phase,
    ) -> None:
        if cfg.policy not in POLICIES:
            raise ValueError(f"policy {cfg.policy!r} must be one of {', '.join(POLICIES)}")
        if count not in ("tokens", "steps"):
            raise ValueError("count must be 'tokens' or 'steps'")
        if target < 1 or site_tokens < 1 or (count == "tokens" and target % site_tokens):
            raise ValueError("target must be a positive multiple of site_tokens")
        self.cfg, self.outages, self.w, self.phase = cfg, list(outages), worker, phase
        self.target, self.site_tokens, self.count = target, site_tokens, count
        tl = [(o.end_tick, 0, o.site, o.end_tick) for o in outages]
        tl += [(o.start_tick, 1, o.site, o.end_tick) for o in outages]
        self.timeline = sorted(tl)
        self.next_ev = 0
        self.now = 0
        self.up = [True] * cfg.sites
        self.members = set(range(cfg.sites))
        self.progress = self.durable = self.high = 0  # step ids
        self.work = self.durable_work = 0  # target units (tokens or steps) in memory / durable
        self.pending: list[Batch] = []  # compute batches not yet durable
        self.seg_by_ckpt: dict[int, list[Segment]] = {0: []}  # steps (and their sites) each checkpoint made durable
        self.needs_restore = False
        self.ckpt_size = 0
        self.r = SimResult(cfg.policy)
        self.r.lineage.append(Checkpoint(0, 0, None, 0))

    # --- outages (as prereg_seed_studies.multisite.recovery) -------------------------------------------------------
    def _process_events(self, until: int) -> None:
        tl = self.timeline
        while self.next_ev < len(tl) and tl[self.next_ev][0] <= until:
            tick, onset, site, end = tl[self.next_ev]
            self.next_ev += 1
            if not onset:
                self.up[site] = True
                continue
            self.up[site] = False
            self.r.failures += 1
            self.r.events.append(Event("failure", site, tick, end))
            if site in self.members:
                self._member_failed(site, tick)

    def _member_failed(self, site: int, tick: int) -> None:
        self.members.discard(site)
        if not self.members:
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
        for tick, onset, site, _ in self.timeline[self.next_ev :]:
            if onset and site in sites and tick > self.now:
                return tick
        return None

    # --- work ledger -----------------------------------------------------------------------------
    def _lose_pending(self) -> None:
        r = self.r
        for b in self.pending:
            r.lost += b.site_steps
            r.lost_tokens += b.tokens
            r.lost_steps += b.last - b.first + 1
            for e in b.events:
                e.fate = "lost"
        self.pending.clear()
        self.progress, self.work = self.durable, self.durable_work

    def _retain_pending(self, ckpt_id: int) -> None:
        r = self.r
        segments = self.seg_by_ckpt.setdefault(ckpt_id, [])
        for b in self.pending:
            r.retained += b.site_steps
            r.retained_tokens += b.tokens
            r.retained_steps += b.last - b.first + 1
            segments.extend(b.segments)
            for e in b.events:
                e.fate = "retained"
        self.pending.clear()

    # --- phases ----------------------------------------------------------------------------------
    def _span(self, length: int, involved: set[int]) -> tuple[int, bool]:
        f = self._next_onset(involved)
        elapsed = f - self.now if f is not None and f < self.now + length else length
        return elapsed, elapsed == length

    def _checkpoint(self) -> None:
        cfg, r = self.cfg, self.r
        start, parent = self.now, r.lineage[-1].id
        elapsed, done = self._span(cfg.checkpoint_ticks, set(self.members))
        ckpt = len(r.lineage) if done else None
        with self.phase("checkpoint", elapsed):
            if done:  # an aborted checkpoint never becomes durable: nothing is renamed into place
                self.ckpt_size = self.w.save(len(r.lineage), self.progress, self.work)
                r.checkpoint_bytes_written += self.ckpt_size
        self.now += elapsed
        r.checkpoint_ticks += elapsed
        nbytes = _prorate(self.ckpt_size or cfg.checkpoint_bytes, elapsed, cfg.checkpoint_ticks)
        r.bytes["checkpoint_upload"] += nbytes
        steps = (self.durable + 1, self.progress)
        if done:
            r.lineage.append(Checkpoint(ckpt, self.progress, parent, self.now))  # type: ignore[arg-type]
            self._retain_pending(ckpt)  # type: ignore[arg-type]
            self.durable, self.durable_work = self.progress, self.work
        else:
            r.checkpoints_aborted += 1
        r.events.append(
            Event(
                "checkpoint",
                min(self.members),
                start,
                self.now,
                steps=steps,
                checkpoint=ckpt,
                parent=parent,
                bytes={"checkpoint_upload": nbytes},
                aborted=not done,
            )
        )

    def _restore(self, sites: set[int]) -> None:
        cfg, r = self.cfg, self.r
        if self.progress != self.durable:
            raise InvariantError("restore with undurable work in memory")
        start, ckpt = self.now, r.lineage[-1].id
        elapsed, done = self._span(cfg.restore_ticks, self.members | sites)
        with self.phase("restore", elapsed):
            if done:
                self.w.load(ckpt)
        self.now += elapsed
        r.stall_ticks += elapsed
        each = _prorate(self.ckpt_size or cfg.checkpoint_bytes, elapsed, cfg.restore_ticks)
        for s in sorted(sites):
            r.bytes["restore_download"] += each
            r.events.append(
                Event(
                    "restore", s, start, self.now, checkpoint=ckpt, bytes={"restore_download": each}, aborted=not done
                )
            )
        if done:
            self.members |= sites
            self.needs_restore = False
            r.restores += 1

    def _rejoin(self, joiners: set[int]) -> None:
        """Live state transfer to each joiner: every replica holds the one in-memory state here."""
        cfg, r = self.cfg, self.r
        start = self.now
        elapsed, done = self._span(cfg.rejoin_ticks, self.members | joiners)
        with self.phase("stall", elapsed):
            pass
        self.now += elapsed
        r.stall_ticks += elapsed
        each = _prorate(cfg.rejoin_bytes, elapsed, cfg.rejoin_ticks)
        for s in sorted(joiners):
            r.bytes["rejoin_transfer"] += each
            r.events.append(
                Event(
                    "state_transfer",
                    s,
                    start,
                    self.now,
                    parent=r.lineage[-1].id,
                    bytes={"rejoin_transfer": each},
                    aborted=not done,
                )
            )
            r.events.append(Event("rejoin", s, start, self.now, aborted=not done))
        if done:
            self.members |= joiners
            r.rejoins += len(joiners)

    def _step_units(self, m: int) -> tuple[int, int]:
        """(sites used, target units) of the next step with ``m`` members."""
        if self.count == "steps":
            return m, 1
        need = -(-(self.target - self.work) // self.site_tokens)  # site micro-batches still needed
        used = min(m, need)
        return used, used * self.site_tokens

    def _steps_to_target(self, m: int) -> int:
        if self.count == "steps":
            return self.target - self.work
        return -(-(self.target - self.work) // (m * self.site_tokens))

    def _compute(self, n: int) -> None:
        cfg, r = self.cfg, self.r
        members = sorted(self.members)
        m, first, last = len(members), self.progress + 1, self.progress + n
        replay = first <= self.high
        kind = "replay" if replay else "compute"
        parent = r.lineage[-1].id
        site_steps = tokens = 0
        used_last = m
        with self.phase(kind, n):
            for s in range(first, last + 1):
                used, units = self._step_units(m)
                self.w.step(s, members[:used])
                site_steps += used
                tokens += units if self.count == "tokens" else used * self.site_tokens
                self.work += units
                used_last = used
        batch = Batch(first, last, site_steps, tokens)
        full = tuple(members)
        if used_last < m:  # token mode: the last step used only the sites needed to land on the target
            batch.segments = [(first, last - 1, full)] if n > 1 else []
            batch.segments.append((last, last, full[:used_last]))
        else:
            batch.segments = [(first, last, full)]
        for s in members:
            work = n if s in members[:used_last] else n - 1
            if work:
                ev = Event(kind, s, self.now, self.now + n, work=work, steps=(first, last), parent=parent)
                batch.events.append(ev)
                r.events.append(ev)
        grad, buf = 2 * (m - 1) * cfg.gradient_bytes * n, (m - 1) * cfg.buffer_bytes * n
        r.bytes["gradient_sync"] += grad
        r.bytes["parameter_broadcast"] += buf
        r.events.append(
            Event(
                "collective",
                None,
                self.now,
                self.now + n,
                steps=(first, last),
                bytes={"gradient_sync": grad, "parameter_broadcast": buf},
            )
        )
        self.pending.append(batch)
        r.attempted += site_steps
        r.attempted_tokens += tokens
        r.attempted_steps += n
        if replay:
            r.replayed += site_steps
            r.replayed_tokens += tokens
            r.replayed_steps += n
        self.high = max(self.high, last)
        self.progress = last
        self.now += n
        r.compute_ticks += n

    def _idle(self) -> None:
        nxt = self._next_event_tick()
        if nxt is None or nxt <= self.now:
            raise InvariantError(f"policy {self.cfg.policy} stalled at tick {self.now} with nothing to wait for")
        with self.phase("stall", nxt - self.now):
            pass
        self.r.stall_ticks += nxt - self.now
        self.now = nxt

    # --- the policy (as prereg_seed_studies.multisite.recovery._Sim._step) -----------------------------------------
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
        k = cfg.checkpoint_every_steps
        if self.progress > self.durable and (self.progress % k == 0 or self.work >= self.target):
            return self._checkpoint()
        limits = [k - self.progress % k, self._steps_to_target(len(self.members))]
        if pol == "oracle":
            f = self._next_onset(self.members)
            if f is not None:
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
        """Run to the target, check the accounting, return the result."""
        cfg, r = self.cfg, self.r
        init = (cfg.sites - 1) * cfg.param_bytes
        r.bytes["parameter_broadcast"] += init
        r.events.append(Event("collective", None, 0, 0, bytes={"parameter_broadcast": init}))
        for _ in range(MAX_ITERATIONS):
            if self.durable_work >= self.target:
                break
            self._process_events(self.now)
            self._step()
        else:
            raise InvariantError("no completion within the iteration limit")
        r.end_tick = self.now
        r.final_step = self.durable
        self._process_events(self.now - 1)
        down = sum(max(0, min(o.end_tick, self.now) - o.start_tick) for o in self.outages if o.start_tick < self.now)
        r.up_site_ticks = cfg.sites * self.now - down
        r.bytes["control"] += cfg.control_bytes * r.up_site_ticks
        r.events.sort(key=lambda e: e.start)  # stable: emission order within a tick
        # the lineage is a chain: each checkpoint's parent is the one before it
        set_frontier(r, self.count, self.target, [g for c in r.lineage for g in self.seg_by_ckpt.get(c.id, [])])
        self._check()
        return r

    def _check(self) -> None:
        r = self.r

        def need(ok: bool, what: str) -> None:
            if not ok:
                raise InvariantError(f"{r.policy}: {what}")

        need(r.attempted_tokens == r.retained_tokens + r.lost_tokens, "attempted tokens != retained + lost")
        need(r.attempted == r.retained + r.lost, "site-steps do not add up")
        need(r.attempted_steps == r.retained_steps + r.lost_steps, "step attempts != retained + lost")
        need(r.replayed_steps == r.lost_steps, "replayed steps != lost steps")
        need(r.retained_steps == r.final_step == r.lineage[-1].step, "durable frontier != retained steps")
        need(self.durable_work == self.target, f"durable work {self.durable_work} != target {self.target}")
        if self.count == "tokens":
            need(r.retained_tokens == self.target, "retained tokens != target")
        need(r.compute_ticks + r.checkpoint_ticks + r.stall_ticks == r.end_tick, "ticks do not add up")
        for a, b in pairwise(r.lineage):
            need(b.parent == a.id and b.step > a.step, f"broken lineage at checkpoint {b.id}")
        if r.policy == "oracle":
            need(r.lost_tokens == 0, "the oracle lost work")
        if r.policy in ("wait", "continue"):
            need(r.lost_tokens == 0 or r.state_losses > 0, "work lost without a state loss")
