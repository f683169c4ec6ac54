"""Write examples/aa_pair/runs.csv: the runs of examples/aa_pair.yaml (3 arms x 8 blocks), deterministic.

``restart_again`` repeats ``restart`` with the run-to-run noise of a nondeterministic reduction
(a few 1e-4 nats, no systematic part): a pipeline that manufactures no difference.
Run: ``python examples/aa_pair/make_runs.py``.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def rows(seed: int = 42) -> list[dict[str, object]]:
    """The table's rows, block by block."""
    rng = np.random.default_rng(seed)
    out: list[dict[str, object]] = []
    for site in range(4):
        for step in (70, 130):
            base = 2.40 + 0.05 * site + (0.02 if step == 130 else 0.0)
            values = {
                "restart": base,
                "continue": base + 0.004 + 0.003 * rng.standard_normal(),
                "restart_again": base + 0.0005 * rng.standard_normal(),
            }
            for arm, value in values.items():
                out.append({"arm": arm, "fail_site": site, "fail_step": step, "final_nll": round(value, 6)})
    return out


def main() -> None:
    table = rows()
    with open(HERE / "runs.csv", "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=list(table[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(table)


if __name__ == "__main__":
    main()
