"""Whether the machine or the cluster has what the plan's runs ask for, checked before any run.

Each planned run carries its demand ``{num_cpus, num_gpus, custom}`` (``prereg.schema_resources``).

* The local executor (in-process, or the process pool) runs on this machine: a run asking for more
  CPUs than this process may use (its affinity), or for GPUs this machine does not show
  (``visible_gpus``), is refused. Custom resources are Ray's node labels and are not checked here.
* On Ray, every distinct demand must fit on at least one alive node (its total resources: a run
  never spans nodes); otherwise :class:`ResourcesMissing` names each demand, the cells that ask for
  it, and the most any node has of what is missing.

``ResourcesMissing`` is an ``EngineError``: exit 2, nothing was run.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from collect.engine.runs import EngineError, PlannedRun

Demand = tuple[float, float, tuple[tuple[str, float], ...]]


class ResourcesMissing(EngineError):
    """The plan asks for resources the executor does not have (exit 2, nothing was run)."""


def demand_key(resources: Mapping[str, Any]) -> Demand:
    """A hashable form of one run's demand."""
    return (
        float(resources.get("num_cpus", 1.0)),
        float(resources.get("num_gpus", 0.0)),
        tuple(sorted((str(k), float(v)) for k, v in (resources.get("custom") or {}).items())),
    )


def ray_needs(key: Demand) -> dict[str, float]:
    """A demand as Ray resource names (``CPU``, ``GPU``, custom names) -> amount, zeros dropped."""
    cpus, gpus, custom = key
    needs = {"CPU": cpus, "GPU": gpus, **dict(custom)}
    return {k: v for k, v in needs.items() if v > 0}


def describe(key: Demand) -> str:
    cpus, gpus, custom = key
    parts = [f"num_cpus {cpus:g}", f"num_gpus {gpus:g}"] + [f"{k} {v:g}" for k, v in custom]
    return ", ".join(parts)


def _cells(runs: list[PlannedRun]) -> str:
    shown = "; ".join(f"arm {r.arm}, stratum {r.stratum}" for r in runs[:3])
    return f"{len(runs)} run(s) ({shown}{'; ...' if len(runs) > 3 else ''})"


def by_demand(runs: Iterable[PlannedRun]) -> dict[Demand, list[PlannedRun]]:
    """The runs grouped by demand, in plan order."""
    groups: dict[Demand, list[PlannedRun]] = {}
    for run in runs:
        groups.setdefault(demand_key(run.resources), []).append(run)
    return groups


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity where the OS has one)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def visible_gpus(environ: Mapping[str, str] | None = None) -> int:
    """NVIDIA GPUs this process can use: ``CUDA_VISIBLE_DEVICES`` when set (a comma list; empty or
    ``-1`` hides all), else the devices the driver lists (``/proc/driver/nvidia/gpus``); 0 without."""
    env = os.environ if environ is None else environ
    if "CUDA_VISIBLE_DEVICES" in env:
        listed = [d.strip() for d in env["CUDA_VISIBLE_DEVICES"].split(",") if d.strip()]
        visible = []
        for device in listed:
            if device.startswith("-"):  # CUDA stops at the first invalid entry
                break
            visible.append(device)
        return len(visible)
    folder = Path("/proc/driver/nvidia/gpus")
    try:
        return sum(1 for _ in folder.iterdir())
    except OSError:
        return 0


def check_local(runs: list[PlannedRun], cpus: int | None = None, gpus: int | None = None) -> None:
    """Refuse runs asking for more CPUs or GPUs than this machine gives one run (see the module doc)."""
    cpus = usable_cpus() if cpus is None else cpus
    gpus = visible_gpus() if gpus is None else gpus
    problems = []
    for key, group in by_demand(runs).items():
        need_cpus, need_gpus, _ = key
        if need_cpus > cpus:
            problems.append(f"{_cells(group)} ask for num_cpus {need_cpus:g}; this machine has {cpus} CPU(s)")
        if need_gpus > gpus:
            problems.append(f"{_cells(group)} ask for num_gpus {need_gpus:g}; this machine shows {gpus} GPU(s)")
    if problems:
        raise ResourcesMissing(
            "the plan asks for resources this machine lacks (experiment.resources; nothing was "
            "run):\n" + "\n".join(problems) + "\nrun it on a Ray cluster that has them "
            "(--executor ray --address ADDR), or lower the plan's resources"
        )


def check_cluster(runs: list[PlannedRun], nodes: list[dict[str, float]], where: str = "the Ray cluster") -> None:
    """Refuse demands that fit on no node of ``nodes`` (each alive node's total resources)."""
    problems = []
    for key, group in by_demand(runs).items():
        needs = ray_needs(key)
        if any(all(node.get(k, 0.0) >= v for k, v in needs.items()) for node in nodes):
            continue
        short = [
            f"{k} {v:g} (the most any node has: {max((n.get(k, 0.0) for n in nodes), default=0.0):g})"
            for k, v in needs.items()
            if not any(n.get(k, 0.0) >= v for n in nodes)
        ]
        lack = "; ".join(short) or "this combination (no single node has all of it)"
        problems.append(f"{_cells(group)} ask for {describe(key)}: missing {lack}")
    if problems:
        raise ResourcesMissing(
            f"the plan asks for resources {where} lacks ({len(nodes)} node(s) alive; "
            "experiment.resources; nothing was run):\n" + "\n".join(problems)
        )


__all__ = ["ResourcesMissing", "by_demand", "check_cluster", "check_local", "demand_key", "ray_needs", "visible_gpus"]
