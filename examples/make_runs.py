"""Write the SYNTHETIC example table examples/runs/continuation.csv (seeded; illustration only).

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
            rows.append({
                "arm": arm, "outage_site": site, "seed": seed,
                "final_nll": round(nll + (0.004 + 0.006 * rng.standard_normal() if cont else 0.0), 5),
                "attempted_flop": f"{flop * (0.91 * (1 + 0.01 * rng.standard_normal()) if cont else 1.0):.6e}",
                "energy": round(e, 1),
                "energy_counter.updates": int(seconds * 1000 / 100),
                "energy_counter.effective_period_ms": 100.0,
                "energy_counter.requested_poll_ms": 20.0,
                "energy_counter.achieved_poll_ms": round(20.0 + abs(rng.normal(0, 0.3)), 2),
                "energy_counter.bound": 60.0,  # J: two counter steps at ~300 W over 100 ms
            })
out = Path(__file__).with_name("runs") / "continuation.csv"
out.parent.mkdir(exist_ok=True)
with open(out, "w", newline="") as fh:
    writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
print(f"wrote {out} ({len(rows)} runs)")
