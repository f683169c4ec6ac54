"""Write the SYNTHETIC example run tables in examples/runs/ (seeded; illustration only).

* continuation.csv for examples/continuation.yaml (the claim is supported);
* equal-work.csv for tests/fixtures/shared_examples/equal-work.yaml (short runs: the energy counter updates
  too few times, so counter_support fires and the claim is refused);
* cadence-energy.csv for tests/fixtures/shared_examples/cadence-energy.yaml (sparse continuation costs held-out
  NLL, so the claim is not supported).

Run: python examples/make_runs.py
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

rng = np.random.default_rng(20261129)
rows = []
for site in (0, 1, 2):
    for seed in (101, 102, 103):
        nll = 3.10 + 0.02 * rng.standard_normal()
        flop = 4.0e15 * (1 + 0.01 * rng.standard_normal())
        energy = 52_000 * (1 + 0.03 * rng.standard_normal())
        for arm in ("restart", "continue"):
            cont = arm == "continue"
            e = energy * (0.88 * (1 + 0.02 * rng.standard_normal()) if cont else 1.0)
            seconds = e / 300.0  # about 300 W
            rows.append(
                {
                    "arm": arm,
                    "outage_site": site,
                    "seed": seed,
                    "final_nll": round(nll + (0.004 + 0.006 * rng.standard_normal() if cont else 0.0), 5),
                    "attempted_flop": f"{flop * (0.91 * (1 + 0.01 * rng.standard_normal()) if cont else 1.0):.6e}",
                    "energy": round(e, 1),
                    "energy_counter.updates": int(seconds * 1000 / 100),
                    "energy_counter.effective_period_ms": 100.0,
                    "energy_counter.requested_poll_ms": 20.0,
                    "energy_counter.achieved_poll_ms": round(20.0 + abs(rng.normal(0, 0.3)), 2),
                    "energy_counter.bound": 60.0,  # J: two counter steps at ~300 W over 100 ms
                }
            )


def write(name: str, table: list[dict]) -> None:
    out = Path(__file__).with_name("runs") / name
    out.parent.mkdir(exist_ok=True)
    with open(out, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(table[0]))
        writer.writeheader()
        writer.writerows(table)
    print(f"wrote {out} ({len(table)} runs)")


write("continuation.csv", rows)

equal = []
for site in (0, 1, 2):
    for seed in (101, 102):
        nll = 3.0 + 0.02 * rng.standard_normal()
        energy = 1_800 * (1 + 0.03 * rng.standard_normal())  # short runs: about 6 s at 300 W
        for arm in ("fixed", "adaptive"):
            adaptive = arm == "adaptive"
            e = energy * (0.9 * (1 + 0.02 * rng.standard_normal()) if adaptive else 1.0)
            equal.append(
                {
                    "arm": arm,
                    "outage_site": site,
                    "seed": seed,
                    "final_nll": round(nll + (0.003 + 0.004 * rng.standard_normal() if adaptive else 0.0), 5),
                    "attempted_flop": f"{1e14 * (0.92 * (1 + 0.01 * rng.standard_normal()) if adaptive else 1.0):.6e}",
                    "ticks": 400 + int(20 * rng.standard_normal()),
                    "energy": round(e, 1),
                    "energy_counter.updates": int(e / 300 * 1000 / 495),  # a counter that moves every ~495 ms
                    "energy_counter.effective_period_ms": 495.0,
                    "energy_counter.bound": 300.0,
                }
            )
write("equal-work.csv", equal)

cadence = []
for block in range(1, 9):
    base = 40_000 * (1 + 0.05 * rng.standard_normal())
    nll = 3.2 + 0.02 * rng.standard_normal()
    cells = {
        "dense_restart": (1.25, 0.0),
        "dense_sparse": (1.0, 0.02),
        "sparse_restart": (1.08, 0.0),
        "sparse_sparse": (0.97, 0.02),
    }
    for arm, (factor, nll_cost) in cells.items():
        cadence.append(
            {
                "arm": arm,
                "block": block,
                "final_nll": round(nll + nll_cost + 0.003 * rng.standard_normal(), 5),
                "energy": round(base * factor * (1 + 0.02 * rng.standard_normal()), 1),
                "energy_counter.effective_period_ms": 100.0,
                "energy_counter.requested_poll_ms": 20.0,
                "energy_counter.achieved_poll_ms": round(20.0 + abs(rng.normal(0, 0.5)), 2),
                "energy_counter.bound": 60.0,
            }
        )
write("cadence-energy.csv", cadence)
