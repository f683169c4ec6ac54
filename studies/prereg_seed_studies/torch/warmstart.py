"""Warm start: every run of a study begins from one shared trained state, made once and hashed.

Model, rules and assumptions: docs/seed-studies.md (prereg_seed_studies.torch.warmstart).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from collect.traces.lines import MAX_TRACE_BYTES
from prereg.errors import IntegrityError
from prereg.fileio import atomic_write, read_regular_file
from prereg.jsoncodec import loads

SHARED_DIR = "shared"
FORMAT = "torchrun/warmstart/v1"
#: the parameters that shape the warm-start state (and so its key)
KEY_PARAMS = (
    "vocab",
    "markov_order",
    "markov_support",
    "source_seed",
    "context",
    "emb",
    "width",
    "lr",
    "micro_batch",
    "train_tokens",
    "warm_start_steps",
    "warm_start_seed",
    "device",
    "threads",
)
TRAIN_CHAIN = 2048


def warm_key(p: Mapping[str, Any]) -> str:
    """A short hash of the parameters that shape the warm-start state."""
    text = json.dumps({k: p[k] for k in KEY_PARAMS}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def warm_path(runs_dir: Path, p: Mapping[str, Any]) -> Path:
    """``RUNS/shared/warmstart-<key>.pt`` for these params."""
    return Path(runs_dir) / SHARED_DIR / f"warmstart-{warm_key(p)}.pt"


def _warm_seed(seed: int) -> int:
    """The warm-up corpus and initialisation seed: domain-separated from run (stratum) seeds."""
    return int.from_bytes(hashlib.sha256(f"warm-start:{int(seed)}".encode()).digest()[:8], "big") >> 1


def _file_sha256(path: Path) -> str:
    return hashlib.sha256(read_regular_file(path, MAX_TRACE_BYTES, follow_links=False)).hexdigest()


def _sidecar(path: Path) -> Path:
    return path.with_suffix(".json")


def _shared_folder(runs_dir: Path) -> Path:
    """``RUNS/shared``, refused (exit 3) when it is a symbolic link or not a folder: never followed."""
    from collect.ledger.trace_check import no_link  # lazy: pydantic

    folder = Path(runs_dir) / SHARED_DIR
    no_link(folder, "the runs folder's shared inputs")
    return folder


def _train(p: Mapping[str, Any]) -> tuple[Any, str]:
    """The warm start's trainer after ``warm_start_steps`` steps, and its state SHA-256 (deterministic)."""
    from prereg_seed_studies.torch.device import resolve_device  # lazy: torch
    from prereg_seed_studies.torch.markov import SourceSpec, make_corpora  # lazy: numpy
    from prereg_seed_studies.torch.model import Batches, WindowMLP, state_sha256  # lazy: torch
    from prereg_seed_studies.torch.trainer import Trainer, deterministic  # lazy: torch

    seed = _warm_seed(p["warm_start_seed"])
    spec = SourceSpec(vocab=p["vocab"], order=p["markov_order"], support=p["markov_support"], seed=p["source_seed"])
    corpora = make_corpora(spec, seed, max(1, p["train_tokens"] // TRAIN_CHAIN), TRAIN_CHAIN, 1, 64)
    with deterministic(seed, p["threads"]):
        model = WindowMLP(p["vocab"], p["context"], p["emb"], p["width"])
        trainer = Trainer(
            model,
            Batches(corpora.train, p["context"], p["micro_batch"], seed),
            p["lr"],
            None,
            resolve_device(p["device"]),
        )
        for step in range(1, p["warm_start_steps"] + 1):
            trainer.step(step, [0])
        return trainer, state_sha256(trainer.model, trainer.opt)


def recorded_identities(runs_dir: Path, key: str) -> list[dict[str, Any]]:
    """The warm-start identities with ``key`` that the ledger's records started from (chained records
    appended by the single writer: what a file in ``RUNS/shared`` must still match)."""
    from collect.ledger.store import read_ledger  # lazy: pydantic

    out = []
    for r in read_ledger(runs_dir).records:
        ws = r.code.get("warm_start") if isinstance(r.code, dict) else None
        if isinstance(ws, dict) and ws.get("key") == key and ws not in out:
            out.append(ws)
    return out


def make_warm_start(runs_dir: Path, p: Mapping[str, Any]) -> dict[str, Any]:
    """Train and write the warm start for ``p`` unless it exists; return its identity (checked).

    An existing one must match its sidecar (:func:`check_warm_start`) and then be the state this
    study's runs already started from (their ledger records hold its SHA-256); when no record holds
    one yet, its state is made again here and must hash the same (the warm start is deterministic),
    so a state swapped in with a matching sidecar is refused (exit 3), never used.
    """
    _shared_folder(runs_dir)
    path = warm_path(runs_dir, p)
    if os.path.lexists(path) or os.path.lexists(_sidecar(path)):
        identity = check_warm_start(path)
        recorded = recorded_identities(runs_dir, warm_key(p))
        if recorded:
            if not any(
                identity.get("state_sha256") == r.get("state_sha256")
                and identity.get("file_sha256") == r.get("file_sha256")
                for r in recorded
            ):
                raise IntegrityError(
                    f"warm start {path}: not the state the runs in the ledger started from (their "
                    f"records hold state SHA-256 {recorded[0].get('state_sha256')}); refusing to "
                    "start runs from it"
                )
            return identity
        _, digest = _train(p)
        if digest != identity.get("state_sha256"):
            raise IntegrityError(
                f"warm start {path}: its state is not the one this plan's parameters make (made again "
                f"here: state SHA-256 {digest}); refusing to start runs from it (remove both files "
                "to make it anew)"
            )
        return identity
    from prereg_seed_studies.torch.trainer import save_atomic  # lazy: torch

    trainer, digest = _train(p)
    payload = {
        "format": FORMAT,
        "model": trainer.model.state_dict(),
        "optimizer": trainer.opt.state_dict(),
        "steps": int(p["warm_start_steps"]),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    save_atomic(payload, path)
    identity = {
        "state_sha256": digest,
        "file": f"{SHARED_DIR}/{path.name}",
        "file_sha256": _file_sha256(path),
        "steps": int(p["warm_start_steps"]),
        "seed": int(p["warm_start_seed"]),
        "key": warm_key(p),
    }
    atomic_write(_sidecar(path), json.dumps(identity, sort_keys=True, indent=1).encode())
    return identity


def check_warm_start(path: Path) -> dict[str, Any]:
    """The identity of an existing warm start, after checking the file against its sidecar (both
    regular files, never through a link; ``IntegrityError``, exit 3, otherwise)."""
    _shared_folder(path.parent.parent)
    try:
        identity: Any = loads(read_regular_file(_sidecar(path), 1 << 20, follow_links=False))
        if not isinstance(identity, dict):
            raise ValueError("not a JSON object")
    except ValueError as err:
        raise IntegrityError(
            f"warm start {path}: its description {_sidecar(path).name} cannot be read ({err}); "
            "remove both files to make it anew"
        ) from None
    try:
        actual = _file_sha256(path)
    except ValueError:
        actual = None
    if actual is None or actual != identity.get("file_sha256"):
        raise IntegrityError(
            f"warm start {path} does not match the SHA-256 recorded when it was made; "
            "refusing to start runs from it (remove both files to make it anew)"
        )
    return identity


def load_warm_start(trainer: Any, runs_dir: Path, p: Mapping[str, Any]) -> dict[str, Any]:
    """Load the study's warm start into ``trainer`` (model and optimizer); its identity, checked."""
    import torch  # lazy: torch

    from prereg_seed_studies.torch.model import state_sha256  # lazy: torch

    path = warm_path(runs_dir, p)
    identity = check_warm_start(path)
    obj = torch.load(path, map_location=trainer.device, weights_only=True)
    if obj.get("format") != FORMAT:
        raise RuntimeError(f"warm start {path}: not a {FORMAT} file")
    trainer.model.load_state_dict(obj["model"])
    trainer.opt.load_state_dict(obj["optimizer"])
    if state_sha256(trainer.model, trainer.opt) != identity["state_sha256"]:
        raise RuntimeError(f"warm start {path}: the loaded state does not hash to the recorded state SHA-256")
    return identity
