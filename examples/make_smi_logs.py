"""Write the SYNTHETIC runs of examples/byo-smi.yaml: a table of runs made elsewhere and one
nvidia-smi power log per run (seeded; illustration only, not a measurement).

* examples/runs/byo-smi.csv: one row per run (arm, site, seed, run_id, final_nll, attempted_flop),
  the energy column left out: `collect import --telemetry` fills it from each run's log;
* examples/runs/byo-smi-logs/<run_id>.nvidia-smi.csv: what
  `nvidia-smi --query-gpu=timestamp,index,power.draw,power.draw.instant,utilization.gpu,memory.used
  --format=csv -lms 100` would have printed during the run, from the known power curve of
  collect/telemetry/logs/synthetic.py (scaled per run); restarting redoes lost steps, so its runs
  are longer and use more energy.

Run from the repository root: python examples/make_smi_logs.py [--out FOLDER]
"""

from __future__ import annotations

import argparse
import csv
import random
from datetime import timedelta
from pathlib import Path

from collect.telemetry.logs.synthetic import START, nvidia_smi_log

SITES = (0, 1, 2, 3)
SEEDS = (101, 102)


def rows_and_logs() -> tuple[list[dict], dict[str, str]]:
    """The table's rows and ``{file name: log text}``, the same on every call."""
    rng = random.Random(20261203)
    rows, logs = [], {}
    for site in SITES:
        for seed in SEEDS:
            seconds = 9.0 * (1 + 0.03 * rng.gauss(0, 1))  # an uninterrupted run's length
            watts = 1 + 0.04 * rng.gauss(0, 1)  # this block's GPU draws a little more or less
            nll = 2.90 + 0.03 * rng.gauss(0, 1)
            flop = 2.0e15 * (1 + 0.01 * rng.gauss(0, 1))
            for arm in ("restart", "continue"):
                if arm == "restart":  # restore, then redo the steps lost since the checkpoint
                    redo = 1.06 + 0.08 * rng.random()  # the share of the run redone depends on where the checkpoint was
                    length, run_nll, run_flop = seconds * redo, nll, flop * redo
                else:  # survivors carry on: no redone step, a shorter run
                    length = seconds * (0.98 + 0.02 * rng.random())
                    run_nll, run_flop = nll + 0.004 + 0.004 * rng.gauss(0, 1), flop * (0.97 + 0.01 * rng.random())
                run_id = f"gpu-{site}-{seed}-{arm}"
                rows.append(
                    {
                        "run_id": run_id,
                        "arm": arm,
                        "site": site,
                        "seed": seed,
                        "final_nll": round(run_nll, 5),
                        "attempted_flop": f"{run_flop:.6e}",
                    }
                )
                begin = START + timedelta(minutes=len(logs))
                logs[f"{run_id}.nvidia-smi.csv"] = nvidia_smi_log(
                    round(length, 2), poll_ms=100.0, scale=watts, start=begin
                )
    return rows, logs


def write_runs(out: Path, stem: str, rows: list[dict], logs: dict[str, str]) -> None:
    """Write ``<stem>.csv`` (the rows) and ``<stem>-logs/`` (one file per log) into ``out``."""
    folder = out / f"{stem}-logs"
    folder.mkdir(parents=True, exist_ok=True)
    with open(out / f"{stem}.csv", "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    for name, text in logs.items():
        (folder / name).write_text(text)
    print(f"wrote {out / f'{stem}.csv'} ({len(rows)} runs) and {len(logs)} logs in {folder}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Write the synthetic runs of examples/byo-smi.yaml.")
    parser.add_argument(
        "--out",
        type=Path,
        default=Path(__file__).with_name("runs"),
        help="folder of byo-smi.csv and byo-smi-logs/ (default: examples/runs)",
    )
    args = parser.parse_args(argv)
    write_runs(args.out, "byo-smi", *rows_and_logs())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
