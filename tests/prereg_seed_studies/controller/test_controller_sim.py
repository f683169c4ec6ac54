"""sim.controller and the shared pieces: stress families, controller rules, the cycle loop and its ledger."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from itertools import pairwise
from pathlib import Path

import pytest

from collect.collectors.base import ParamError, RunContext, check_params
from collect.engine.runner import load_collector
from prereg_seed_studies.controller.commits import read_commits
from prereg_seed_studies.controller.loop import check_ledger, run_cycles
from prereg_seed_studies.controller.params import TRAFFIC, loop_config, make_policy
from prereg_seed_studies.controller.policy import Controller, ControllerConfig, CycleReport, parse_mode
from prereg_seed_studies.controller.sim import PriorWorker, SimControllerCollector, validate
from prereg_seed_studies.controller.stress import FAMILIES, STRESS_FAMILIES, draw_stress
from prereg_seed_studies.multisite.accounting import InvariantError

POLICIES = ("sync", "local:4", "local:16", "adaptive")
SMALL = {"useful_tokens": 12288, "micro_batch": 64, "stress_horizon_s": 8.0}


def _run(tmp: Path, policy: str, family: str, seed: int = 11, **kw: object):
    ctx = RunContext(
        f"run-{family}-{policy.replace(':', '')}-{seed}",
        {**SMALL, "policy": policy, "family": family, **kw},
        seed,
        {},
        policy,
        0,
        tmp,
    )
    return SimControllerCollector().run(ctx), ctx


def test_at_least_eight_stress_families_deterministic_from_the_seed() -> None:
    assert len(STRESS_FAMILIES) >= 8 and "calm" in FAMILIES
    p = validate({"policy": "sync"})
    for fam in STRESS_FAMILIES:
        a, b = draw_stress({**p, "family": fam}, 5), draw_stress({**p, "family": fam}, 5)
        assert a == b and a.episodes, fam
        assert draw_stress({**p, "family": fam}, 6) != a
    # the base draws do not depend on the family (regions are comparable across families)
    bases = {(s.base_bandwidth_mbps, s.base_latency_ms) for s in (draw_stress({**p, "family": f}, 5) for f in FAMILIES)}
    assert len(bases) == 1


def test_uncertainty_regions_split_the_ranges() -> None:
    p = validate({"policy": "sync", "bandwidth_mbps_min": 1.0, "bandwidth_mbps_max": 100.0})
    for seed in range(40):
        low = draw_stress({**p, "bandwidth_region": "low", "outage_region": "low"}, seed)
        high = draw_stress({**p, "bandwidth_region": "high", "outage_region": "high"}, seed)
        assert 1.0 <= low.base_bandwidth_mbps <= 10.0 <= high.base_bandwidth_mbps <= 100.0
        assert low.outage_rate_per_min <= 3.5 <= high.outage_rate_per_min


def _cfg(**kw: object) -> ControllerConfig:
    return ControllerConfig(
        modes=("sync", "local:4", "local:16"),
        safe_mode="local:4",
        sync_cycle_steps=8,
        sync_bytes=51840,
        outer_bytes=51840,
        **kw,
    )  # type: ignore[arg-type]


def _report(
    bw: float | None, lat: float = 30.0, members: tuple[int, ...] = (0, 1, 2), mode: str = "local:4", dis: float = 0.01
) -> CycleReport:
    return CycleReport(0, mode, parse_mode(mode), 50.0, bw, None if bw is None else lat, members, 4, dis)


def test_controller_abstains_when_evidence_is_insufficient() -> None:
    c = Controller(_cfg())
    assert c.start().action == "abstain"
    first = c.decide(_report(1.0))
    assert (first.action, first.mode) == ("abstain", "local:4") and "too few" in first.reason
    assert c.decide(_report(1.0)).action in ("keep", "switch")
    changed = c.decide(_report(1.0, members=(0, 1)))
    assert changed.action == "abstain" and "membership" in changed.reason
    c2 = Controller(_cfg())
    c2.decide(_report(None))
    assert "too few" in c2.decide(_report(None)).reason  # no WAN transfer observed
    c3 = Controller(_cfg())
    c3.decide(_report(1.0))
    assert "unstable" in c3.decide(_report(40.0)).reason


def test_controller_picks_by_the_wan_and_guards_disagreement() -> None:
    slow = Controller(_cfg())
    slow.decide(_report(0.5, 80.0))
    assert slow.decide(_report(0.5, 80.0)).mode == "local:16"
    fast = Controller(_cfg())
    fast.decide(_report(10_000.0, 0.01))
    assert fast.decide(_report(10_000.0, 0.01)).mode == "sync"
    guarded = Controller(_cfg(max_disagreement=0.05))  # 0.02 at H=4 predicts 0.08 at H=16
    guarded.decide(_report(0.5, 80.0, dis=0.02))
    assert guarded.decide(_report(0.5, 80.0, dis=0.02)).mode == "local:4"


@pytest.mark.parametrize("family", FAMILIES)
def test_ledger_invariants_and_equal_work_every_family(tmp_path: Path, family: str) -> None:
    useful = set()
    for policy in POLICIES:
        r, ctx = _run(tmp_path, policy, family)
        rows = read_commits(ctx.trace_path("commits.jsonl"))
        assert r.traces == [f"{ctx.run_id}.commits.jsonl"]
        m = r.metrics
        for row in rows:
            assert row["attempted_tokens"] == row["useful_tokens"] + row["replayed_tokens"]
            assert row["evidence"]["heldout_nll"] == "prior" and row["evidence"]["wan"] == "modeled"
        assert rows[0]["parent"] is None and all(b["parent"] == a["commit"] for a, b in pairwise(rows))
        assert m["attempted_tokens"] == m["useful_tokens"] + m["replayed_tokens"]
        assert sum(row["attempted_tokens"] for row in rows) == m["attempted_tokens"]
        for k in TRAFFIC:
            assert sum(row["wan_bytes"][k] for row in rows) == m[f"wan_bytes_{k}"]
        assert sum(m[f"wan_bytes_{k}"] for k in TRAFFIC) == m["wan_bytes"]
        assert m["commits"] == len(rows) - 1 and rows[-1]["total_useful_tokens"] == m["useful_tokens"]
        if policy != "adaptive":
            assert {row["action"] for row in rows[1:]} == {"fixed"} and m["abstentions"] == 0
        else:
            assert rows[1]["action"] == "abstain" and m["abstentions"] >= 1
        useful.add(m["useful_tokens"])
    assert useful == {SMALL["useful_tokens"]}


def test_outages_replay_work_and_runs_are_deterministic(tmp_path: Path) -> None:
    a, ctx = _run(tmp_path, "local:16", "rolling_outages")
    text = ctx.trace_path("commits.jsonl").read_bytes()
    b, _ = _run(tmp_path, "local:16", "rolling_outages")
    assert a.metrics == b.metrics and ctx.trace_path("commits.jsonl").read_bytes() == text
    assert a.metrics["replayed_tokens"] > 0 and a.metrics["attempted_tokens"] > a.metrics["useful_tokens"]
    sync, _ = _run(tmp_path, "sync", "calm")
    assert sync.metrics["wan_bytes_parameter_sync"] == 0 and sync.metrics["wan_bytes_gradient_sync"] > 0
    part, _ = _run(tmp_path, "local:4", "partition_heals")
    assert part.metrics["max_update_age"] > 4  # a healed site merged its stale update


def test_check_ledger_catches_broken_accounting() -> None:
    p = validate({**SMALL, "policy": "local:4", "family": "site_outage"})
    cfg = loop_config(p, 12960)
    r = run_cycles(cfg, draw_stress(p, 3), PriorWorker(p), make_policy(p, cfg), "prior")
    r.rows[2]["useful_tokens"] += 64
    with pytest.raises(InvariantError):
        check_ledger(r, cfg)
    r2 = run_cycles(cfg, draw_stress(p, 3), PriorWorker(p), make_policy(p, cfg), "prior")
    r2.wan_bytes["control"] += 1
    with pytest.raises(InvariantError):
        check_ledger(r2, cfg)
    with pytest.raises(InvariantError):
        check_ledger(dataclasses.replace(r2, useful_units=r2.useful_units - 1), cfg)


@pytest.mark.parametrize(
    "params, text",
    [
        ({"policy": "sync", "bogus_ms": 1}, "does not read"),
        ({"policy": "local:1"}, "must be sync"),
        ({"policy": "adaptive", "controller_safe_mode": "local:8"}, "not one of controller_modes"),
        ({"policy": "sync", "useful_tokens": 1000}, "multiple of micro_batch"),
        ({"policy": "sync", "family": "meteor"}, "must be one of"),
        ({"policy": "sync", "bandwidth_region": "middle"}, "must be one of"),
        ({"policy": "sync", "bandwidth_mbps_min": 10.0, "bandwidth_mbps_max": 1.0}, "must be <="),
        ({"policy": "adaptive", "controller_modes": "sync,sync"}, "no repeats"),
    ],
)
def test_bad_params_are_refused(params: dict[str, object], text: str) -> None:
    with pytest.raises(ParamError, match=text):
        validate(params)


def test_registered_and_params_documented_with_units() -> None:
    assert load_collector("sim.controller") is SimControllerCollector
    assert load_collector("torch.controller").name == "torch.controller"
    for cls in (SimControllerCollector, load_collector("torch.controller")):
        assert all(spec.help for spec in cls.PARAMS.values())
        assert check_params(cls, {"policy": "sync"})["family"] == "calm"
    assert SimControllerCollector.metric_evidence({})["final_nll"] == "prior"
    assert load_collector("torch.controller").metric_evidence({})["final_nll"] == "measured"
    assert load_collector("torch.controller").metric_evidence({})["time_to_target"] == "modeled"


@pytest.mark.subprocess(quick=True)
def test_loading_the_collectors_does_not_import_torch() -> None:
    code = (
        "import sys; from collect.engine.runner import load_collector; load_collector('torch.controller'); "
        "load_collector('sim.controller'); import prereg_toolkit_cli.collect; print(json.dumps('torch' in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", "import json; " + code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) is False
