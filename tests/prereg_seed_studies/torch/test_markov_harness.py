"""The numpy parts of torch.multisite: the Markov source and the failure harness (no torch needed)."""

from __future__ import annotations

import numpy as np
import pytest

from prereg_seed_studies.multisite.harness import Harness
from prereg_seed_studies.multisite.multisite import config_from, validate
from prereg_seed_studies.multisite.outages import Outage, draw_outages
from prereg_seed_studies.multisite.recovery import POLICIES, SimConfig
from prereg_seed_studies.torch.markov import MarkovSource, SourceSpec, corpus_sha256, make_corpora


def test_entropy_rate_matches_a_long_empirical_estimate() -> None:
    src = MarkovSource(SourceSpec(vocab=32, order=2, seed=3))
    pi = src.stationary
    assert pi.min() > 0 and abs(pi.sum() - 1) < 1e-12
    # stationarity: pi T = pi, checked through the context update
    v, n = 32, 32**2
    nxt = np.zeros(n)
    for x in range(v):
        np.add.at(nxt, src.next_context(np.arange(n), np.full(n, x)), pi * src.probs[:, x])
    assert np.allclose(nxt, pi, atol=1e-12)
    tokens = src.sample(256, 4096, seed=11)  # ~1M predictions
    empirical = src.empirical_nll(tokens)
    assert 0 < src.entropy_rate < np.log(32)
    assert abs(empirical - src.entropy_rate) < 0.01, (empirical, src.entropy_rate)


def test_corpora_are_deterministic_and_hashed() -> None:
    spec = SourceSpec(seed=1)
    a, b = make_corpora(spec, 5, 4, 512, 2, 100), make_corpora(spec, 5, 4, 512, 2, 100)
    assert np.array_equal(a.train, b.train) and np.array_equal(a.heldout, b.heldout)
    assert a.identity() == b.identity()
    assert not np.array_equal(a.train[:2, :100], a.heldout)  # held-out comes from another seed
    c = make_corpora(spec, 6, 4, 512, 2, 100)
    assert c.identity()["train"]["sha256"] != a.identity()["train"]["sha256"]
    assert corpus_sha256(SourceSpec(seed=2), a.train, "train", 10) != corpus_sha256(spec, a.train, "train", 10)


class _Null:
    def step(self, step_id: int, sites: object) -> None:
        pass

    def save(self, ckpt_id: int, step_id: int, tokens: int) -> int:
        return 0

    def load(self, ckpt_id: int) -> None:
        pass


SCHEDULES = [
    [],
    [Outage(1, 30, 40)],
    [Outage(0, 10, 5), Outage(2, 12, 30), Outage(1, 70, 200)],
    [Outage(0, 50, 20), Outage(1, 55, 20), Outage(2, 60, 20)],  # everyone down: a state loss
]


@pytest.mark.parametrize("policy", POLICIES)
def test_harness_in_token_mode_lands_exactly_on_the_target(policy: str) -> None:
    cfg = SimConfig(policy, sites=3, checkpoint_every_steps=8)
    outages = [Outage(0, 10, 30), Outage(1, 25, 10), Outage(2, 60, 5)]
    h = Harness(cfg, outages, _Null(), target=100 * 7, site_tokens=7, count="tokens").run()
    assert h.retained_tokens == 700
    assert h.attempted_tokens == h.retained_tokens + h.lost_tokens
    assert h.replayed_steps == h.lost_steps and h.replayed_tokens <= h.attempted_tokens


def test_outage_schedule_equals_sim_multisite() -> None:
    from prereg_seed_studies.torch.collector import outage_params, target_steps_of
    from prereg_seed_studies.torch.collector import validate as torch_validate

    for extra in (
        {"outage_site": 1},
        {"outage_site": "random", "mtbf_ticks": 300.0},
        {"outage_count": 3, "outage_duration_dist": "fixed"},
        {"outage_site": "none"},
    ):
        tp = torch_validate({"policy": "restart", "useful_tokens": 16384, "micro_batch": 64, **extra})
        sp = validate({"policy": "restart", "target_steps": target_steps_of(tp), **extra})
        for seed in (1, 2, 12345):
            assert draw_outages(outage_params(tp), seed) == draw_outages(sp, seed)
    assert config_from(sp).sites == 3
