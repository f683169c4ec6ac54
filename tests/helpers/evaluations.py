"""A realistic evaluation built in code (no gates run): every verdict, a ratio gate, an infinite
interval end, invalidators fired and not, a post-data amendment, a sensitivity gate."""

from __future__ import annotations

from typing import Any

from gates.artifact import (
    AmendmentSummary,
    BlockRow,
    Evaluation,
    GateResult,
    GroupTally,
    InvalidatorResult,
    LedgerIdentity,
    PredecessorCheck,
    Resolution,
    RunAccounting,
)
from gates.refusal import Refusal

CLAIM = "Continuing on the surviving sites is noninferior in held-out loss and saves energy."
PLAN_SHA = "3f2a9c81d4e5b6a7980112233445566778899aabbccddeeff00112233445566"
GENESIS_SHA = "aa11bb22cc33dd44ee55ff6677889900aabbccddeeff00112233445566778899"


def gate(**overrides: Any) -> GateResult:
    """A passing difference gate unless overridden."""
    fields: dict[str, Any] = dict(
        id="nll_noninferior",
        metric="final_nll",
        unit="nats",
        contrast="adaptive - fixed",
        scale="difference",
        role="primary",
        group="quality",
        verdict="pass",
        estimate=0.0042,
        lower=-0.0011,
        upper=0.0093,
        confidence=0.9,
        method="t",
        n_pairs=6,
        rule="upper < 0.02",
        margin=[0.02],
        null=0.0,
        pvalue=0.0031,
        pvalue_adjusted=0.0124,
        evidence="measured",
        arm_medians={"fixed": 2.5004, "adaptive": 2.5046},
    )
    fields.update(overrides)
    return GateResult(**fields)


def realistic_evaluation() -> Evaluation:
    """Five primary gates (pass, fail, refused ratio, vacuous, unresolvable) and one sensitivity gate."""
    gates = [
        gate(),
        gate(
            id="work_saved",
            metric="attempted_flop",
            unit="FLOP",
            group="mechanism",
            verdict="fail",
            estimate=-2.1e13,
            lower=-5.3e13,
            upper=1.1e13,
            rule="upper < 0.0",
            margin=[0.0],
            method="signflip",
            attained_confidence=0.9375,
            pvalue=0.094,
            pvalue_adjusted=0.28,
            arm_medians={"fixed": 1.0e15, "adaptive": 9.8e14},
        ),
        gate(
            id="energy_saving",
            metric="energy",
            unit="J",
            contrast="adaptive / fixed",
            scale="ratio",
            group="mechanism",
            verdict="refused",
            estimate=0.91,
            lower=0.83,
            upper="Infinity",
            rule="upper < 1.0",
            margin=[1.0],
            null=1.0,
            method="wilcoxon",
            n_pairs=3,
            pvalue=0.125,
            pvalue_adjusted=None,
            refused_by=[Refusal(kind="invalidator", id="counter_support", reason="invalidator counter_support fired")],
            notes=["refused: the interval above is a diagnostic, not evidence"],
            warnings=["n < 10: bootstrap intervals under-cover; prefer exact methods"],
            arm_medians={"fixed": 5012.0, "adaptive": 4561.0},
        ),
        gate(
            id="no_phase_loss",
            metric="lost_steps",
            unit="steps",
            group="mechanism",
            verdict="vacuous",
            estimate=0.0,
            lower=0.0,
            upper=0.0,
            rule="upper <= 0.0",
            margin=[0.0],
            pvalue=None,
            pvalue_adjusted=None,
            notes=["every block's contrast is the same value: no variability, so the rule could not have failed"],
            arm_medians={"fixed": 0.0, "adaptive": 0.0},
        ),
        gate(
            id="phase_energy",
            metric="restart_energy",
            unit="J",
            group=None,
            verdict="unresolvable",
            estimate=-1.5,
            lower=-3.2,
            upper=0.4,
            rule="within [-2.0, 2.0]",
            margin=[-2.0, 2.0],
            pvalue=0.21,
            pvalue_adjusted=0.42,
            resolution=Resolution(interval_bound=1.8, could_change=True, extremes=[[-5.0, 2.2], [-1.4, -1.4]]),
            notes=[
                "the energy_counter measurement bounds could move the interval by 1.8 (analysis scale), "
                "enough to change the rule's outcome"
            ],
            arm_medians={"fixed": 40.2, "adaptive": 38.9},
        ),
        gate(
            id="nll_all_strata",
            role="sensitivity",
            group=None,
            method="bootstrap",
            n_pairs=8,
            estimate=0.0051,
            lower="-Infinity",
            upper=0.012,
            pvalue=0.02,
            pvalue_adjusted=None,
            evidence="modeled",
            warnings=["n < 10: bootstrap intervals under-cover"],
        ),
    ]
    return Evaluation(
        schema="gates/evaluation/v2",
        prereg_sha256=PLAN_SHA,
        genesis_plan_sha256=GENESIS_SHA,
        study="multisite-recovery",
        title="Continue on survivors vs restart from checkpoint after a site outage",
        claim=CLAIM,
        scope="Two-site clusters only; outages of one site at a time; no network partitions.",
        frozen_at="2025-03-01T12:00:00Z",
        amendments=[
            AmendmentSummary(
                version=2,
                amended_at="2025-03-04T09:30:00Z",
                reason="fix the unit of energy",
                post_data=False,
                runs_checked=True,
            ),
            AmendmentSummary(
                version=3,
                amended_at="2025-03-09T17:05:00Z",
                reason="widen the NLL margin to 0.02",
                post_data=True,
                runs_checked=True,
            ),
        ],
        ledger=LedgerIdentity(
            path="runs/ledger.jsonl",
            sha256="b7e1" * 16,
            records=13,
            torn_tail=False,
            chain="intact",
            head_sha256="c0de" * 16,
        ),
        runs=RunAccounting(
            planned=12, matched=11, missing=["site2-seed102/adaptive"], duplicate=["r-0007"], other_plan=["r-0013"]
        ),
        decision="refused",
        decision_reason="gate energy_saving is refused; gate phase_energy is unresolvable",
        multiplicity="holm",
        gates=gates,
        groups={
            "quality": GroupTally(total=1, counts={"pass": 1}),
            "mechanism": GroupTally(total=3, counts={"fail": 1, "refused": 1, "vacuous": 1}),
        },
        invalidators=[
            InvalidatorResult(
                id="counter_support",
                kind="counter_support",
                fired=True,
                observed=12.0,
                threshold=50.0,
                detail="2 run(s) with updates below 50; worst r-0004: 12",
                blocks=["energy_saving"],
            ),
            InvalidatorResult(
                id="nll_bounds",
                kind="metric_bounds",
                fired=False,
                observed=2.61,
                threshold="[0, 10]",
                detail="every final_nll within [0, 10]",
                blocks=["nll_noninferior", "nll_all_strata"],
            ),
        ],
        blocks=[
            BlockRow(
                block="outage_site=0,seed=101",
                stratum={"outage_site": 0, "seed": 101},
                replicate=1,
                contrasts={"nll_noninferior": 0.004, "energy_saving": 0.9},
                values={
                    "final_nll": {"fixed": 2.503, "adaptive": 2.507},
                    "energy": {"fixed": 5000.0, "adaptive": 4500.0},
                },
            ),
            BlockRow(
                block="outage_site=1,seed=101",
                stratum={"outage_site": 1, "seed": 101},
                replicate=1,
                contrasts={"nll_noninferior": None, "energy_saving": None},
                values={"final_nll": {"fixed": 2.498, "adaptive": None}, "energy": {"fixed": 5100.0, "adaptive": None}},
            ),
        ],
        predecessors=[
            PredecessorCheck(
                path="results/pilot/evaluation.json",
                sha256="c0ffee" * 10 + "abcd",
                changes="pilot had 3 strata; now 6",
                status="verified",
            ),
            PredecessorCheck(
                path="results/old/evaluation.json", sha256="dead" * 16, changes="first attempt", status="mismatch"
            ),
        ],
        toolkit_version="0.1.0",
        evaluated_at="2025-03-10T08:00:00Z",
    )


def supported_evaluation() -> Evaluation:
    """Three primary gates, all passed, one vacuous; no invalidator fired."""
    ev = realistic_evaluation()
    gates = [
        ev.gates[0],
        ev.gates[3],
        gate(
            id="energy_saving",
            metric="energy",
            unit="J",
            contrast="adaptive / fixed",
            scale="ratio",
            estimate=0.9,
            lower=0.85,
            upper=0.95,
            rule="upper < 1.0",
            margin=[1.0],
            null=1.0,
        ),
    ]
    return ev.model_copy(
        update={
            "gates": gates,
            "decision": "supported",
            "decision_reason": "all 3 primary gates passed",
            "invalidators": [ev.invalidators[1]],
            "groups": {},
            "amendments": [],
        }
    )


def not_supported_evaluation() -> Evaluation:
    """Two primary gates: one passes, one fails."""
    ev = realistic_evaluation()
    return ev.model_copy(
        update={
            "gates": ev.gates[:2],
            "decision": "not_supported",
            "decision_reason": "gate work_saved failed",
            "invalidators": [],
            "groups": {},
            "predecessors": [],
            "scope": None,
        }
    )
