"""The torch side of the harness: one in-memory replica state, real steps, real durable checkpoints.

All S sites are data-parallel replicas of one state, so the process holds the state once. A step
by sites ``[i, j, ...]`` concatenates their micro-batches (each ``micro_batch`` windows, data a pure
function of ``(data_seed, step, site)``) and takes one optimizer step on the mean loss. With equal
micro-batches that mean is the mean of the per-site mean losses, so its gradient is exactly the
average of the per-site gradients (linearity); a real all-reduce would differ only in the order of
float additions. Survivors keep their micro-batch size: fewer sites, a smaller global batch.

Checkpoints (:meth:`Trainer.save`): ``torch.save`` of ``{model, optimizer, rng, counters}`` to
``<path>.tmp``, flushed and ``fsync``-ed, then ``os.replace``-d onto ``<path>`` and the folder
fsynced: the file at ``<path>`` is always a complete durable checkpoint. :meth:`Trainer.load`
reads it back with ``torch.load(weights_only=True)`` and restores model, optimizer and the torch
RNG state. Saving reads the state and touches no RNG; restoring puts back exactly what was saved,
so a run that checkpoints is bitwise the run that does not (tested), and a replay after a restore
recomputes the lost steps bitwise.

Determinism (the contract): :func:`deterministic` seeds torch, sets
``torch.use_deterministic_algorithms(True)`` and a fixed thread count for the duration of a run
and puts the previous settings back afterwards (the engine parallelises across runs, not inside).
"""

from __future__ import annotations

import io
import os
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch
from torch import nn

from collect.torchrun.model import Batches, WindowMLP
from prereg.fileio import atomic_write

CKPT_FORMAT = "torchrun/ckpt/v1"


@contextmanager
def deterministic(seed: int, threads: int = 1) -> Iterator[None]:
    """Seeded, deterministic algorithms, ``threads`` intra-op threads; restored on exit."""
    prev_det = torch.are_deterministic_algorithms_enabled()
    prev_warn = torch.is_deterministic_algorithms_warn_only_enabled()
    prev_threads = torch.get_num_threads()
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # needed for deterministic cuBLAS
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(seed) & (2**63 - 1))
        torch.use_deterministic_algorithms(True)
        torch.set_num_threads(threads)
        try:
            yield
        finally:
            torch.use_deterministic_algorithms(prev_det, warn_only=prev_warn)
            torch.set_num_threads(prev_threads)


def save_atomic(obj: dict[str, Any], path: Path) -> int:
    """``torch.save`` into memory, then ``prereg.fileio.atomic_write`` (temp file, fsync, rename,
    fsync of the folder); returns the bytes written."""
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    data = buffer.getvalue()
    atomic_write(path, data)
    return len(data)


class Trainer:
    """The replica state and its real operations (implements :class:`collect.sim.harness.Worker`)."""

    def __init__(self, model: WindowMLP, batches: Batches, lr: float, ckpt_path: Path | None,
                 device: str = "cpu") -> None:
        self.device = torch.device(device)
        self.model = model.to(self.device)
        self.batches = batches
        self.opt = torch.optim.Adam(self.model.parameters(), lr=lr, foreach=True)
        self.ckpt_path = ckpt_path
        self.loss_fn = nn.CrossEntropyLoss()
        self.saves = self.loads = 0
        self.save_s = self.load_s = 0.0
        self.last_ckpt: dict[str, int] = {}

    # --- training --------------------------------------------------------------------------------
    def step(self, step_id: int, sites: Sequence[int]) -> None:
        """One optimizer step on the mean loss of ``sites``' micro-batches for ``step_id``."""
        x, y = self.batches.batch(step_id, list(sites))
        if self.device.type != "cpu":
            x, y = x.to(self.device, non_blocking=True), y.to(self.device, non_blocking=True)
        self.opt.zero_grad(set_to_none=True)
        loss = self.loss_fn(self.model(x), y)
        loss.backward()
        self.opt.step()

    # --- checkpoints -------------------------------------------------------------------------------
    def state(self, ckpt_id: int, step_id: int, tokens: int) -> dict[str, Any]:
        """The checkpoint payload (tensors, numbers and strings only: loadable with weights_only)."""
        return {
            "format": CKPT_FORMAT,
            "model": self.model.state_dict(),
            "optimizer": self.opt.state_dict(),
            "rng": {"torch": torch.get_rng_state(),
                    **({"cuda": torch.cuda.get_rng_state(self.device)} if self.device.type == "cuda" else {})},
            "counters": {"checkpoint": int(ckpt_id), "step": int(step_id), "tokens": int(tokens)},
        }

    def save(self, ckpt_id: int, step_id: int, tokens: int) -> int:
        """A durable checkpoint at ``ckpt_path`` (see the module doc); returns its size in bytes."""
        if self.ckpt_path is None:
            raise RuntimeError("no checkpoint path")
        t0 = time.perf_counter()
        size = save_atomic(self.state(ckpt_id, step_id, tokens), self.ckpt_path)
        self.save_s += time.perf_counter() - t0
        self.saves += 1
        self.last_ckpt = {"checkpoint": int(ckpt_id), "step": int(step_id), "tokens": int(tokens)}
        return size

    def load(self, ckpt_id: int) -> None:
        """Restore model, optimizer and RNG from the durable checkpoint; it must be ``ckpt_id``."""
        if self.ckpt_path is None:
            raise RuntimeError("no checkpoint path")
        t0 = time.perf_counter()
        obj = torch.load(self.ckpt_path, map_location=self.device, weights_only=True)
        if obj.get("format") != CKPT_FORMAT or obj["counters"]["checkpoint"] != ckpt_id:
            raise RuntimeError(f"checkpoint file holds {obj.get('counters')}, expected checkpoint {ckpt_id}")
        self.model.load_state_dict(obj["model"])
        self.opt.load_state_dict(obj["optimizer"])
        torch.set_rng_state(obj["rng"]["torch"])
        if "cuda" in obj["rng"]:
            torch.cuda.set_rng_state(obj["rng"]["cuda"], self.device)
        self.load_s += time.perf_counter() - t0
        self.loads += 1
