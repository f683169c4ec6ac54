"""A plain PyTorch training script that resumes from its own checkpoint (examples/byo-faults.yaml runs it).

A small MLP classifies a synthetic dataset (made from the seed: a random teacher network labels
Gaussian inputs). Every ``--ckpt-every`` steps it saves its model and optimizer state to
``--ckpt-dir`` (``torch.save`` to a temporary name, then an atomic rename), in ``--ckpt-dtype``
(``float32``, or ``bfloat16``: half the bytes, rounded weights). On start it loads that checkpoint
if one is there (``torch.load(weights_only=True)``) and goes on from its step. There is no failure
logic here: the plan's ``experiment.failures`` kills the program and ``collect run`` starts it again.

The batches depend only on (seed, step), so a redone step sees the batch it saw before.
Deterministic given its arguments and its checkpoint (one thread, seeded generators).

It reports its progress (``collect.marks.step``, after each step, with the training loss) and
where each start picked up (``collect.marks.resumed``), and marks its phases (``collect.marks``:
``restore``, ``compute``, ``checkpoint``). Its one metric, to ``$PREREG_METRICS`` or ``--metrics``,
is ``final_nll`` (held-out cross-entropy, nats); the work metrics come from the progress reports.
Run bare, the script needs only torch:

    python examples/byo/resumable.py --seed 1 --ckpt-dir /tmp/ck --metrics /tmp/m.json
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
from pathlib import Path

import torch
from torch import nn

try:  # the toolkit's clients (standard library only; copy collect/marks.py to use them elsewhere)
    from collect.marks import phase, resumed, step
except ImportError:  # run without the toolkit: no marks, no reports

    def phase(name: str) -> contextlib.AbstractContextManager[None]:
        return contextlib.nullcontext()

    def resumed(n: int) -> None:
        return None

    def step(n: int, *, tokens: int | None = None, loss: float | None = None) -> None:
        return None


DIM, CLASSES, HIDDEN = 16, 4, 32


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--ckpt-every", type=int, default=50)
    p.add_argument("--ckpt-dtype", choices=["float32", "bfloat16"], default="float32")
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--ckpt-dir", required=True, help="where the checkpoint lives (kept across restarts)")
    p.add_argument(
        "--metrics",
        default=os.environ.get("PREREG_METRICS", ""),
        help="metrics JSON file (default: $PREREG_METRICS; stdout without either)",
    )
    return p.parse_args(argv)


def teacher(seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(DIM, HIDDEN, generator=gen), torch.randn(HIDDEN, CLASSES, generator=gen)


def examples(seed: int, salt: int, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``n`` inputs and noisy teacher labels, a function of (seed, salt) only."""
    w1, w2 = teacher(seed)
    draw = torch.Generator().manual_seed((seed * 1_000_003 + 17 * salt) % 2**63)
    x = torch.randn(n, DIM, generator=draw)
    probs = torch.softmax(torch.tanh(x @ w1) @ w2, dim=1)
    return x, torch.multinomial(probs, 1, generator=draw).squeeze(1)


def cast_state(state: dict, dtype: torch.dtype) -> dict:
    """A state dict with its floating tensors in ``dtype`` (nested dicts and lists followed)."""
    if isinstance(state, dict):
        return {k: cast_state(v, dtype) for k, v in state.items()}
    if isinstance(state, list):
        return [cast_state(v, dtype) for v in state]
    if isinstance(state, torch.Tensor) and state.is_floating_point() and state.dim() > 0:  # not Adam's step count
        return state.to(dtype)
    return state


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    model = nn.Sequential(nn.Linear(DIM, HIDDEN), nn.Tanh(), nn.Linear(HIDDEN, CLASSES))
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    loss_fn = nn.CrossEntropyLoss()
    ckpt = Path(args.ckpt_dir) / "last.pt"
    ckpt.parent.mkdir(parents=True, exist_ok=True)
    done = 0
    if ckpt.exists():
        with phase("restore"):
            state = torch.load(ckpt, weights_only=True)
            model.load_state_dict(cast_state(state["model"], torch.float32))
            opt.load_state_dict(cast_state(state["opt"], torch.float32))
            done = int(state["step"])
    resumed(done)
    dtype = getattr(torch, args.ckpt_dtype)
    while done < args.steps:
        with phase("compute"):
            x, y = examples(args.seed, done + 1, args.batch)
            opt.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
            done += 1
        step(done, loss=loss.item())
        if done % args.ckpt_every == 0 and done < args.steps:
            with phase("checkpoint"):
                part = ckpt.with_suffix(".part")
                torch.save(
                    {
                        "step": done,
                        "model": cast_state(model.state_dict(), dtype),
                        "opt": cast_state(opt.state_dict(), dtype),
                    },
                    part,
                )
                os.replace(part, ckpt)
    held_x, held_y = examples(args.seed, 0, 4096)
    with torch.no_grad():
        final_nll = loss_fn(model(held_x), held_y).item()
    metrics = {"final_nll": round(final_nll, 6)}
    if args.metrics:
        Path(args.metrics).write_text(json.dumps(metrics) + "\n")
    else:
        print(json.dumps(metrics))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
