"""Gates on the other invalidator kinds, vacuous and sensitivity gates, groups and multiplicity."""

from __future__ import annotations

import numpy as np
import pytest

from gates.verdicts import GateOutcome, apply_multiplicity, decide
from prereg.plan import parse_plan
from tests.conftest import shared_example_path
from tests.helpers.gates import evaluate, freeze, gates_by_id, imported

FEATURES = b"""schema: prereg/v1
study: features
title: Every gate feature at once
hypothesis: Continuing is no worse and identical without failures.
arms:
  restart: {policy: restart}
  cont: {policy: continue}
strata:
  factors:
    outage: [none, a, b, c, d, e, f]
  replicates: 1
  calibration: [{outage: f}]
metrics:
  loss: {unit: nats, better: lower, evidence: modeled}
  steps: {unit: step, better: lower, evidence: modeled, deterministic: true}
invalidators:
  - id: controls
    kind: controls_identical
    metric: loss
    where: {outage: none}
    blocks: all
gates:
  - {id: loss_equiv, metric: loss, contrast: cont - restart, method: t, confidence: 0.9,
     pass_if: "within [-0.05, 0.05]", group: learning}
  - {id: same_steps, metric: steps, contrast: cont / restart, method: wilcoxon, confidence: 0.9,
     pass_if: upper < 1.01, group: learning}
  - {id: loss_lower, metric: loss, contrast: cont - restart, method: signflip, confidence: 0.9,
     pass_if: upper < -1, role: sensitivity}
decision: {claim: Continuing is equivalent., multiplicity: none}
"""


def feature_rows(control_gap: float = 0.0) -> list[dict]:
    rows = []
    noise = {"none": 0.0, "a": 0.01, "b": -0.012, "c": 0.004, "d": -0.003, "e": 0.008, "f": 0.0}
    for outage, eps in noise.items():
        rows.append({"arm": "restart", "outage": outage, "loss": 2.0 + abs(eps), "steps": 100})
        rows.append(
            {
                "arm": "cont",
                "outage": outage,
                "loss": 2.0 + abs(eps) + eps + (control_gap if outage == "none" else 0.0),
                "steps": 100,
            }
        )
    return rows


@pytest.mark.subprocess
def test_vacuous_sensitivity_groups_and_calibration(tmp_path):
    lock = freeze(tmp_path, FEATURES)
    rc, data = evaluate(lock, imported(tmp_path, lock, feature_rows()))
    g = gates_by_id(data)
    # calibration stratum f and the no-failure control stratum (outage none) give no pairs
    assert g["loss_equiv"]["verdict"] == "pass" and g["loss_equiv"]["n_pairs"] == 5
    assert g["same_steps"]["verdict"] == "vacuous" and "could not have failed" in g["same_steps"]["notes"][0]
    assert g["loss_lower"]["verdict"] == "fail" and g["loss_lower"]["role"] == "sensitivity"
    assert rc == 0 and data["decision"] == "supported" and "1 vacuous" in data["decision_reason"]
    assert data["groups"]["learning"] == {"total": 2, "counts": {"pass": 1, "vacuous": 1}}
    inv = {i["id"]: i for i in data["invalidators"]}
    assert inv["controls"]["fired"] is False and inv["controls"]["observed"] == 0.0
    assert [b["block"] for b in data["blocks"]][0] == "outage=a #0" and len(data["blocks"]) == 5
    assert data["controls"] == {"blocks": ["outage=none #0"], "paired": False}


@pytest.mark.subprocess
def test_controls_identical_fires(tmp_path):
    lock = freeze(tmp_path, FEATURES)
    rc, data = evaluate(lock, imported(tmp_path, lock, feature_rows(control_gap=1e-9)))
    inv = {i["id"]: i for i in data["invalidators"]}
    assert rc == 3 and inv["controls"]["fired"] and "control block outage=none #0" in inv["controls"]["detail"]
    assert all([r["id"] for r in g["refused_by"]] == ["controls"] for g in data["gates"])


@pytest.fixture
def cadence(tmp_path):
    return freeze(tmp_path, shared_example_path("cadence-energy.yaml").read_bytes(), "cadence.yaml")


def cadence_rows(period_ms: float = 100.0, achieved_ms: float = 10.0) -> list[dict]:
    rng = np.random.default_rng(7)
    rows = []
    for block in range(1, 9):
        base = 1000 + 50 * rng.standard_normal()
        cells = {"dense_restart": 1.30, "dense_sparse": 1.0, "sparse_restart": 1.10, "sparse_sparse": 0.95}
        for arm, factor in cells.items():
            rows.append(
                {
                    "arm": arm,
                    "block": block,
                    "final_nll": round(
                        2.0 + 0.001 * rng.standard_normal() - (0.002 if arm == "sparse_sparse" else 0), 6
                    ),
                    "energy": base * factor * (1 + 0.02 * rng.standard_normal()),
                    "energy_counter.effective_period_ms": period_ms,
                    "energy_counter.requested_poll_ms": 10.0,
                    "energy_counter.achieved_poll_ms": achieved_ms,
                    "energy_counter.bound": 0.5,
                }
            )
    return rows


@pytest.mark.subprocess
def test_cadence_plan_signflip_wilcoxon_interaction_holm(tmp_path, cadence):
    rc, data = evaluate(cadence, imported(tmp_path, cadence, cadence_rows()))
    g = gates_by_id(data)
    assert rc == 0, data["decision_reason"]
    assert g["energy_interaction"]["verdict"] == "pass" and g["energy_interaction"]["lower"] > 0
    assert g["sparse_saves_energy"]["method"] == "wilcoxon" and g["sparse_saves_energy"]["attained_confidence"]
    assert g["sparse_keeps_learning"]["method"] == "signflip" and g["sparse_keeps_learning"]["n_pairs"] == 8
    raw = [g[k]["pvalue"] for k in ("energy_interaction", "sparse_saves_energy", "sparse_keeps_learning")]
    adjusted = [g[k]["pvalue_adjusted"] for k in ("energy_interaction", "sparse_saves_energy", "sparse_keeps_learning")]
    from statsmodels.stats.multitest import multipletests  # lazy: statsmodels takes a second to import

    assert adjusted == pytest.approx(list(multipletests(raw, method="holm")[1]), abs=1e-12)
    inv = {i["id"]: i for i in data["invalidators"]}
    assert not inv["counter_period"]["fired"] and not inv["logger_keeps_up"]["fired"]


@pytest.mark.subprocess
def test_sensor_period_and_logger_calibration_fire(tmp_path, cadence):
    rc, data = evaluate(cadence, imported(tmp_path, cadence, cadence_rows(period_ms=495.0, achieved_ms=20.0)))
    inv = {i["id"]: i for i in data["invalidators"]}
    assert rc == 3 and inv["counter_period"]["fired"] and inv["counter_period"]["observed"] == 495.0
    assert inv["logger_keeps_up"]["fired"] and inv["logger_keeps_up"]["observed"] == 2.0
    g = gates_by_id(data)
    assert [r["id"] for r in g["energy_interaction"]["refused_by"]] == ["counter_period", "logger_keeps_up"]
    assert g["sparse_keeps_learning"]["verdict"] == "pass"  # not blocked by the energy invalidators


def _outcome(gid: str, p: float | None, verdict: str = "pass", role: str = "primary") -> GateOutcome:
    plan = parse_plan(shared_example_path("equal-work.yaml").read_bytes()).plan
    gate = plan.gates[0].model_copy(update={"id": gid, "role": role})
    return GateOutcome(gate=gate, verdict=verdict, scale="difference", evidence="measured", pvalue=p)


def test_holm_demotes_a_pass_that_does_not_survive():
    outcomes = [
        _outcome("a", 0.04),
        _outcome("b", 0.045),
        _outcome("c", 0.001),
        _outcome("s", 0.2, "fail", "sensitivity"),
    ]
    apply_multiplicity(outcomes, "holm")
    assert [o.verdict for o in outcomes] == ["fail", "fail", "pass", "fail"]
    assert [o.pvalue_adjusted for o in outcomes[:3]] == pytest.approx([0.08, 0.08, 0.003])  # Holm by hand
    assert outcomes[3].pvalue_adjusted is None and "not after holm" in outcomes[0].notes[0]
    assert decide(outcomes)[0] == "not_supported"


def test_refused_gates_count_in_the_family_with_p_1():
    outcomes = [_outcome("a", 0.01), _outcome("r", None, "refused")]
    apply_multiplicity(outcomes, "bonferroni")
    assert outcomes[0].pvalue_adjusted == pytest.approx(0.02) and outcomes[0].verdict == "pass"
    assert decide(outcomes) == ("refused", "gate r is refused")


def test_decision_rules():
    assert decide([_outcome("a", 0.01), _outcome("v", None, "vacuous")])[0] == "supported"
    assert decide([_outcome("a", 0.01, "fail"), _outcome("u", None, "unresolvable")])[0] == "refused"
    assert decide([_outcome("a", 0.01), _outcome("s", 0.5, "refused", "sensitivity")])[0] == "supported"


@pytest.mark.subprocess
def test_predecessors_are_checked(tmp_path):
    earlier = tmp_path / "pilot-evaluation.json"
    earlier.write_text('{"pilot": true}\n')
    import hashlib

    digest = hashlib.sha256(earlier.read_bytes()).hexdigest()
    preds = (
        f"predecessors:\n  - {{path: pilot-evaluation.json, sha256: {digest}, changes: tighter margin}}\n"
        f"  - {{path: gone.json, sha256: '{'0' * 64}', changes: none}}\n"
        f"  - {{path: pilot-evaluation.json, sha256: '{'1' * 64}', changes: wrong hash}}\n"
    ).encode()
    lock = freeze(tmp_path, FEATURES + preds)
    _, data = evaluate(lock, imported(tmp_path, lock, feature_rows()))
    assert [p["status"] for p in data["predecessors"]] == ["verified", "missing", "mismatch"]
