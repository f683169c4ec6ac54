"""sim.multisite: invariants over random schedules, equal frontiers, controls, CRN, traces, params."""

from __future__ import annotations

import dataclasses
import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from collect.collectors.base import ParamError, RunContext, check_params
from prereg_seed_studies.multisite.multisite import METRIC_EVIDENCE, METRICS, PARAMS, MultisiteCollector, run_params
from prereg_seed_studies.multisite.outages import OUTAGE_PARAMS, Outage, draw_outages, normalize
from prereg_seed_studies.multisite.recovery import (
    BYTE_CLASSES,
    EVENT_KINDS,
    POLICIES,
    InvariantError,
    SimConfig,
    SimResult,
    check_invariants,
    frontier_hash,
    frontier_state_hash,
    simulate,
)

SCRIPT_150 = [{"site": 1, "start": 150, "duration": 100}]
PROPS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def ctx_for(tmp_path: Path, params: dict[str, Any], seed: int = 11, run_id: str = "r1") -> RunContext:
    return RunContext(
        run_id=run_id,
        params=params,
        seed=seed,
        stratum={},
        arm=params.get("policy", ""),
        replicate=0,
        trace_dir=tmp_path / "traces",
    )


def run_all(cfg: SimConfig, outages: list[Outage]) -> dict[str, SimResult]:
    return {p: simulate(dataclasses.replace(cfg, policy=p), outages) for p in POLICIES}


def total_outage(outages: list[Outage], sites: int) -> bool:
    """Whether all sites are down together at some tick."""
    edges = sorted({o.start_tick for o in outages})
    return any(sum(o.start_tick <= t < o.end_tick for o in outages) >= sites for t in edges)


configs = st.builds(
    SimConfig,
    policy=st.just("wait"),
    sites=st.integers(1, 4),
    target_steps=st.integers(1, 400),
    checkpoint_every_steps=st.integers(1, 150),
    checkpoint_ticks=st.integers(0, 10),
    restore_ticks=st.integers(0, 30),
    rejoin_ticks=st.integers(0, 20),
    gradient_bytes=st.integers(0, 10**6),
    buffer_bytes=st.integers(0, 10**3),
    checkpoint_bytes=st.integers(0, 10**6),
    rejoin_bytes=st.integers(0, 10**6),
    control_bytes=st.integers(0, 100),
)


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[SimConfig, list[Outage]]:
    cfg = draw(configs)
    horizon = 2 * cfg.target_steps + 50
    raw = draw(
        st.lists(
            st.builds(
                Outage,
                site=st.integers(0, cfg.sites - 1),
                start_tick=st.integers(0, horizon),
                duration_ticks=st.integers(1, 300),
            ),
            max_size=6,
        )
    )
    return cfg, normalize(raw, cfg.sites)


# --- invariants -------------------------------------------------------------------------------------


@pytest.mark.slow  # many generated cases or a whole simulation: the slow tier
@PROPS
@given(scenarios())
def test_invariants_hold_for_every_policy(scenario: tuple[SimConfig, list[Outage]]) -> None:
    cfg, outages = scenario
    results = run_all(cfg, outages)
    hashes = {r.frontier_steps_sha256 for r in results.values()}
    assert hashes == {frontier_hash(cfg.target_steps, range(1, cfg.target_steps + 1))}  # the same durable steps
    control = simulate(cfg, [])
    assert results["wait"].frontier_sha256 == control.frontier_sha256  # wait computes only with every site
    everyone = tuple(range(cfg.sites))
    for r in results.values():  # the state hash is equal exactly when every retained step had the same sites
        assert (r.frontier_sha256 == control.frontier_sha256) == all(s == everyone for _, _, s in r.retained_segments)
    single_site = len({o.site for o in outages}) <= 1 < cfg.sites
    for pol, r in results.items():
        assert r.attempted == r.retained + r.lost
        assert r.attempted_steps == r.retained_steps + r.lost_steps and r.retained_steps == cfg.target_steps
        assert r.replayed_steps == r.lost_steps and 0 <= r.replayed <= r.attempted
        assert sum(r.bytes.values()) == r.wan_bytes and set(r.bytes) == set(BYTE_CLASSES)
        assert r.lineage[-1].step == cfg.target_steps
        assert r.compute_ticks + r.checkpoint_ticks + r.stall_ticks == r.end_tick
        work = [e for e in r.events if e.kind in ("compute", "replay")]
        assert sum(e.work for e in work) == r.attempted
        assert sum(e.work for e in work if e.kind == "replay") == r.replayed
        if pol == "oracle" or (pol in ("wait", "continue") and r.state_losses == 0):
            assert r.lost == 0 and r.replayed == 0
        if single_site:  # one site fails at a time: the survivors always hold the state
            assert r.state_losses == 0
        if total_outage(outages, cfg.sites) and r.failures == len(outages):
            assert r.state_losses > 0
    c, rs = results["continue"], results["restart"]
    if c.state_losses == 0:
        assert c.lost == 0 <= rs.lost
        assert c.retained * rs.attempted >= rs.retained * c.attempted  # goodput(continue) >= goodput(restart)


@PROPS
@given(
    cfg=configs,
    seed=st.integers(0, 2**31),
    mtbf=st.floats(20, 2000),
    mean=st.floats(1, 200),
    where=st.sampled_from(["random", "none", 0]),
)
@pytest.mark.slow  # many generated cases or a whole simulation: the slow tier
def test_invariants_under_poisson_outages(cfg: SimConfig, seed: int, mtbf: float, mean: float, where: Any) -> None:
    params = {
        "sites": cfg.sites,
        "target_steps": cfg.target_steps,
        "mtbf_ticks": mtbf,
        "outage_duration_ticks": mean,
        "outage_site": where,
    }
    outages = draw_outages(params, seed)
    if where == "none":
        assert outages == []
    if where == 0:
        assert {o.site for o in outages} <= {0}
    results = run_all(cfg, outages)
    assert len({r.frontier_steps_sha256 for r in results.values()}) == 1
    assert results["wait"].frontier_sha256 == simulate(cfg, []).frontier_sha256
    if where == "none":
        assert len({r.frontier_sha256 for r in results.values()}) == 1
    assert results["oracle"].lost == 0


@pytest.mark.slow  # many generated cases or a reference library: the slow tier
@PROPS
@given(cfg=configs, data=st.data())
def test_restart_loses_exactly_the_undurable_steps(cfg: SimConfig, data: st.DataObject) -> None:
    """One outage at tick t: restart loses progress(t) - durable(t) steps, all computed by every site."""
    control = simulate(cfg, [])
    t = data.draw(st.integers(0, max(0, control.end_tick - 1)))
    site = data.draw(st.integers(0, cfg.sites - 1))
    progress = sum(
        min(e.end, t) - e.start for e in control.events if e.kind == "compute" and e.site == 0 and e.start < t
    )
    # events at a tick come before phases starting then: a 0-tick checkpoint at t is not durable at t
    durable = max(
        c.step for c in control.lineage if c.tick < t or (c.tick == t and cfg.checkpoint_ticks > 0) or c.id == 0
    )
    r = simulate(dataclasses.replace(cfg, policy="restart"), [Outage(site, t, data.draw(st.integers(1, 200)))])
    assert r.lost_steps == progress - durable
    assert r.lost == cfg.sites * (progress - durable)
    if progress > durable:
        assert r.lost > 0 and r.replayed_steps == progress - durable
    for pol in ("wait", "continue", "oracle"):
        if pol != "oracle" and cfg.sites == 1:
            continue
        assert simulate(dataclasses.replace(cfg, policy=pol), [Outage(site, t, 50)]).lost == 0


# --- worked example (defaults, site 1 down on ticks [150, 250)) -----------------------------------------


def test_worked_example_by_hand() -> None:
    """Hand-computed: checkpoints every 100 steps take 5 ticks, restore 20, rejoin 10."""
    got = {p: run_params({"policy": p, "outages": SCRIPT_150}, 0)[0] for p in POLICIES}
    expect = {  # end tick, attempted, retained, lost, replayed (site-steps), stall ticks
        "wait": (1160, 3000, 3000, 0, 0, 110),  # idle 100, rejoin 10
        "continue": (1060, 2905, 2905, 0, 0, 10),  # 95 steps on 2 sites, rejoin 10
        "restart": (1135, 3035, 2900, 135, 90, 40),  # loses 101..145 on 3 sites, replays them on 2
        "oracle": (1095, 2840, 2840, 0, 0, 40),  # checkpoints step 140 at ticks 145..150
    }
    for pol, r in got.items():
        assert (r.end_tick, r.attempted, r.retained, r.lost, r.replayed, r.stall_ticks) == expect[pol], pol
    assert got["restart"].lost_steps == got["restart"].replayed_steps == 45
    assert got["oracle"].lineage[2].step == 140


# --- controls, CRN, frontier ------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [11, 12, 13])
def test_no_outage_controls_are_identical(tmp_path: Path, seed: int) -> None:
    metrics = [
        MultisiteCollector().run(ctx_for(tmp_path, {"policy": p, "outage_site": "none"}, seed)).metrics
        for p in POLICIES
    ]
    assert all(m == metrics[0] for m in metrics)
    assert metrics[0]["lost_work"] == 0 and metrics[0]["stall_time"] == 0 and metrics[0]["failures"] == 0


def test_common_random_numbers(tmp_path: Path) -> None:
    base = {"outage_site": "random"}
    infos = [MultisiteCollector().run(ctx_for(tmp_path, {**base, "policy": p}, 7)).info for p in POLICIES]
    assert all(i["outages"] == infos[0]["outages"] and infos[0]["outages"] for i in infos)
    assert len({i["frontier_steps_sha256"] for i in infos}) == 1  # every policy makes the same steps durable ...
    state = {p: i["frontier_sha256"] for p, i in zip(POLICIES, infos, strict=True)}  # ... not always in the same state
    assert state["continue"] != state["wait"] and state["restart"] != state["wait"]
    policy_specific = {
        "policy": "oracle",
        "checkpoint_every_steps": 7,
        "checkpoint_ticks": 1,
        "restore_ticks": 2,
        "rejoin_ticks": 3,
        "tick_ms": 5.0,
        "checkpoint_bytes": 1,
        "gradient_bytes": 2,
    }
    assert draw_outages(policy_specific, 7) == draw_outages({}, 7)
    schedules = {tuple(draw_outages({}, s)) for s in range(30)}
    assert len(schedules) == 30
    onsets = [o.start_tick for o in draw_outages({}, 7)]
    for site in (0, 1, 2):  # forcing the site keeps the onsets (before same-site merging)
        forced = draw_outages({"outage_site": site, "outage_duration_dist": "fixed", "outage_duration_ticks": 1.0}, 7)
        assert {o.site for o in forced} == {site} and [o.start_tick for o in forced] == sorted(set(onsets))
    assert len(draw_outages({"outage_count": 4, "outage_site": 2, "outage_horizon_ticks": 10**6}, 3)) == 4


def test_scripted_schedule_and_normalisation() -> None:
    script = [
        {"site": 0, "start": 10, "duration": 5},
        {"site": 0, "start": 12, "duration": 10},
        {"site": 2, "start": 3, "duration": 1},
    ]
    assert draw_outages({"outages": script}, 1) == [Outage(2, 3, 1), Outage(0, 10, 12)]
    assert draw_outages({"outages": script}, 1) == draw_outages({"outages": script}, 999)
    assert {o.site for o in draw_outages({"outages": script, "outage_site": 1}, 1)} == {1}
    assert draw_outages({"outages": script, "outage_site": "none"}, 1) == []


def test_frontier_hash_detects_lost_or_double_counted_work() -> None:
    good = frontier_hash(5, [1, 2, 3, 4, 5])
    assert frontier_hash(5, [1, 2, 3, 4]) != good
    assert frontier_hash(5, [1, 2, 3, 3, 4, 5]) != good
    assert frontier_hash(5, [1, 3, 2, 4, 5]) != good
    assert frontier_hash(6, [1, 2, 3, 4, 5]) != good
    full = frontier_state_hash("steps", 5, [(1, 5, (0, 1, 2))])
    assert frontier_state_hash("steps", 5, [(1, 2, (0, 1, 2)), (3, 5, (0, 1, 2))]) == full  # batch splits: same state
    assert frontier_state_hash("steps", 5, [(1, 2, (0, 1, 2)), (3, 5, (0, 2))]) != full  # fewer sites: other state
    assert frontier_state_hash("steps", 5, [(1, 2, (0, 1, 2)), (3, 5, (1, 2))]) != frontier_state_hash(
        "steps", 5, [(1, 2, (0, 1, 2)), (3, 5, (0, 2))]
    )  # which sites, not only how many
    assert frontier_state_hash("tokens", 5, [(1, 5, (0, 1, 2))]) != full


def test_invariant_checks_are_live() -> None:
    cfg = SimConfig("restart")
    r = simulate(cfg, [Outage(1, 150, 100)])
    for change in (
        {"lost": r.lost + 1},
        {"replayed_steps": r.replayed_steps + 1},
        {"retained_step_ids": r.retained_step_ids + [cfg.target_steps]},
        {"bytes": {**r.bytes, "gradient_sync": r.bytes["gradient_sync"] + 1}},
        {"stall_ticks": r.stall_ticks + 1},
    ):
        with pytest.raises(InvariantError):
            check_invariants(dataclasses.replace(r, **change), cfg)
    oracle = simulate(SimConfig("oracle"), [Outage(1, 150, 100)])
    with pytest.raises(InvariantError):
        check_invariants(dataclasses.replace(oracle, lost=3, attempted=oracle.attempted + 3), SimConfig("oracle"))
    assert issubclass(InvariantError, AssertionError)


# --- the collector: trace, bytes, params, determinism, speed ------------------------------------------


@pytest.mark.parametrize("policy", POLICIES)
def test_event_trace_and_byte_classes(tmp_path: Path, policy: str) -> None:
    res = MultisiteCollector().run(ctx_for(tmp_path, {"policy": policy}, 11))
    assert res.traces == ["r1.events.jsonl"]
    path = tmp_path / "traces" / res.traces[0]
    lines = path.read_text().splitlines()
    events = [json.loads(line) for line in lines]
    assert [e["id"] for e in events] == list(range(len(events)))
    assert {e["kind"] for e in events} <= set(EVENT_KINDS)
    assert all(e["start_ns"] <= e["end_ns"] for e in events)
    assert all(a["start_ns"] <= b["start_ns"] for a, b in itertools.pairwise(events))
    assert len(events) < 300 and path.stat().st_size < 100_000
    m = res.metrics
    assert m["wan_bytes"] == sum(m[f"wan_bytes_{c}"] for c in BYTE_CLASSES)
    for c in BYTE_CLASSES:
        if c != "control":  # heartbeats are accounted per tick, not as events
            assert sum(e["bytes"].get(c, 0) for e in events) == m[f"wan_bytes_{c}"]
    assert all(set(e["bytes"]) <= set(BYTE_CLASSES) for e in events)
    assert sum(e["work"] for e in events if e["kind"] in ("compute", "replay")) == m["attempted_work"]
    ckpts = [e for e in events if e["kind"] == "checkpoint" and not e["aborted"]]
    assert [e["parent"] for e in ckpts] == [0] + [e["checkpoint"] for e in ckpts[:-1]]
    assert ckpts[-1]["steps"][1] == 1000 and len(ckpts) == m["checkpoints"]
    assert set(m) == set(METRICS) and res.info["evidence"] == "modeled"
    assert m["goodput"] == m["retained_work"] / m["attempted_work"]
    assert res.info["deployable"] == (policy != "oracle") and ("note" in res.info) == (policy == "oracle")


def test_defaults_show_the_policies_apart(tmp_path: Path) -> None:
    m = {p: MultisiteCollector().run(ctx_for(tmp_path, {"policy": p, "outage_site": 1}, 11)).metrics for p in POLICIES}
    assert m["restart"]["lost_work"] > 0 and m["wait"]["lost_work"] == m["continue"]["lost_work"] == 0
    assert m["continue"]["goodput"] > m["restart"]["goodput"]
    assert m["continue"]["completion_time"] < min(m["wait"]["completion_time"], m["restart"]["completion_time"])
    assert m["wait"]["wan_bytes_restore_download"] == 0 and m["restart"]["wan_bytes_rejoin_transfer"] == 0


def test_params_are_validated() -> None:
    ok = check_params(MultisiteCollector, {"policy": "wait"})
    assert ok["sites"] == 3 and ok["outage_site"] == "random" and ok["tick_ms"] == 100.0
    bad: list[dict[str, Any]] = [
        {"policy": "wait", "bogus": 1},
        {},
        {"policy": "pray"},
        {"policy": "wait", "sites": 0},
        {"policy": "wait", "sites": True},
        {"policy": "wait", "target_steps": 2.5},
        {"policy": "wait", "checkpoint_every_steps": 0},
        {"policy": "wait", "outage_site": "site1"},
        {"policy": "wait", "outage_site": 3},
        {"policy": "wait", "outages": [{"site": 0, "start": 1}]},
        {"policy": "wait", "outages": [{"site": 5, "start": 1, "duration": 1}]},
        {"policy": "wait", "outages": "none"},
        {"policy": "wait", "mtbf_ticks": 0},
        {"policy": "wait", "outage_duration_dist": "weibull"},
        {"policy": "wait", "restore_ticks": -1},
    ]
    for params in bad:
        with pytest.raises(ParamError):
            run_params(params, 0)
    with pytest.raises(ParamError, match="bogus"):
        check_params(MultisiteCollector, {"policy": "wait", "bogus": 1})
    assert all(p.help for p in PARAMS.values()) and set(OUTAGE_PARAMS) <= set(PARAMS)
    assert set(METRIC_EVIDENCE) == set(METRICS) and set(METRIC_EVIDENCE.values()) == {"modeled"}


def test_deterministic(tmp_path: Path) -> None:
    a = MultisiteCollector().run(ctx_for(tmp_path / "a", {"policy": "restart"}, 5))
    b = MultisiteCollector().run(ctx_for(tmp_path / "b", {"policy": "restart"}, 5))
    assert a.metrics == b.metrics and a.info == b.info
    assert (tmp_path / "a/traces/r1.events.jsonl").read_bytes() == (tmp_path / "b/traces/r1.events.jsonl").read_bytes()
