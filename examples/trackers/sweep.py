"""A plain PyTorch sweep that logs to the trackers a lab already uses (docs/trackers.md).

Trains every planned run of ``collect plan LOCK --format json`` with ``examples/byo/train.py`` (a small
MLP through one simulated site failure) and logs each run's metrics, at the last training step, to
MLflow (``--mlflow URI``), to TensorBoard (``--tensorboard DIR``: one run folder per planned run, named by
its run id) and to a CSV table (``--csv FILE``). Each tracker run carries the tag ``prereg.run_id``.
Needs torch, and mlflow / tensorboard for those sinks; not the toolkit.

    python examples/trackers/sweep.py demo/trk-planned.json --mlflow sqlite:///demo/trk-mlflow.db \\
        --tensorboard demo/trk-tb --csv demo/trk-runs.csv
"""

from __future__ import annotations

import argparse
import csv
import json
import logging
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "byo"))
import train  # noqa: E402 - examples/byo/train.py, the researcher's own script

METRIC_KEYS = {"final_nll": "eval/nll", "attempted_steps": "attempted_steps", "lost_steps": "lost_steps"}


def train_run(run: dict) -> dict[str, float]:
    """One planned run trained; its metrics (examples/byo/train.py's JSON)."""
    p = run["params"]
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "metrics.json"
        argv = ["--policy", p["policy"], "--seed", str(run["seed"]), "--metrics", str(out)]
        argv += ["--fail-site", str(p["fail_site"]), "--fail-step", str(p["fail_step"]), "--steps", str(p["steps"])]
        train.main(argv)
        return json.loads(out.read_text())


def main() -> int:
    a = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    a.add_argument("planned", help="collect plan LOCK --format json, saved to a file")
    a.add_argument("--mlflow", metavar="URI")
    a.add_argument("--tensorboard", metavar="DIR")
    a.add_argument("--csv", metavar="FILE")
    args = a.parse_args()
    planned = json.loads(Path(args.planned).read_text())["runs"]
    if args.mlflow:
        import mlflow

        logging.getLogger("mlflow").setLevel(logging.WARNING)
        mlflow.set_tracking_uri(args.mlflow)
        mlflow.set_experiment("byo-trackers")
    rows = []
    for run in planned:
        metrics = train_run(run)
        steps = run["params"]["steps"]
        tags = {"prereg.run_id": run["run_id"], "prereg.arm": run["arm"], "prereg.seed": str(run["seed"])}
        if args.mlflow:
            with mlflow.start_run(run_name=f"{run['arm']}-site{run['params']['fail_site']}"):
                mlflow.set_tags(tags)
                mlflow.log_params({"policy": run["params"]["policy"], "seed": run["seed"]})
                for name, key in METRIC_KEYS.items():
                    mlflow.log_metric(key, metrics[name], step=steps)
        if args.tensorboard:
            from torch.utils.tensorboard import SummaryWriter

            with SummaryWriter(log_dir=os.path.join(args.tensorboard, run["run_id"])) as writer:
                for name, key in METRIC_KEYS.items():
                    writer.add_scalar(key, metrics[name], global_step=steps)
        rows.append(
            {
                "run_id": run["run_id"],
                **run["stratum"],
                "arm": run["arm"],
                "seed": run["seed"],
                **{name: metrics[name] for name in METRIC_KEYS},
            }
        )
    if args.csv:
        with open(args.csv, "w", newline="") as fh:
            writer_csv = csv.DictWriter(fh, fieldnames=list(rows[0]))
            writer_csv.writeheader()
            writer_csv.writerows(rows)
    print(f"trained and logged {len(rows)} runs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
