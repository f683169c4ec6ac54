"""torch.multisite: exact checkpoints, bitwise replay, matched controls, accounting, equal useful work."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from collect.collectors.base import ParamError, RunContext
from prereg_seed_studies.torch.collector import TorchMultisiteCollector, validate
from prereg_seed_studies.torch.markov import SourceSpec, make_corpora
from tests.helpers.torchrun import SMALL

if TYPE_CHECKING:
    from prereg_seed_studies.torch.trainer import Trainer

pytestmark = pytest.mark.usefixtures("torch")  # skips where torch is missing

POLICIES = ("wait", "restart", "continue", "oracle")


def _trainer(tmp_path: Path, name: str = "t.ckpt", seed: int = 7) -> Trainer:
    from prereg_seed_studies.torch.model import Batches, WindowMLP  # lazy: imports torch
    from prereg_seed_studies.torch.trainer import Trainer  # lazy: imports torch

    c = make_corpora(SourceSpec(), seed, 8, 2048, 1, 64)
    model = WindowMLP(32, 4, 16, 64)
    return Trainer(model, Batches(c.train, 4, 32, seed), 0.01, tmp_path / name)


def _run(tmp_path: Path, policy: str, seed: int = 101, **params: object):
    ctx = RunContext(f"run-{policy}-{seed}", {**SMALL, "policy": policy, **params}, seed, {}, policy, 0, tmp_path)
    return TorchMultisiteCollector().run(ctx)


def test_checkpoint_round_trip_equals_never_stopping(tmp_path: Path) -> None:
    from prereg_seed_studies.torch.model import state_sha256  # lazy: imports torch
    from prereg_seed_studies.torch.trainer import deterministic  # lazy: imports torch

    with deterministic(3):
        a = _trainer(tmp_path, "a.ckpt")
        for s in range(1, 11):
            a.step(s, [0, 1, 2])
        a.save(1, 10, 0)
        for s in range(11, 21):
            a.step(s, [0, 1])
        straight = state_sha256(a.model, a.opt)
    with deterministic(3):
        b = _trainer(tmp_path, "b.ckpt")
        for s in range(1, 11):
            b.step(s, [0, 1, 2])
        b.save(1, 10, 0)
        for s in range(11, 16):  # progress that a failure destroys ...
            b.step(s, [2])
        b.load(1)  # ... restored from the file (weights_only) ...
        mid = state_sha256(b.model, b.opt)
        for s in range(11, 21):
            b.step(s, [0, 1])
        assert state_sha256(b.model, b.opt) == straight
    with deterministic(99):  # a fresh process-like trainer, other seed: the checkpoint is all that matters
        c = _trainer(tmp_path, "b.ckpt")
        c.step(1, [0])
        c.load(1)
        assert state_sha256(c.model, c.opt) == mid
        for s in range(11, 21):
            c.step(s, [0, 1])
        assert state_sha256(c.model, c.opt) == straight


def test_replay_reproduces_lost_steps_bitwise(tmp_path: Path) -> None:
    from prereg_seed_studies.torch.model import state_sha256  # lazy: imports torch
    from prereg_seed_studies.torch.trainer import deterministic  # lazy: imports torch

    with deterministic(5):
        t = _trainer(tmp_path)
        t.save(0, 0, 0)
        hashes = []
        for s in range(1, 9):
            t.step(s, [0, 1, 2])
            hashes.append(state_sha256(t.model, t.opt))
        t.load(0)
        for s in range(1, 9):
            t.step(s, [0, 1, 2])
            assert state_sha256(t.model, t.opt) == hashes[s - 1]


@pytest.mark.slow  # many generated cases or a whole simulation: the slow tier
def test_controls_identical_across_policies_without_outages(tmp_path: Path) -> None:
    results = {p: _run(tmp_path, p, outage_site="none") for p in POLICIES}
    hashes = {p: r.info["final_state_sha256"] for p, r in results.items()}
    assert len(set(hashes.values())) == 1, hashes
    assert {r.info["frontier_sha256"] for r in results.values()} == set(hashes.values())  # the durable state
    assert len({r.info["frontier_lineage_sha256"] for r in results.values()}) == 1
    metrics = [r.metrics for r in results.values()]
    assert all(m == metrics[0] for m in metrics)
    assert metrics[0]["checkpoints"] > 1 and metrics[0]["failures"] == 0
    assert not list(tmp_path.glob("*.ckpt*"))  # checkpoints removed after the run


@pytest.mark.slow
def test_equal_useful_work_accounting_and_learning(tmp_path: Path) -> None:
    outages = [{"site": 1, "start": 12, "duration": 30}, {"site": 0, "start": 50, "duration": 10}]
    res = {p: _run(tmp_path, p, outages=outages) for p in POLICIES}
    for p, r in res.items():
        m = r.metrics
        assert m["retained_tokens"] == SMALL["useful_tokens"], p
        assert m["attempted_tokens"] == m["retained_tokens"] + m["lost_tokens"], p
        assert m["replayed_tokens"] <= m["attempted_tokens"] and m["replayed_steps"] == m["lost_steps"], p
        assert m["attempted_flop"] == m["attempted_tokens"] * r.info["flop_per_token"]["train"]
        assert m["failures"] == 2 and m["ticks"] == m["completion_ticks"]
        assert m["nll_floor"] < m["final_nll"] < m["initial_nll"], p
        assert m["progress_per_flop"] > 0 and m["energy"] > 0
        assert r.telemetry["energy_counter"]["updates"] >= 20
        assert r.telemetry["energy_counter"]["evidence"] == "modeled" and r.info["energy_evidence"] == "modeled"
        assert r.info["data"]["train"]["sha256"] == res["wait"].info["data"]["train"]["sha256"]
    assert res["restart"].metrics["lost_tokens"] > 0 and res["restart"].metrics["replayed_tokens"] > 0
    assert res["oracle"].metrics["lost_tokens"] == 0 and res["continue"].metrics["lost_tokens"] == 0
    assert res["continue"].metrics["attempted_tokens"] < res["restart"].metrics["attempted_tokens"]
    events = [json.loads(line) for line in (tmp_path / "run-restart-101.events.jsonl").read_text().splitlines()]
    assert {"failure", "preemption", "restore", "replay", "checkpoint"} <= {e["kind"] for e in events}
    assert set(events[0]) == {
        "id",
        "kind",
        "site",
        "start_ns",
        "end_ns",
        "work",
        "steps",
        "checkpoint",
        "parent",
        "bytes",
        "aborted",
        "work_fate",
    }
    rows = (tmp_path / "run-restart-101.trajectory.csv").read_text().splitlines()
    assert rows[0] == "tick,useful_steps,heldout_nll,state_tokens" and len(rows) > 10
    for p, r in res.items():  # the trace says what became of every token: per-event fates sum to the metrics
        trace = [json.loads(line) for line in (tmp_path / f"run-{p}-101.events.jsonl").read_text().splitlines()]
        sums = {
            k: SMALL["micro_batch"] * sum(e["work_fate"][k] for e in trace) for k in ("retained", "lost", "replayed")
        }
        assert sums == {
            "retained": r.metrics["retained_tokens"],
            "lost": r.metrics["lost_tokens"],
            "replayed": r.metrics["replayed_tokens"],
        }, p
    # the durable frontier: equal retained tokens everywhere; equal *state* exactly where the retained steps
    # were made by the same sites (wait always matches the no-outage control; continue and restart do not)
    control = _run(tmp_path / "control", "wait", outage_site="none")
    runs = {**res, "control": control}
    for p, r in runs.items():
        assert r.info["frontier_sha256"] == r.info["final_state_sha256"], p
    assert res["wait"].info["frontier_sha256"] == control.info["frontier_sha256"]
    assert res["continue"].info["frontier_sha256"] != control.info["frontier_sha256"]
    assert res["restart"].info["frontier_sha256"] != control.info["frontier_sha256"]
    for a, b in itertools.combinations(runs.values(), 2):
        same_lineage = a.info["frontier_lineage_sha256"] == b.info["frontier_lineage_sha256"]
        assert same_lineage == (a.info["frontier_sha256"] == b.info["frontier_sha256"])


@pytest.mark.slow  # many generated cases or a reference library: the slow tier
def test_runs_are_deterministic_and_keep_checkpoint_on_request(tmp_path: Path, torch) -> None:
    a = _run(tmp_path / "a", "restart", outage_site=1, mtbf_ticks=100.0, keep_checkpoint=True)
    b = _run(tmp_path / "b", "restart", outage_site=1, mtbf_ticks=100.0)
    assert a.metrics == b.metrics and a.info["final_state_sha256"] == b.info["final_state_sha256"]
    assert (tmp_path / "a" / "run-restart-101.ckpt").exists()
    assert not (tmp_path / "b" / "run-restart-101.ckpt").exists()
    assert torch.are_deterministic_algorithms_enabled() is False  # the run put the global setting back


def test_bad_params_are_refused() -> None:
    with pytest.raises(ParamError):
        validate({"policy": "restart", "useful_tokens": 1000, "micro_batch": 64})  # not a multiple
    with pytest.raises(ParamError):
        validate({"policy": "restart", "target_steps": 10})  # derived from useful_tokens, not a param
    with pytest.raises(ParamError):
        validate({"policy": "restart", "outage_site": 3})


@pytest.mark.gpu
def test_gpu_run_learns_and_controls_match(tmp_path: Path, torch) -> None:
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    runs = [_run(tmp_path, p, outage_site="none", device="cuda") for p in ("restart", "continue")]
    assert runs[0].info["final_state_sha256"] == runs[1].info["final_state_sha256"]
    assert runs[0].info["frontier_sha256"] == runs[1].info["frontier_sha256"] == runs[0].info["final_state_sha256"]
    m = runs[0].metrics
    assert m["nll_floor"] < m["final_nll"] < m["initial_nll"]
    assert runs[0].info["net"]["device"] == "cuda"
