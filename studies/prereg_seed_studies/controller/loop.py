"""The cycle loop: the one implementation of the consistency modes under stress (no torch here).

Model, rules and assumptions: docs/seed-studies.md (prereg_seed_studies.controller.loop).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from prereg_seed_studies.controller.policy import CycleReport, Decision, allreduce_bytes, allreduce_ms, parse_mode
from prereg_seed_studies.controller.stress import Stress
from prereg_seed_studies.multisite.accounting import InvariantError

TRAFFIC = ("gradient_sync", "parameter_sync", "rejoin_transfer", "control")
MAX_CYCLES = 1_000_000


class Worker(Protocol):
    """The learning behind the loop's decisions (torch replicas, or a prior model)."""

    def sync_step(self, units: Sequence[tuple[int, int]]) -> None:
        """One synchronous step of the shared (consensus) state on the averaged gradients of the
        ``(site, k)`` data units."""

    def fork(self, site: int) -> None:
        """Give ``site`` its own replica: a copy of the consensus (model and optimizer state)."""

    def local_step(self, site: int, k: int) -> None:
        """One local step of ``site``'s replica on data unit ``(k, site)``."""

    def merge(self, sites: Sequence[int], include_consensus: bool) -> float:
        """Consensus := the mean of the sites' replicas (and of the consensus); the replicas are
        dropped. Returns the disagreement before averaging (mean relative parameter distance)."""

    def drop(self, site: int) -> None:
        """Discard ``site``'s replica (its pending work is lost)."""

    def nll(self) -> float:
        """Held-out NLL of the consensus, nats/token."""


class Policy(Protocol):
    def start(self) -> Decision: ...

    def decide(self, report: CycleReport) -> Decision: ...


@dataclass(frozen=True)
class FixedPolicy:
    mode: str

    def start(self) -> Decision:
        return Decision(self.mode, "fixed", "fixed policy")

    def decide(self, report: CycleReport) -> Decision:
        return Decision(self.mode, "fixed", "fixed policy")


@dataclass(frozen=True)
class LoopConfig:
    sites: int
    micro_batch: int
    target_units: int
    step_ms: float
    sync_cycle_steps: int
    grad_bytes: int
    param_bytes: int
    state_bytes: int
    control_bytes: int
    max_update_age_steps: int
    site_idle_w: float = 0.0
    site_compute_w: float = 0.0
    transfer_j_per_byte: float = 0.0


@dataclass
class LoopResult:
    rows: list[dict[str, Any]]
    end_ms: float
    useful_units: int
    attempted_units: int
    replayed_units: int
    computed_units: int
    wan_bytes: dict[str, int]
    wan_ms: dict[str, float]
    stall_ms: float
    energy_j: float
    abstentions: int
    switches: int
    mode_cycles: dict[str, int] = field(default_factory=dict)


def run_cycles(cfg: LoopConfig, stress: Stress, worker: Worker, policy: Policy, nll_evidence: str) -> LoopResult:
    """Train to ``cfg.target_units`` committed micro-batches under ``stress``; see the module doc."""
    n, mb = cfg.sites, cfg.micro_batch
    cursor, pending, fork_at = [0] * n, [0] * n, [0] * n
    state = ["sync"] * n
    now = stall = energy = 0.0
    tot = {"useful": 0, "attempted": 0, "replayed": 0, "computed": 0}
    wan_b = dict.fromkeys(TRAFFIC, 0)
    wan_t = dict.fromkeys(TRAFFIC, 0.0)
    decision = policy.start()
    init = Decision(decision.mode, "init", "initial state (commit 0: the lineage root)")
    rows: list[dict[str, Any]] = [
        _row(
            0,
            None,
            0.0,
            0.0,
            0,
            0,
            init,
            "init",
            [],
            list(range(n)),
            list(range(n)),
            0,
            0,
            0.0,
            dict.fromkeys(["useful", "attempted", "replayed", "computed"], 0),
            tot,
            dict.fromkeys(TRAFFIC, 0),
            dict.fromkeys(TRAFFIC, 0.0),
            0.0,
            worker.nll(),
            mb,
            nll_evidence,
            decision,
        )
    ]
    logical = switches = 0
    abstentions = int(decision.action == "abstain")
    mode_cycles: dict[str, int] = {}
    prev_mode = decision.mode
    for _ in range(MAX_CYCLES):
        if tot["useful"] >= cfg.target_units:
            break
        cyc = dict.fromkeys(["useful", "attempted", "replayed", "computed"], 0)
        cb, ct = dict.fromkeys(TRAFFIC, 0), dict.fromkeys(TRAFFIC, 0.0)
        start, c0 = now, stress.at(now)

        def discard(i: int) -> None:
            cyc["attempted"] += pending[i]  # noqa: B023 - called within this iteration
            cyc["replayed"] += pending[i]  # noqa: B023 - called within this iteration
            if state[i] == "diverged":
                worker.drop(i)
            pending[i], state[i] = 0, "lost"

        def transfer(cls: str, nbytes: int, ms: float) -> None:
            cb[cls] += nbytes  # noqa: B023 - called within this iteration
            ct[cls] += ms  # noqa: B023 - called within this iteration

        for i in range(n):  # failures found at the cycle's start
            if not c0.up[i] and state[i] != "lost":
                discard(i)
        rejoin_ms = 0.0
        for i in range(n):
            if c0.up[i] and c0.reachable[i] and state[i] == "lost":
                ms = c0.latency_ms + cfg.state_bytes * 8 / (c0.bandwidth_mbps * 1e3)
                transfer("rejoin_transfer", cfg.state_bytes, ms)
                rejoin_ms = max(rejoin_ms, ms)  # rejoins run in parallel
                state[i], fork_at[i] = "sync", len(rows) - 1
        mode, h = decision.mode, parse_mode(decision.mode)
        t = now + rejoin_ms
        remaining = cfg.target_units - tot["useful"] - sum(pending)
        compute_site_ms, steps, age, dis = 0.0, 0, 0, 0.0
        obs_bw: list[float] = []
        obs_lat: list[float] = []
        if h == 1:
            for _j in range(cfg.sync_cycle_steps):
                c = stress.at(t)
                for i in range(n):
                    if state[i] == "sync" and not (c.up[i] and c.reachable[i]):
                        state[i] = "lost"  # left behind: needs the consensus again
                members = [i for i in range(n) if state[i] == "sync"]
                take = members[: max(0, remaining)]
                if not take:
                    break
                worker.sync_step([(i, cursor[i]) for i in take])
                for i in take:
                    cursor[i] += 1
                cyc["useful"] += len(take)
                cyc["attempted"] += len(take)
                cyc["computed"] += len(take)
                remaining -= len(take)
                step_ms = cfg.step_ms * max(c.slow[i] for i in take)
                compute_site_ms += sum(cfg.step_ms * c.slow[i] for i in take)
                comm = allreduce_ms(cfg.grad_bytes, len(take), c.bandwidth_mbps, c.latency_ms)
                transfer("gradient_sync", allreduce_bytes(cfg.grad_bytes, len(take)), comm)
                if len(take) > 1:
                    obs_bw.append(c.bandwidth_mbps)
                    obs_lat.append(c.latency_ms)
                t += step_ms + comm
                steps += 1
            logical += steps
            c = stress.at(t)
            stale = [i for i in range(n) if state[i] == "diverged" and c.up[i] and c.reachable[i]]
            merge = [i for i in stale if pending[i] <= cfg.max_update_age_steps]
            for i in stale:
                if i not in merge:
                    discard(i)
            active = sorted({*merge, *(i for i in range(n) if state[i] == "sync")})
            if merge:
                comm = allreduce_ms(cfg.param_bytes, len(active), c.bandwidth_mbps, c.latency_ms)
                transfer("parameter_sync", allreduce_bytes(cfg.param_bytes, len(active)), comm)
                t += comm
        else:
            workers = [i for i in range(n) if c0.up[i] and state[i] in ("sync", "diverged")]
            alloc = dict.fromkeys(workers, 0)
            for i in sorted(workers, key=lambda i: (not c0.reachable[i], i)):  # reachable sites first
                cap = h if c0.reachable[i] else min(h, cfg.max_update_age_steps - pending[i])
                alloc[i] = max(0, min(cap, remaining))
                remaining -= alloc[i]
            ends = {}
            for i in workers:
                if alloc[i] and state[i] == "sync":
                    worker.fork(i)
                    state[i], fork_at[i] = "diverged", len(rows) - 1
                for _s in range(alloc[i]):
                    worker.local_step(i, cursor[i] + pending[i])
                    pending[i] += 1
                ends[i] = t + alloc[i] * cfg.step_ms * c0.slow[i]
                compute_site_ms += alloc[i] * cfg.step_ms * c0.slow[i]
                cyc["computed"] += alloc[i]
            steps = max(alloc.values(), default=0)
            logical += steps
            t_sync = max((ends[i] for i in workers if c0.reachable[i]), default=t)
            for i in workers:
                if stress.down_during(i, t, t_sync):
                    discard(i)
            c = stress.at(t_sync)
            active = [i for i in range(n) if state[i] in ("sync", "diverged") and c.up[i] and c.reachable[i]]
            for i in active:
                if pending[i] > cfg.max_update_age_steps:
                    discard(i)
            active = [i for i in active if state[i] != "lost"]
            merge = [i for i in active if state[i] == "diverged" and pending[i] > 0]
            comm = allreduce_ms(cfg.param_bytes, len(active), c.bandwidth_mbps, c.latency_ms) if merge else 0.0
            if merge:
                transfer("parameter_sync", allreduce_bytes(cfg.param_bytes, len(active)), comm)
                if len(active) > 1:
                    obs_bw.append(c.bandwidth_mbps)
                    obs_lat.append(c.latency_ms)
            t = t_sync + comm
        if merge:
            include = h == 1 or all(fork_at[i] != len(rows) - 1 for i in merge)
            dis = worker.merge(merge, include_consensus=include)
            age = max(pending[i] for i in merge)
            for i in merge:
                cyc["useful"] += pending[i]
                cyc["attempted"] += pending[i]
                cursor[i] += pending[i]
                pending[i], state[i] = 0, "sync"
        if steps == 0 and not merge:  # nothing could work: wait for the infrastructure to change
            nxt = stress.next_change(now)
            if nxt is None:
                raise InvariantError(f"no site can make progress after {now:.0f} ms and nothing changes any more")
            energy += cfg.site_idle_w * sum(c0.up) * (nxt - now) / 1e3
            stall += nxt - now
            now = nxt
            continue
        c = stress.at(t)
        reach = [i for i in range(n) if c.up[i] and c.reachable[i]]
        transfer("control", cfg.control_bytes * len(reach), c.latency_ms)
        t += c.latency_ms
        for k in TRAFFIC:
            wan_b[k] += cb[k]
            wan_t[k] += ct[k]
        energy += (cfg.site_idle_w * sum(c0.up) * (t - start) + cfg.site_compute_w * compute_site_ms) / 1e3
        energy += cfg.transfer_j_per_byte * sum(cb.values())
        for k in tot:
            tot[k] += cyc[k]
        now = t
        mode_cycles[mode] = mode_cycles.get(mode, 0) + 1
        switches += mode != prev_mode
        prev_mode = mode
        nll = worker.nll()
        members = sorted(active)
        report = CycleReport(
            len(rows),
            mode,
            steps,
            compute_site_ms / max(1, cyc["computed"]),
            obs_bw[-1] if obs_bw else None,
            obs_lat[-1] if obs_lat else None,
            tuple(members),
            age,
            dis,
        )
        done = tot["useful"] >= cfg.target_units
        queued = decision if done else policy.decide(report)  # the next cycle's mode
        rows.append(
            _row(
                len(rows),
                len(rows) - 1,
                start,
                t,
                logical,
                steps,
                decision,
                mode,
                members,
                [i for i in range(n) if c.up[i]],
                reach,
                age,
                len(rows) - 1 - min((fork_at[i] for i in merge), default=len(rows) - 1),
                dis,
                cyc,
                tot,
                cb,
                ct,
                stall,
                nll,
                mb,
                nll_evidence,
                None if done else queued,
            )
        )
        stall = 0.0
        if not done:
            abstentions += queued.action == "abstain"
            decision = queued
    else:
        raise InvariantError(f"no completion within {MAX_CYCLES} cycles")
    result = LoopResult(
        rows,
        now,
        tot["useful"],
        tot["attempted"],
        tot["replayed"],
        tot["computed"],
        wan_b,
        wan_t,
        sum(r["stall_ms"] for r in rows),
        energy,
        abstentions,
        switches,
        mode_cycles,
    )
    check_ledger(result, cfg)
    return result


def _row(
    commit: int,
    parent: int | None,
    start: float,
    end: float,
    logical: int,
    steps: int,
    decision: Decision,
    mode: str,
    members: list[int],
    up: list[int],
    reach: list[int],
    age: int,
    behind: int,
    dis: float,
    cyc: dict[str, int],
    tot: dict[str, int],
    cb: dict[str, int],
    ct: dict[str, float],
    stall: float,
    nll: float,
    mb: int,
    nll_evidence: str,
    queued: Decision | None = None,
) -> dict[str, Any]:
    return {
        "commit": commit,
        "parent": parent,
        "wall_start_ms": round(start, 6),
        "wall_tick_ms": round(end, 6),
        "logical_step": logical,
        "inner_steps": steps,
        "mode": mode,
        "action": decision.action,
        "reason": decision.reason,
        "queued_mode": None if queued is None else queued.mode,
        "queued_action": None if queued is None else queued.action,
        "queued_reason": None if queued is None else queued.reason,
        "members": members,
        "up_sites": up,
        "reachable_sites": reach,
        "update_age_steps": age,
        "update_age_commits": behind,
        "disagreement": dis,
        "useful_tokens": cyc["useful"] * mb,
        "attempted_tokens": cyc["attempted"] * mb,
        "replayed_tokens": cyc["replayed"] * mb,
        "computed_tokens": cyc["computed"] * mb,
        "total_useful_tokens": tot["useful"] * mb,
        "total_attempted_tokens": tot["attempted"] * mb,
        "total_replayed_tokens": tot["replayed"] * mb,
        "wan_bytes": dict(cb),
        "wan_ms": {k: round(v, 6) for k, v in ct.items()},
        "stall_ms": round(stall, 6),
        "heldout_nll": nll,
        "evidence": {
            "heldout_nll": nll_evidence,
            "tokens": "measured" if nll_evidence == "measured" else "modeled",
            "wall_tick_ms": "modeled",
            "wan": "modeled",
            "disagreement": nll_evidence,
        },
    }


def check_ledger(r: LoopResult, cfg: LoopConfig) -> None:
    """Raise :class:`InvariantError` unless the ledger's accounting is exact (module doc)."""

    def need(ok: bool, what: str) -> None:
        if not ok:
            raise InvariantError(f"commit ledger: {what}")

    mb = cfg.micro_batch
    for row in r.rows:
        need(
            row["attempted_tokens"] == row["useful_tokens"] + row["replayed_tokens"],
            f"commit {row['commit']}: attempted != useful + replayed",
        )
        need(row["parent"] == (None if row["commit"] == 0 else row["commit"] - 1), "lineage is not a chain")
    need(r.attempted_units == r.useful_units + r.replayed_units, "total attempted != useful + replayed")
    need(r.useful_units == cfg.target_units, f"useful units {r.useful_units} != target {cfg.target_units}")
    need(r.computed_units == r.attempted_units, f"computed {r.computed_units} != resolved {r.attempted_units}")
    for key, total in (
        ("useful_tokens", r.useful_units),
        ("attempted_tokens", r.attempted_units),
        ("replayed_tokens", r.replayed_units),
    ):
        need(sum(row[key] for row in r.rows) == total * mb, f"rows' {key} do not sum to the run's")
    for k in TRAFFIC:
        need(sum(row["wan_bytes"][k] for row in r.rows) == r.wan_bytes[k], f"rows' {k} bytes != the run's")
