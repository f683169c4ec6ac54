"""Write the SYNTHETIC runs of examples/byo-dcgm.yaml: a table of 600 s runs made elsewhere and one
DCGM log per run (seeded; illustration only, not a measurement).

* examples/runs/byo-dcgm.csv: one row per run (arm, site, seed, run_id, final_nll),
  no energy column: `collect import --telemetry` fills it from each run's log;
* examples/runs/byo-dcgm-logs/<run_id>.dcgm.txt: what `dcgmi dmon -e 155,156` (POWER, the driver's
  1 s average, and TOTEC, the energy counter; one sample a second, dcgmi's default) would have
  printed during the run, from the known power curve of collect/telemetry/logs/synthetic.py
  (scaled per block: each site's GPU draws a little more or less); restarting redoes the steps
  lost since the checkpoint, so its runs are longer and use about 10% more energy.

Run from the repository root: python examples/make_dcgm_logs.py [--out FOLDER]
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

from make_smi_logs import write_runs  # examples/ is the script's folder, first on its path

from collect.telemetry.logs.synthetic import dcgm_log

SITES = (0, 1, 2, 3)
SEEDS = (101, 102)
RUN_S = 600.0  # an uninterrupted run's length


def rows_and_logs() -> tuple[list[dict], dict[str, str]]:
    """The table's rows and ``{file name: log text}``, the same on every call."""
    rng = random.Random(20261207)
    rows, logs = [], {}
    for site in SITES:
        for seed in SEEDS:
            seconds = RUN_S * (1 + 0.03 * rng.gauss(0, 1))
            watts = 1 + 0.04 * rng.gauss(0, 1)  # this block's GPU draws a little more or less
            nll = 2.90 + 0.03 * rng.gauss(0, 1)
            for arm in ("restart", "continue"):
                if arm == "restart":  # restore, then redo the steps lost since the checkpoint
                    redo = 1.08 + 0.04 * rng.random()
                    length, run_nll = seconds * redo, nll
                else:  # survivors carry on: no redone step
                    length = seconds * (0.99 + 0.01 * rng.random())
                    run_nll = nll + 0.004 + 0.004 * rng.gauss(0, 1)
                run_id = f"gpu-{site}-{seed}-{arm}"
                rows.append({"run_id": run_id, "arm": arm, "site": site, "seed": seed, "final_nll": round(run_nll, 5)})
                logs[f"{run_id}.dcgm.txt"] = dcgm_log(round(length, 1), delay_ms=1000.0, scale=watts, header_every=600)
    return rows, logs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Write the synthetic runs of examples/byo-dcgm.yaml.")
    parser.add_argument(
        "--out",
        type=Path,
        default=Path(__file__).with_name("runs"),
        help="folder of byo-dcgm.csv and byo-dcgm-logs/ (default: examples/runs)",
    )
    args = parser.parse_args(argv)
    write_runs(args.out, "byo-dcgm", *rows_and_logs())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
