"""A Ray cluster of several nodes on this one machine, to try ``--executor ray --address`` end to end.

    python -m collect.engine.local_cluster --nodes 3 -- collect run study.lock.json --out runs --executor ray

Each node (``ray.cluster_utils.Cluster``) has its own raylet and ``TMPDIR``; the command runs with ``RAY_ADDRESS``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class LocalCluster:
    """A running local cluster: its nodes, the folder holding their temporary folders."""

    cluster: Any
    root: Path
    nodes: list[Any] = field(default_factory=list)  # worker nodes, in the order added

    @property
    def address(self) -> str:
        return str(self.cluster.address)

    def add_node(self, cpus: float = 1, gpus: float = 0, resources: dict[str, float] | None = None) -> Any:
        """One more node, with its own temporary folder (``TMPDIR``)."""
        folder = self.root / f"node-{len(self.nodes) + 1}"
        folder.mkdir()
        node = self.cluster.add_node(
            num_cpus=cpus, num_gpus=gpus, resources=resources or {}, env_vars={"TMPDIR": str(folder)}
        )
        self.nodes.append(node)
        return node

    def remove_node(self, node: Any) -> None:
        """Kill a worker node's processes at once (as a machine that dies)."""
        self.cluster.remove_node(node, allow_graceful=False)
        self.nodes.remove(node)

    def shutdown(self) -> None:
        self.cluster.shutdown()
        shutil.rmtree(self.root, ignore_errors=True)


def start_local_cluster(
    nodes: int = 3, cpus_per_node: float = 1, head_cpus: float | None = None, gpus_on_last: float = 0
) -> LocalCluster:
    """A head plus ``nodes - 1`` worker nodes, fake GPUs on the last one."""
    from ray.cluster_utils import Cluster  # lazy: ray

    root = Path(tempfile.mkdtemp(prefix="prereg-cluster-"))
    head = root / "node-0"
    head.mkdir()
    cpus, gpus = cpus_per_node if head_cpus is None else head_cpus, gpus_on_last if nodes == 1 else 0
    args = {"num_cpus": cpus, "num_gpus": gpus, "include_dashboard": False, "env_vars": {"TMPDIR": str(head)}}
    cluster = Cluster(initialize_head=True, head_node_args=args)
    local = LocalCluster(cluster, root)
    try:
        for i in range(1, nodes):
            local.add_node(cpus_per_node, gpus_on_last if i == nodes - 1 else 0)
    except BaseException:
        local.shutdown()
        raise
    return local


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m collect.engine.local_cluster",
        description="Start a Ray cluster of several nodes on this machine, run a command against it, tear it down.",
    )
    parser.add_argument("--nodes", type=int, default=3, help="nodes, the head included (default 3)")
    parser.add_argument("--cpus-per-node", type=float, default=1, help="CPUs each node offers (default 1)")
    parser.add_argument("--head-cpus", type=float, help="CPUs the head offers (default: --cpus-per-node)")
    parser.add_argument("--gpus", type=float, default=0, help="fake GPUs on the last node (default 0)")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- the command to run (RAY_ADDRESS set)")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not 1 <= args.nodes <= 16:
        parser.error("--nodes must be 1..16")
    cluster = start_local_cluster(args.nodes, args.cpus_per_node, args.head_cpus, args.gpus)
    try:
        print(f"local Ray cluster of {args.nodes} node(s) at {cluster.address}", file=sys.stderr, flush=True)
        if not command:
            print("waiting; Ctrl-C ends it", file=sys.stderr, flush=True)
            try:
                while True:
                    time.sleep(3600)
            except KeyboardInterrupt:
                return 0
        return subprocess.call(command, env={**os.environ, "RAY_ADDRESS": cluster.address})
    except KeyboardInterrupt:
        return 130
    finally:
        cluster.shutdown()


if __name__ == "__main__":
    raise SystemExit(main())
