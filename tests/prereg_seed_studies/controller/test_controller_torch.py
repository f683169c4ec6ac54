"""torch.controller: real replicas, deterministic, the ledger's invariants, equal work, and a plan end to end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from collect.collectors.base import RunContext
from prereg_seed_studies.controller.collector import TorchControllerCollector
from prereg_seed_studies.controller.commits import read_commits
from prereg_seed_studies.controller.params import TRAFFIC
from tests.conftest import REPO

pytestmark = pytest.mark.usefixtures("torch")  # skips where torch is missing

SMALL = {
    "useful_tokens": 6144,
    "micro_batch": 64,
    "train_tokens": 16384,
    "heldout_tokens": 1024,
    "width": 32,
    "stress_horizon_s": 6.0,
}


def _run(tmp: Path, policy: str, family: str = "calm", seed: int = 21):
    ctx = RunContext(
        f"run-{family}-{policy.replace(':', '')}",
        {**SMALL, "policy": policy, "family": family},
        seed,
        {},
        policy,
        0,
        tmp,
    )
    return TorchControllerCollector().run(ctx), ctx


@pytest.mark.slow  # many generated cases or a whole simulation: the slow tier
def test_merge_is_real_parameter_averaging(torch) -> None:
    from prereg_seed_studies.controller.replicas import Replicas
    from prereg_seed_studies.torch.markov import SourceSpec, make_corpora
    from prereg_seed_studies.torch.model import Batches, WindowMLP

    c = make_corpora(SourceSpec(), 3, 4, 2048, 1, 64)
    torch.manual_seed(0)
    w = Replicas(
        WindowMLP(32, 4, 8, 16),
        Batches(c.train, 4, 16, 3),
        0.01,
        torch.zeros(1, 4, dtype=torch.long),
        torch.zeros(1, dtype=torch.long),
    )
    for site in (0, 1):
        w.fork(site)
        for k in range(3):
            w.local_step(site, k)
    a, b = ([p.detach().clone() for p in w.replicas[s][0].parameters()] for s in (0, 1))
    assert any(not torch.equal(x, y) for x, y in zip(a, b, strict=True))  # different data: the replicas diverged
    dis = w.merge([0, 1], include_consensus=False)
    assert dis > 0 and not w.replicas
    for x, y, z in zip(a, b, w.model.parameters(), strict=True):
        assert torch.allclose(z, (x + y) / 2)


@pytest.mark.slow
@pytest.mark.parametrize("family", ["calm", "rolling_outages", "partition_heals"])
def test_every_policy_equal_useful_tokens_and_exact_ledger(tmp_path: Path, family: str) -> None:
    for policy in ("sync", "local:4", "adaptive"):
        r, ctx = _run(tmp_path, policy, family)
        m, rows = r.metrics, read_commits(ctx.trace_path("commits.jsonl"))
        assert m["useful_tokens"] == SMALL["useful_tokens"]
        assert m["attempted_tokens"] == m["useful_tokens"] + m["replayed_tokens"]
        assert all(row["attempted_tokens"] == row["useful_tokens"] + row["replayed_tokens"] for row in rows)
        for k in TRAFFIC:
            assert sum(row["wan_bytes"][k] for row in rows) == m[f"wan_bytes_{k}"]
        assert rows[0]["heldout_nll"] == m["initial_nll"] and rows[-1]["heldout_nll"] == m["final_nll"]
        assert m["final_nll"] < m["initial_nll"] and m["nll_floor"] < m["final_nll"]
        assert all(row["evidence"]["heldout_nll"] == "measured" for row in rows)
        assert r.info["data"]["train"]["sha256"]  # same data identity in every arm of the stratum


@pytest.mark.slow
def test_deterministic_given_the_seed(tmp_path: Path) -> None:
    a, ctx = _run(tmp_path, "adaptive", "flapping_membership")
    first = ctx.trace_path("commits.jsonl").read_bytes()
    b, _ = _run(tmp_path, "adaptive", "flapping_membership")
    assert a.metrics == b.metrics and a.info["final_state_sha256"] == b.info["final_state_sha256"]
    assert ctx.trace_path("commits.jsonl").read_bytes() == first
    c, _ = _run(tmp_path, "local:4", "flapping_membership")
    assert c.info["data"] == a.info["data"] and c.info["initial_state_sha256"] == a.info["initial_state_sha256"]


def small_controller_plan() -> str:
    """examples/controller.yaml at test size: one calibration family and two held-out families, one
    replicate, no region factor (one ranking cell of 2 pairs per family; 24 runs of a 32-wide model)."""
    text = (REPO / "examples" / "controller.yaml").read_text()
    for old, new in (
        ("useful_tokens: 49152", "useful_tokens: 6144\n    train_tokens: 16384\n    width: 32"),
        ("micro_batch: 128", "micro_batch: 64"),
        ("heldout_tokens: 4096", "heldout_tokens: 1024"),
        ("stress_horizon_s: 20", "stress_horizon_s: 6"),
        ("min: 49151", "min: 6143"),
        ("max: 49153", "max: 6145"),
        ("range: [49152, 98304]", "range: [6144, 12288]"),
        (
            "    family: [calm, congestion, compound, rolling_outages,\n             bandwidth_collapse, latency_spikes, "
            "site_outage, straggler, flapping_membership, partition_heals]",
            "    family: [calm, site_outage, partition_heals]",
        ),
        ("  replicates: 3", "  replicates: 1"),
        ("  region_factors:\n    bandwidth_region: base_bandwidth_mbps\n", ""),  # one ranking cell per family
        ("    - {family: congestion}\n    - {family: compound}\n    - {family: rolling_outages}\n", ""),
        ("    - {family: bandwidth_collapse}\n    - {family: latency_spikes}\n", ""),
        ("    - {family: straggler}\n    - {family: flapping_membership}\n", ""),
    ):
        assert old in text, old
        text = text.replace(old, new)
    return text


@pytest.mark.slow
def test_the_controller_study_freezes_runs_and_evaluates(tmp_path: Path) -> None:
    from collect.api import run_plan
    from gates.api import evaluate
    from prereg.api import freeze

    plan = tmp_path / "plan.yaml"
    plan.write_text(small_controller_plan())
    lock = freeze(plan, tmp_path / "plan.lock.json")
    summary = run_plan(lock, tmp_path / "runs", jobs=1)
    assert summary.completed == 24 and summary.failed == 0
    ev = evaluate(tmp_path / "plan.lock.json", tmp_path / "runs")
    assert ev.decision in ("supported", "not_supported")
    assert ev.comparator is not None and ev.comparator.arm in ("sync", "local4", "local16")
    assert ev.comparator.calibration_strata == [
        "bandwidth_region=low, family=calm",
        "bandwidth_region=high, family=calm",
    ]
    assert [f.family for f in ev.families] == ["site_outage", "partition_heals"]
    assert all(f.blocks == 2 and len(f.gates) == 4 for f in ev.families)
    assert [(c.family, c.region, c.n_pairs) for c in ev.ranking] == [("site_outage", {}, 2), ("partition_heals", {}, 2)]
    assert all(c.ranking in ("adaptive", "comparator", "abstain") and c.reason for c in ev.ranking)
    ledger = [json.loads(line) for line in (tmp_path / "runs" / "ledger.jsonl").read_text().splitlines()]
    per_stratum: dict[str, set[float]] = {}
    for rec in ledger:
        per_stratum.setdefault(json.dumps(rec["stratum"], sort_keys=True), set()).add(rec["metrics"]["useful_tokens"])
        assert rec["traces"][0].endswith(f"{rec['run_id']}.commits.jsonl")
        assert len({r["metrics"]["base_bandwidth_mbps"] for r in ledger if r["stratum"] == rec["stratum"]}) == 1
    assert all(v == {6144.0} for v in per_stratum.values())
