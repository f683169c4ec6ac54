"""Energy plans end to end through the console scripts: power-only meters honoured, signal
mismatches refused before any run, kept traces re-analysed, tampered traces refusing their gates."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import requires, run

pytestmark = [
    requires("torch"),
    pytest.mark.subprocess,
]  # every test here launches a console script or a python child process

PLAN = """schema: prereg/v1
study: energy-small
title: A small power-metered study
hypothesis: Continuing uses less energy than restarting.
experiment:
  collector: torch.multisite
  params:
    sites: 3
    useful_tokens: 12288
    micro_batch: 64
    train_tokens: 16384
    heldout_tokens: 2048
    width: 64
    checkpoint_every_steps: 8
    outage_count: 1
    outage_horizon_ticks: 40
    outage_duration_ticks: 10
    outage_duration_dist: fixed
    sensor: "{sensor}"
    energy_signal: {energy_signal}
    poll_ms: 5
    idle_baseline_ms: 1000
arms:
  restart: {{policy: restart}}
  continue: {{policy: continue}}
strata:
  factors:
    outage_site: [0, 1]
    seed: [5, 6]
metrics:
  final_nll: {{unit: nats, better: lower, evidence: measured}}
  energy: {{unit: J, better: lower, evidence: modeled, signal: {metric_signal}}}
  energy_checkpoint: {{unit: J, better: lower, evidence: modeled, signal: {metric_signal}}}
invalidators:
  - {{id: period, kind: sensor_update_period, signal: {metric_signal}, max_ms: 1000, blocks: [energy_lower]}}
gates:
  - {{id: nll_close, metric: final_nll, contrast: continue - restart, method: t, confidence: 0.90, pass_if: upper < 0.5}}
  - {{id: energy_lower, metric: energy, contrast: continue / restart, method: t, confidence: 0.90, pass_if: upper < 1.0}}
decision:
  claim: Continuing keeps learning and uses less energy.
  require: all
  multiplicity: none
"""
POWER_ONLY = "sim:clock=virtual,signals=power_average,update_ms=100,window_ms=100"


def _study(
    tmp: Path, sensor: str = POWER_ONLY, energy_signal: str = "power_average", metric_signal: str = "power_average"
) -> tuple[Path, Path]:
    plan = tmp / "plan.yaml"
    plan.write_text(PLAN.format(sensor=sensor, energy_signal=energy_signal, metric_signal=metric_signal))
    lock = tmp / "plan.lock.json"
    frozen = run("prereg", "freeze", str(plan), "-o", str(lock))
    assert frozen.returncode == 0, frozen.stderr
    return lock, tmp / "runs"


@pytest.fixture(scope="module")
def power_runs(tmp_path_factory) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp("power")
    lock, runs = _study(tmp)
    proc = run("collect", "run", str(lock), "--out", str(runs), "--jobs", "2")
    assert proc.returncode == 0, proc.stderr
    return lock, runs


def _records(runs: Path) -> list[dict]:
    return [json.loads(line) for line in (runs / "ledger.jsonl").read_text().splitlines()]


def test_a_power_only_plan_is_honoured_end_to_end(power_runs):
    lock, runs = power_runs
    records = _records(runs)
    assert len(records) == 8
    for r in records:
        assert set(r["telemetry"]) == {"power_average"}
        summary = r["telemetry"]["power_average"]
        assert summary["bound"] > 0 and 90 <= summary["effective_period_ms"] <= 110
        assert summary["metric_bounds"]["energy_checkpoint"] >= 0
        assert summary["phases"]["checkpoint"]["intervals"] >= 1
        kept = [t for t in r["traces"] if ".telemetry." in t]
        assert len(kept) == 2 and all(t in r["trace_sha256"] for t in kept)
        assert r["code"]["energy_signal"] == "power_average"
    proc = run("gates", "evaluate", str(lock), str(runs), "--json")
    assert proc.returncode in (0, 1), proc.stderr
    ev = json.loads((runs / "evaluation.json").read_text())
    energy = next(g for g in ev["gates"] if g["id"] == "energy_lower")
    assert energy["verdict"] in ("pass", "fail", "unresolvable") and not energy["refused_by"]
    assert any(row["signal"] == "power_average" and row["phase"] == "checkpoint" for row in ev["phase_support"])


def test_probe_replay_re_analyses_a_kept_trace_to_the_ledger_summary(power_runs):
    _, runs = power_runs
    record = _records(runs)[0]
    meta = next(t for t in record["traces"] if t.endswith(".telemetry.meta.json"))
    proc = run("collect", "probe", "--sensor", f"replay:{runs / meta}", "--json")
    assert proc.returncode == 0, proc.stderr
    recorded = json.loads(proc.stdout)["recorded"]["power_average"]
    stored = record["telemetry"]["power_average"]
    for key in ("bound", "updates", "effective_period_ms", "metric_bounds", "phases"):
        assert recorded[key] == stored[key], key
    for name in ("energy", "energy_checkpoint", "energy_net", "idle_power"):
        assert recorded["metrics"][name] == record["metrics"][name], name
    text = run("collect", "probe", "--sensor", f"replay:{runs / meta}")
    assert text.returncode == 0 and "as recorded" in text.stdout


def test_a_tampered_telemetry_trace_refuses_only_the_gates_relying_on_it(power_runs, tmp_path):
    import shutil

    lock, runs = power_runs
    copy = tmp_path / "runs"
    shutil.copytree(runs, copy)
    (copy / "evaluation.json").unlink(missing_ok=True)
    record = _records(copy)[1]
    polls = copy / next(t for t in record["traces"] if ".telemetry.polls." in t)
    data = bytearray(polls.read_bytes())
    data[len(data) // 2] ^= 0x01
    polls.write_bytes(bytes(data))
    proc = run("gates", "evaluate", str(lock), str(copy), "--json")
    assert proc.returncode == 3, proc.stdout + proc.stderr
    ev = json.loads((copy / "evaluation.json").read_text())
    by_id = {g["id"]: g for g in ev["gates"]}
    assert (
        by_id["energy_lower"]["verdict"] == "refused"
        and {"kind": "invalidator", "id": "trace_integrity", "reason": "invalidator trace_integrity fired"}
        in by_id["energy_lower"]["refused_by"]
    )
    assert by_id["nll_close"]["verdict"] in ("pass", "fail") and "trace_integrity" not in [
        r["id"] for r in by_id["nll_close"]["refused_by"]
    ]
    check = next(i for i in ev["invalidators"] if i["id"] == "trace_integrity")
    assert check["fired"] and record["run_id"] in check["detail"] and polls.name in check["detail"]


def test_a_changed_event_trace_is_reported_but_refuses_no_gate(power_runs, tmp_path):
    import shutil

    lock, runs = power_runs
    copy = tmp_path / "runs"
    shutil.copytree(runs, copy)
    (copy / "evaluation.json").unlink(missing_ok=True)
    record = _records(copy)[2]
    events = copy / next(t for t in record["traces"] if t.endswith(".events.jsonl"))
    events.write_text(events.read_text() + "\n")
    before = json.loads((runs / "evaluation.json").read_text()) if (runs / "evaluation.json").exists() else None
    proc = run("gates", "evaluate", str(lock), str(copy), "--json")
    ev = json.loads((copy / "evaluation.json").read_text())
    check = next(i for i in ev["invalidators"] if i["id"] == "trace_integrity")
    assert check["fired"] and check["blocks"] == [] and "no gate relies" in check["detail"]
    assert all("trace_integrity" not in [r["id"] for r in g["refused_by"]] for g in ev["gates"])
    if before is not None:
        assert ev["decision"] == before["decision"]
    assert proc.returncode in (0, 1)


def test_a_plan_naming_a_signal_its_runs_will_not_record_is_refused_before_the_freeze(tmp_path):
    """The collector's own checks run at prereg freeze: nothing is frozen, so no amendment is needed."""
    for where, sensor, energy_signal, metric_signal, words in (
        # energy from the counter, but the metrics and the invalidator name power_average
        ("a", "sim:clock=virtual", "energy_counter", "power_average", ("power_average", "records energy_counter")),
        # a power-only meter cannot give the counter the plan asks for
        ("b", POWER_ONLY, "energy_counter", "energy_counter", ("energy_counter", "offer")),
    ):
        folder = tmp_path / where
        folder.mkdir()
        plan = folder / "plan.yaml"
        plan.write_text(PLAN.format(sensor=sensor, energy_signal=energy_signal, metric_signal=metric_signal))
        proc = run("prereg", "freeze", str(plan), "-o", str(folder / "plan.lock.json"))
        assert proc.returncode == 2, proc.stderr
        assert all(w in proc.stderr for w in words) and "nothing was frozen" in proc.stderr, proc.stderr
        assert not (folder / "plan.lock.json").exists()
