"""The faults_landed invalidator on matched blocks (records stand in as plain objects)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gates.fault_check import check_faults_landed


@dataclass
class _Rec:
    run_id: str
    code: dict[str, Any] = field(default_factory=dict)


@dataclass
class _Block:
    label: str
    records: dict[str, _Rec]


@dataclass
class _Match:
    blocks: dict[str, _Block]


def _faults(planned: list[float], landed: list[bool], why: str = "the program had finished before it") -> dict:
    return {
        "faults": {
            "planned": planned,
            "record": [
                {"planned": p, "landed": ok, "why": "" if ok else why} for p, ok in zip(planned, landed, strict=True)
            ],
        }
    }


def _match(*blocks: dict[str, dict]) -> Any:
    return _Match(
        {
            f"b{i}": _Block(f"b{i}", {arm: _Rec(f"r{i}{arm}", code) for arm, code in b.items()})
            for i, b in enumerate(blocks)
        }
    )


def test_passes_when_every_arm_met_the_same_faults_and_each_landed() -> None:
    fired, observed, detail = check_faults_landed(
        _match(
            {"a": _faults([7, 13], [True, True]), "b": _faults([7, 13], [True, True])},
            {"a": _faults([], []), "b": _faults([], [])},  # a control stratum: no fault in any arm
        )
    )
    assert not fired and observed == 0 and "a 2/2, b 2/2" in detail


def test_fires_when_the_arms_met_different_faults() -> None:
    fired, _, detail = check_faults_landed(_match({"a": _faults([7], [True]), "b": _faults([9], [True])}))
    assert fired and "different planned faults" in detail and "b0" in detail


def test_fires_when_a_planned_fault_did_not_land_and_names_why() -> None:
    fired, observed, detail = check_faults_landed(
        _match({"a": _faults([7, 300], [True, False]), "b": _faults([7, 300], [True, True])})
    )
    assert fired and observed == 1 and "fault at 300 (the program had finished before it)" in detail
    assert "a 1/2, b 2/2" in detail


def test_fires_when_a_run_records_no_faults() -> None:
    fired, _, detail = check_faults_landed(_match({"a": _faults([7], [True]), "b": {}}))
    assert fired and "record no planned faults" in detail and "r0b" in detail
