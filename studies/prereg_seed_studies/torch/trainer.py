"""The torch side of the harness: one in-memory replica state, real steps, real durable checkpoints.

Model, rules and assumptions: docs/seed-studies.md (prereg_seed_studies.torch.trainer).
"""

from __future__ import annotations

import io
import os
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.optim import optimizer as _optim_base

from prereg.fileio import atomic_write
from prereg_seed_studies.torch.model import Batches, WindowMLP

CKPT_FORMAT = "torchrun/ckpt/v1"


def set_deterministic_algorithms(mode: bool, warn_only: bool = False) -> None:
    """``torch.use_deterministic_algorithms(mode, warn_only=...)`` without importing Inductor and
    Dynamo when they are not loaded yet (see the module doc)."""
    switch = getattr(torch._C, "_set_deterministic_algorithms", None)
    if switch is None or "torch._inductor.config" in sys.modules:
        torch.use_deterministic_algorithms(mode, warn_only=warn_only)
    else:
        switch(mode, warn_only=warn_only)


def _probe() -> None:
    return None


_DYNAMO_DISABLED = ("add_param_group", "zero_grad", "state_dict", "load_state_dict")


def _under_disable_dynamo(method: Any) -> Any | None:
    """The function inside torch's lazy ``_disable_dynamo`` wrapper ``method``, else None."""
    wrap = getattr(torch, "_disable_dynamo", None)
    if wrap is None or getattr(method, "__code__", None) is not wrap(_probe).__code__:
        return None
    return getattr(method, "__wrapped__", None)


def _find_plain_step(cls: type) -> Any | None:
    hooked = getattr(_optim_base.Optimizer, "profile_hook_step", None)
    use_grad = getattr(_optim_base, "_use_grad_for_differentiable", None)
    step = getattr(cls, "step", None)
    inner = getattr(step, "__wrapped__", None)
    if (
        hooked is None
        or use_grad is None
        or inner is None
        or getattr(step, "__code__", None) is not hooked(_probe).__code__
        or getattr(inner, "__code__", None) is not use_grad(_probe).__code__
    ):
        return None
    return getattr(inner, "__wrapped__", None)


_plain_steps: dict[type, tuple[Any, Any | None]] = {}  # class -> (its step as found, the plain step or None)


def _plain_step(cls: type) -> Any | None:
    """``cls``'s own ``step`` under torch.optim's two wrappers (profile hooks, grad mode), else None;
    looked up once per class (and again if its ``step`` was replaced)."""
    step = getattr(cls, "step", None)
    known = _plain_steps.get(cls)
    if known is None or known[0] is not step:
        known = _plain_steps[cls] = (step, _find_plain_step(cls))
    return known[1]


@contextmanager
def _dynamo_left_unloaded() -> Iterator[bool]:
    """While Dynamo is not loaded, the optimizer's ``_disable_dynamo`` methods run as they are (see
    the module doc); yields whether that is in effect. The process is left as it was."""
    if "torch._dynamo" in sys.modules:
        yield False
        return
    plain = [_under_disable_dynamo(getattr(torch.optim.Optimizer, name, None)) for name in _DYNAMO_DISABLED]
    if any(fn is None for fn in plain):
        yield False
        return
    seeded = [fn for fn in plain if getattr(fn, "__dynamo_disable", None) is None]
    for fn in seeded:
        setattr(fn, "__dynamo_disable", fn)
    try:
        yield True
    finally:
        for fn in seeded:
            if getattr(fn, "__dynamo_disable", None) is fn:
                delattr(fn, "__dynamo_disable")


def optimizer_step(opt: torch.optim.Optimizer) -> None:
    """``opt.step()``; while Dynamo is not loaded, without the wrapper that imports it (module doc)."""
    plain = None if "torch._dynamo" in sys.modules else _plain_step(type(opt))
    hooks = (
        getattr(opt, "_optimizer_step_pre_hooks", None),
        getattr(opt, "_optimizer_step_post_hooks", None),
        getattr(_optim_base, "_global_optimizer_pre_hooks", None),
        getattr(_optim_base, "_global_optimizer_post_hooks", None),
    )
    if plain is None or any(h is None or len(h) for h in hooks):
        opt.step()
        return
    with torch.autograd.profiler.record_function(f"Optimizer.step#{type(opt).__name__}.step"):
        with torch.set_grad_enabled(bool(opt.defaults.get("differentiable", False))):
            plain(opt)
        opt._optimizer_step_code()


@contextmanager
def deterministic(seed: int, threads: int = 1) -> Iterator[None]:
    """Seeded, deterministic algorithms, ``threads`` intra-op threads, Dynamo left unloaded where it
    can be (module doc); restored on exit."""
    prev_det = torch.are_deterministic_algorithms_enabled()
    prev_warn = torch.is_deterministic_algorithms_warn_only_enabled()
    prev_threads = torch.get_num_threads()
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # needed for deterministic cuBLAS
    with torch.random.fork_rng(devices=[]), _dynamo_left_unloaded():
        torch.manual_seed(int(seed) & (2**63 - 1))
        set_deterministic_algorithms(True)
        torch.set_num_threads(threads)
        try:
            yield
        finally:
            set_deterministic_algorithms(prev_det, warn_only=prev_warn)
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
    """The replica state and its real operations (implements :class:`prereg_seed_studies.multisite.harness.Worker`)."""

    def __init__(
        self, model: WindowMLP, batches: Batches, lr: float, ckpt_path: Path | None, device: str = "cpu"
    ) -> None:
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
        optimizer_step(self.opt)

    # --- checkpoints -------------------------------------------------------------------------------
    def state(self, ckpt_id: int, step_id: int, tokens: int) -> dict[str, Any]:
        """The checkpoint payload (tensors, numbers and strings only: loadable with weights_only)."""
        return {
            "format": CKPT_FORMAT,
            "model": self.model.state_dict(),
            "optimizer": self.opt.state_dict(),
            "rng": {
                "torch": torch.get_rng_state(),
                **({"cuda": torch.cuda.get_rng_state(self.device)} if self.device.type == "cuda" else {}),
            },
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
