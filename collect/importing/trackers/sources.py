"""Which reader reads a tracker source: ``mlflow:``, ``tensorboard:``, ``wandb:`` or ``raytune:``.

Each reader imports its tracker's package only when it reads (``collect.importing.trackers.base``).
"""

from __future__ import annotations

from collections.abc import Sequence

from collect.importing.trackers import mlflow_store, raytune_dir, tensorboard_dir, wandb_offline
from collect.importing.trackers.base import ReadOptions, Source, TrackerProblem, TrackerRun, Wanted


def read_source(source: Source, wanted: Sequence[Wanted], options: ReadOptions) -> list[TrackerRun]:
    """Every run the source holds (as narrowed by ``options``), read by that tracker's reader."""
    if source.tracker == "mlflow":
        return mlflow_store.read_runs(source.location, wanted, options)
    if options.experiment is not None or options.filter is not None:
        raise TrackerProblem(
            "--experiment and --filter narrow an MLflow store; a folder source is narrowed by its path"
        )
    reader = {"tensorboard": tensorboard_dir, "wandb": wandb_offline, "raytune": raytune_dir}[source.tracker]
    return reader.read_runs(source.location, wanted, options)


__all__ = ["read_source"]
