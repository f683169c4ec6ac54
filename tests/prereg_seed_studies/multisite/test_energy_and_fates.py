"""sim.multisite: modeled energy (base + compute) and the per-event work fates of the trace."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from collect.collectors.base import ParamError, RunContext
from prereg_seed_studies.multisite.energy import ENERGY_METRICS, TRANSFER_CLASSES, EnergyModel
from prereg_seed_studies.multisite.multisite import (
    METRIC_EVIDENCE,
    METRICS,
    PARAMS,
    MultisiteCollector,
    event_records,
    run_params,
)
from prereg_seed_studies.multisite.recovery import POLICIES

SCRIPT_150 = [{"site": 1, "start": 150, "duration": 100}]  # the worked example of test_multisite.py
TICK_S = 0.1  # the default tick_ms = 100


def _metrics(params: dict[str, Any], seed: int = 0, tmp: Path | None = None) -> dict[str, float]:
    if tmp is None:
        from prereg_seed_studies.multisite.multisite import energy_model_from, metrics_of, validate

        r, _ = run_params(params, seed)
        p = validate(params)
        return metrics_of(r, p["tick_ms"], energy_model_from(p))
    ctx = RunContext("r1", params, seed, {}, params["policy"], 0, tmp)
    return MultisiteCollector().run(ctx).metrics


# --- energy -----------------------------------------------------------------------------------------


def test_energy_params_and_metrics_are_declared() -> None:
    for name in ("site_idle_w", "site_compute_w", "transfer_j_per_byte", "facility_pue"):
        assert name in PARAMS and PARAMS[name].help
    assert {k: METRICS[k] for k in ENERGY_METRICS} == {"energy": "J", "energy_base": "J", "energy_compute": "J"}
    assert all(METRIC_EVIDENCE[k] == "modeled" for k in ENERGY_METRICS)
    for bad in (
        {"facility_pue": 0.9},
        {"site_idle_w": -1.0},
        {"site_compute_w": math.nan},
        {"transfer_j_per_byte": math.inf},
        {"site_idle_w": "1 kW"},
    ):
        with pytest.raises(ParamError):
            run_params({"policy": "wait", **bad}, 0)


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5])
def test_energy_is_base_plus_compute_exactly(seed: int) -> None:
    model = {"site_idle_w": 750.0, "site_compute_w": 2200.0, "transfer_j_per_byte": 3e-9, "facility_pue": 1.25}
    for policy in POLICIES:
        r, _ = run_params({"policy": policy, "outage_site": "random", "mtbf_ticks": 400.0, **model}, seed)
        m = _metrics({"policy": policy, "outage_site": "random", "mtbf_ticks": 400.0, **model}, seed)
        assert m["energy"] == m["energy_base"] + m["energy_compute"]
        assert m["energy_base"] == pytest.approx(1.25 * 750.0 * TICK_S * r.up_site_ticks, rel=1e-15)
        moved = sum(m[f"wan_bytes_{c}"] for c in TRANSFER_CLASSES)
        assert m["energy_compute"] == pytest.approx(
            1.25 * (2200.0 * TICK_S * m["attempted_work"] + 3e-9 * moved), rel=1e-15
        )
        assert r.up_site_ticks <= 3 * r.end_tick and (r.failures == 0 or r.up_site_ticks < 3 * r.end_tick)


@pytest.mark.parametrize("seed", [11, 12, 13])
def test_energy_is_identical_across_policies_in_the_controls(tmp_path: Path, seed: int) -> None:
    params = {"outage_site": "none", "transfer_j_per_byte": 1e-9, "facility_pue": 1.1}
    energies = [{k: _metrics({**params, "policy": p}, seed, tmp_path)[k] for k in ENERGY_METRICS} for p in POLICIES]
    assert all(e == energies[0] for e in energies)
    assert energies[0]["energy_base"] > 0 and energies[0]["energy_compute"] > 0


def test_waiting_accrues_base_energy_but_no_compute_energy_during_the_stall() -> None:
    """Site 1 down on ticks [150, 250): wait idles 100 ticks with 2 sites up, then a 10-tick rejoin with 3."""
    model = {"site_idle_w": 800.0, "site_compute_w": 2500.0, "facility_pue": 1.5}
    wait = _metrics({"policy": "wait", "outages": SCRIPT_150, **model})
    control = _metrics({"policy": "wait", "outage_site": "none", **model})
    assert wait["attempted_work"] == control["attempted_work"] == 3000 and wait["stall_time"] == pytest.approx(11.0)
    assert wait["energy_compute"] == control["energy_compute"]  # no work during the stall, no compute energy
    stall_site_ticks = 2 * 100 + 3 * 10  # the idle sites that are up, then every site during the rejoin
    assert wait["energy_base"] - control["energy_base"] == pytest.approx(1.5 * 800.0 * TICK_S * stall_site_ticks)
    assert wait["energy"] > control["energy"]
    # moving the rejoin state is compute energy when transfers are modeled
    priced = _metrics({"policy": "wait", "outages": SCRIPT_150, **model, "transfer_j_per_byte": 1e-9})
    priced_control = _metrics({"policy": "wait", "outage_site": "none", **model, "transfer_j_per_byte": 1e-9})
    assert priced["energy_base"] == wait["energy_base"]
    assert priced["wan_bytes_rejoin_transfer"] == 300_000_000 == priced["wan_bytes_checkpoint_upload"] / 10
    assert priced["energy_compute"] - wait["energy_compute"] == pytest.approx(1.5 * 1e-9 * 11 * 300_000_000)
    assert priced["energy_compute"] - priced_control["energy_compute"] == pytest.approx(1.5 * 1e-9 * 300_000_000)


def test_restart_pays_compute_energy_for_lost_and_replayed_work() -> None:
    """Hand numbers of the worked example: restart attempts 3035 site-steps (135 lost, 90 replayed) in 1135 ticks."""
    m = _metrics({"policy": "restart", "outages": SCRIPT_150})
    per_site_step = 3000.0 * TICK_S  # the default site_compute_w x tick_ms / 1000
    assert (m["attempted_work"], m["lost_work"], m["replayed_work"]) == (3035, 135, 90)
    assert m["energy_compute"] == pytest.approx(3035 * per_site_step)  # = 910 500 J
    assert m["energy_base"] == pytest.approx(1000.0 * TICK_S * (3 * 1135 - 100))  # = 330 500 J
    assert m["energy_compute"] - per_site_step * m["retained_work"] == pytest.approx(per_site_step * m["lost_work"])
    assert m["energy_compute"] - per_site_step * (m["attempted_work"] - m["replayed_work"]) == pytest.approx(
        per_site_step * 90
    )
    cont = _metrics({"policy": "continue", "outages": SCRIPT_150})
    assert cont["lost_work"] == 0 and cont["energy_compute"] < m["energy_compute"]
    assert _metrics({"policy": "restart", "outages": SCRIPT_150, "site_compute_w": 0.0})["energy_compute"] == 0.0


def test_energy_model_scales_with_pue() -> None:
    r, _ = run_params({"policy": "continue", "outages": SCRIPT_150}, 0)
    one, two = EnergyModel().energy(r, 100.0), EnergyModel(facility_pue=2.0).energy(r, 100.0)
    assert all(two[k] == pytest.approx(2 * one[k]) for k in ENERGY_METRICS)


# --- work fates in the trace ----------------------------------------------------------------------


def _fate_sums(events: list[dict[str, Any]]) -> dict[str, int]:
    out = {"retained": 0, "lost": 0, "replayed": 0}
    for e in events:
        for k in out:
            out[k] += e["work_fate"][k]
    return out


@pytest.mark.parametrize("policy", POLICIES)
def test_event_work_fates_sum_to_the_run_metrics_over_many_seeds(policy: str) -> None:
    regimes = [
        {"outage_site": "random", "mtbf_ticks": 600.0},
        {"outage_site": "random", "mtbf_ticks": 150.0, "outage_duration_ticks": 120.0},  # state losses
        {"outage_site": 0, "outage_count": 3, "checkpoint_every_steps": 37},
    ]
    seen_lost = seen_state_loss = 0
    for regime in regimes:
        for seed in range(40):
            params = {"policy": policy, "target_steps": 400, **regime}
            r, _ = run_params(params, seed)
            events = event_records(r, 100.0)
            sums = _fate_sums(events)
            assert (sums["retained"], sums["lost"], sums["replayed"]) == (r.retained, r.lost, r.replayed), (
                seed,
                regime,
            )
            for e in events:
                f = e["work_fate"]
                assert f["retained"] + f["lost"] == e["work"] and 0 <= f["replayed"] <= e["work"]
                assert f["replayed"] == (e["work"] if e["kind"] == "replay" else 0)
                assert e["work"] == 0 or (f["retained"] == 0) != (f["lost"] == 0)
            seen_lost += r.lost > 0
            seen_state_loss += r.state_losses > 0
    if policy == "oracle":
        assert seen_lost == 0
    else:
        assert seen_state_loss > 0  # the regimes reach the paths where wait and continue lose work too
    if policy == "restart":
        assert seen_lost > 50


def test_work_fates_in_the_written_trace(tmp_path: Path) -> None:
    res = MultisiteCollector().run(
        RunContext("r1", {"policy": "restart", "outages": SCRIPT_150}, 0, {}, "restart", 0, tmp_path)
    )
    events = [json.loads(line) for line in (tmp_path / "r1.events.jsonl").read_text().splitlines()]
    sums = _fate_sums(events)
    m = res.metrics
    assert (sums["retained"], sums["lost"], sums["replayed"]) == (
        m["retained_work"],
        m["lost_work"],
        m["replayed_work"],
    )
    lost = [e for e in events if e["work_fate"]["lost"]]
    assert {tuple(e["steps"]) for e in lost} == {(101, 145)} and {e["site"] for e in lost} == {0, 1, 2}
    replays = [e for e in events if e["kind"] == "replay"]
    assert replays and all(e["work_fate"]["retained"] == e["work"] == e["work_fate"]["replayed"] for e in replays)
    assert all(
        e["work_fate"] == {"retained": 0, "lost": 0, "replayed": 0}
        for e in events
        if e["kind"] not in ("compute", "replay")
    )
