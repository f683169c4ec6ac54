"""The tiny language model, its FLOP count, the per-(step, site) data and held-out evaluation.

Model, rules and assumptions: docs/seed-studies.md (prereg_seed_studies.torch.model).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

STATE_HASH_VERSION = b"torchrun/state/v1"


class WindowMLP(nn.Module):
    """Embeddings of a window of ``context`` tokens -> one hidden layer -> next-token logits."""

    def __init__(self, vocab: int, context: int, emb: int, width: int) -> None:
        super().__init__()
        self.vocab, self.context, self.emb, self.width = vocab, context, emb, width
        self.embed = nn.Embedding(vocab, emb)
        self.hidden = nn.Linear(context * emb, width)
        self.out = nn.Linear(width, vocab)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``x``: (batch, context) token ids -> (batch, vocab) logits."""
        h = self.embed(x).reshape(x.shape[0], self.context * self.emb)
        return self.out(nn.functional.gelu(self.hidden(h)))


def flop_per_token(vocab: int, context: int, emb: int, width: int) -> dict[str, int]:
    """Forward, backward and train FLOP per predicted token (see the module doc for what counts)."""
    forward = 2 * (context * emb * width + width * vocab)
    return {"forward": forward, "backward": 2 * forward, "train": 3 * forward}


def param_count(model: nn.Module) -> int:
    """Number of trainable parameters."""
    return sum(p.numel() for p in model.parameters())


class Batches:
    """Training windows for (step, site): a pure function of ``(data_seed, step, site)``."""

    def __init__(self, corpus: np.ndarray, context: int, micro_batch: int, data_seed: int) -> None:
        self.corpus = np.ascontiguousarray(corpus, dtype=np.int64)
        self.context, self.micro_batch = context, micro_batch
        self.data_seed = int(data_seed) & (2**64 - 1)
        chains, length = self.corpus.shape
        if length <= context:
            raise ValueError("training chains must be longer than the context")
        self.chains, self.starts = chains, length - context  # window start offsets 0..length-context-1
        self._cols = np.arange(context + 1)

    def windows(self, step: int, site: int) -> np.ndarray:
        """(micro_batch, context + 1) int64: inputs then the target token, for this step and site."""
        rng = np.random.Generator(np.random.Philox(key=[self.data_seed, (int(step) << 16) | int(site)]))
        chain = rng.integers(0, self.chains, self.micro_batch)
        start = rng.integers(0, self.starts, self.micro_batch)
        return self.corpus[chain[:, None], start[:, None] + self._cols]

    def batch(self, step: int, sites: list[int] | tuple[int, ...]) -> tuple[torch.Tensor, torch.Tensor]:
        """Inputs and targets of ``sites``' micro-batches at ``step``, concatenated in site order."""
        w = np.concatenate([self.windows(step, s) for s in sites]) if len(sites) > 1 else self.windows(step, sites[0])
        t = torch.from_numpy(w)
        return t[:, :-1], t[:, -1]


def heldout_windows(heldout: np.ndarray, context: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Every window of every held-out chain: inputs (n, context) and targets (n,)."""
    w = np.lib.stride_tricks.sliding_window_view(np.ascontiguousarray(heldout, dtype=np.int64), context + 1, axis=1)
    w = w.reshape(-1, context + 1).copy()
    t = torch.from_numpy(w)
    return t[:, :-1], t[:, -1]


@torch.no_grad()
def evaluate_nll(model: nn.Module, x: torch.Tensor, y: torch.Tensor, chunk: int = 8192) -> float:
    """Mean held-out negative log-likelihood, nats/token (summed in float64 over fixed chunks)."""
    total = 0.0
    for i in range(0, x.shape[0], chunk):
        logits = model(x[i : i + chunk])
        total += float(nn.functional.cross_entropy(logits, y[i : i + chunk], reduction="sum").double())
    return total / x.shape[0]


def _tensor_items(obj: object, prefix: str = "") -> list[tuple[str, object]]:
    """Flatten nested dicts/lists into (path, leaf) pairs in a canonical (sorted-key) order."""
    if isinstance(obj, dict):
        out: list[tuple[str, object]] = []
        for k in sorted(obj, key=str):
            out += _tensor_items(obj[k], f"{prefix}/{k}")
        return out
    if isinstance(obj, (list, tuple)):
        out = []
        for i, v in enumerate(obj):
            out += _tensor_items(v, f"{prefix}[{i}]")
        return out
    return [(prefix, obj)]


def state_sha256(model: nn.Module, optimizer: torch.optim.Optimizer | None = None) -> str:
    """sha256 of the model parameters (and the optimizer state): names, dtypes, shapes, raw bytes."""
    return state_dicts_sha256(model.state_dict(), None if optimizer is None else optimizer.state_dict())


def checkpoint_state_sha256(path: Path) -> str:
    """:func:`state_sha256` of the model and optimizer state held in a durable checkpoint file (as
    :class:`prereg_seed_studies.torch.trainer.Trainer` writes it), read with ``torch.load(weights_only=True)``:
    the state *at the durable frontier*, whatever is in memory."""
    obj = torch.load(path, map_location="cpu", weights_only=True)
    return state_dicts_sha256(obj["model"], obj["optimizer"])


def state_dicts_sha256(model_state: Mapping[str, Any], optimizer_state: Mapping[str, Any] | None = None) -> str:
    """:func:`state_sha256` of state dicts (the same bytes hashed whether live or loaded from a file)."""
    h = hashlib.sha256(STATE_HASH_VERSION)
    state: dict[str, object] = {"model": dict(model_state)}
    if optimizer_state is not None:
        state["optim"] = dict(optimizer_state)
    for path, leaf in _tensor_items(state):
        h.update(path.encode())
        if isinstance(leaf, torch.Tensor):
            t = leaf.detach().cpu().contiguous()
            h.update(f"{t.dtype}{tuple(t.shape)}".encode())
            h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b"")
        else:
            h.update(repr(leaf).encode())
    return h.hexdigest()
