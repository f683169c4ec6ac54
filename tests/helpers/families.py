"""A synthetic controller study (calibration and held-out families x bandwidth regions) and its runs,
evaluated through the console scripts."""

from __future__ import annotations

import json
import math
from pathlib import Path

from tests.helpers import run, write_csv

PLAN = """\
schema: prereg/v1
study: ctl-synth
title: Synthetic controller study
hypothesis: The challenger finishes sooner than the comparator on every held-out family.
arms:
  fast: {}
  slow: {}
  ctl: {}
strata:
  factors:
    family: [cal_a, cal_b, held_x, held_y, held_z]
    region: [low, high]
  replicates: 3
  analysis_unit: replicate
  family_factor: family
  region_factors: {region: bandwidth}
  calibration: [{family: cal_a}, {family: cal_b}]
  held_out: [{family: held_x}, {family: held_y}, {family: held_z}]
comparator:
  candidates: [slow, fast]
  challenger: ctl
  metric: time
  tie_break: [nll]
metrics:
  time: {unit: s, better: lower, evidence: measured}
  nll: {unit: nats, better: lower, evidence: measured}
  bandwidth: {unit: Mbit/s, better: higher, evidence: measured}
invalidators:
  - {id: sane_nll, kind: metric_bounds, metric: nll, min: 0, max: 10, blocks: all}
gates:
  - {id: sooner, metric: time, contrast: ctl / comparator, method: t, confidence: 0.9, pass_if: upper < 1.0}
  - {id: learning, metric: nll, contrast: ctl - comparator, method: t, confidence: 0.9, pass_if: upper < 0.1}
decision:
  claim: The challenger is sooner on every held-out family.
"""


FAMILIES = ["cal_a", "cal_b", "held_x", "held_y", "held_z"]


REGIONS = ["low", "high"]


BW = {"low": [1.0, 2.0, 4.0], "high": [8.0, 16.0, 32.0]}


JITTER = [0.01, -0.02, 0.015, -0.005, 0.02, -0.01]


def rows(
    ratio: dict[str, float] | None = None,
    times: dict[str, float] | None = None,
    trend: dict[str, tuple[float, float]] | None = None,
    drop: tuple | None = None,
) -> list[dict]:
    """Runs for every cell: ``times`` per arm (base), the challenger's ``ratio`` to fast per family,
    ``trend`` (family -> (ratio at the lowest bandwidth, at the highest)) and ``drop`` one cell."""
    ratio = ratio or {}
    times = {"fast": 10.0, "slow": 20.0, **(times or {})}
    out = []
    for fam in FAMILIES:
        for reg in REGIONS:
            for rep in range(3):
                bw = BW[reg][rep]
                j = JITTER[(FAMILIES.index(fam) + rep) % 6]
                base = {"family": fam, "region": reg, "replicate": rep}
                for arm in ("fast", "slow", "ctl"):
                    if drop == (fam, reg, rep, arm):
                        continue
                    t = times.get(arm, times["fast"]) * (1 + j) if arm != "ctl" else times["fast"] * (1 + j)
                    if arm == "ctl":
                        r = ratio.get(fam, 0.8) * (
                            1 + JITTER[(FAMILIES.index(fam) + rep + 3 * REGIONS.index(reg)) % 6] / 3
                        )
                        if trend and fam in trend:
                            lo, hi = trend[fam]
                            x = (math.log(bw) - math.log(1.0)) / (math.log(32.0) - math.log(1.0))
                            r = lo * (hi / lo) ** x * (1 + j / 10)
                        t = times["fast"] * (1 + j) * r
                    out.append(
                        {
                            **base,
                            "arm": arm,
                            "time": round(t, 9),
                            "nll": 2.0
                            + j / 10
                            + (
                                0.01 + JITTER[(FAMILIES.index(fam) + rep + 1 + REGIONS.index(reg)) % 6] / 20
                                if arm == "ctl"
                                else 0
                            ),
                            "bandwidth": bw,
                        }
                    )
    return out


def evaluate(tmp_path: Path, table: list[dict], name: str = "runs") -> dict:
    """Freeze ``PLAN`` (once per folder), import ``table`` into ``tmp_path/name``, evaluate: the artifact."""
    plan = tmp_path / "plan.yaml"
    if not plan.exists():
        plan.write_text(PLAN)
        proc = run("prereg", "freeze", str(plan))
        assert proc.returncode == 0, proc.stderr
    lock = tmp_path / "plan.lock.json"
    csv = write_csv(tmp_path / f"{name}.csv", table)
    proc = run("collect", "import", str(csv), "--lock", str(lock), "--out", str(tmp_path / name))
    assert proc.returncode == 0, proc.stderr
    proc = run("gates", "evaluate", str(lock), str(tmp_path / name))
    assert proc.returncode in (0, 1, 3), proc.stderr
    return json.loads((tmp_path / name / "evaluation.json").read_text())
