"""The torch device a run trains on: ``auto``, ``cpu`` or ``cuda``, resolved against this machine."""

from __future__ import annotations

import torch


def resolve_device(name: str) -> str:
    """``auto`` -> cuda when available, else cpu; ``cuda`` without a GPU is an error."""
    if name == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if name == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("device cuda requested but torch.cuda.is_available() is False")
    return name


__all__ = ["resolve_device"]
