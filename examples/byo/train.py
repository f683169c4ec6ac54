"""A plain PyTorch training script of the kind a researcher already has (examples/byo.yaml runs it).

A small MLP classifies a synthetic dataset (made from the seed: a random teacher network labels
Gaussian inputs) with data-parallel training on ``--sites`` simulated sites: each step's batch is
split into one shard per site and the shards' gradients are averaged. At step ``--fail-step`` the
site ``--fail-site`` fails, losing the step in flight, and stays down for ``--outage-steps`` steps.

* ``--policy restart``: restore the last checkpoint (``torch.save`` every ``--ckpt-every`` steps,
  ``torch.load(weights_only=True)``) and redo the lost steps on all sites (a spare replaces the
  failed one): the same model as an uninterrupted run, at the price of the redone steps;
* ``--policy continue``: carry on from the live state: only the failed site's shard of the step in
  flight is lost, the survivors train on their shards alone during the outage, then the site
  rejoins with the current state. No step is redone, and the outage's steps see fewer examples.

Both arms stop at the same step count. The batches depend only on (seed, step), so a redone step
sees the batch it saw before. Deterministic given its arguments (one thread, seeded generators).

Metrics (JSON, to ``$PREREG_METRICS`` or ``--metrics``): ``final_nll`` (held-out cross-entropy,
nats), ``attempted_steps`` (optimizer steps computed, redone ones included), ``attempted_examples``
(examples whose gradient was computed, lost ones included) and ``lost_steps``. Phases are marked
with ``collect.marks.phase`` when the toolkit is importable (``compute``, ``replay``,
``checkpoint``, ``restore``); run bare, the script needs only torch:

    python examples/byo/train.py --policy restart --seed 1 --metrics /tmp/m.json
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import tempfile
from pathlib import Path

import torch
from torch import nn

try:  # the toolkit's phase client (standard library only; copy collect/marks.py to use it elsewhere)
    from collect.marks import phase
except ImportError:  # run without the toolkit: no marks

    def phase(name: str) -> contextlib.AbstractContextManager[None]:
        return contextlib.nullcontext()


DIM, CLASSES, HIDDEN = 16, 4, 32


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--policy", choices=["restart", "continue"], required=True)
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--steps", type=int, default=240)
    p.add_argument("--sites", type=int, default=4)
    p.add_argument("--batch", type=int, default=64, help="examples per step over all sites")
    p.add_argument("--fail-site", type=int, default=0)
    p.add_argument("--fail-step", type=int, default=100)
    p.add_argument("--outage-steps", type=int, default=30)
    p.add_argument("--ckpt-every", type=int, default=40)
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--ckpt-dir", default="", help="where checkpoints go (default: a temporary folder)")
    p.add_argument(
        "--metrics",
        default=os.environ.get("PREREG_METRICS", ""),
        help="metrics JSON file (default: $PREREG_METRICS; stdout without either)",
    )
    args = p.parse_args(argv)
    if not (0 <= args.fail_site < args.sites and 0 < args.fail_step < args.steps and args.sites >= 2):
        p.error("need 0 <= --fail-site < --sites, 0 < --fail-step < --steps and at least 2 sites")
    return args


def dataset(seed: int, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Held-out examples of the seed's task (the teacher is drawn from the seed alone)."""
    teacher = torch.Generator().manual_seed(seed)
    w1, w2 = torch.randn(DIM, HIDDEN, generator=teacher), torch.randn(HIDDEN, CLASSES, generator=teacher)
    draw = torch.Generator().manual_seed((seed + 1) % 2**63)
    x = torch.randn(n, DIM, generator=draw)
    return x, label(x, w1, w2, draw)


def label(x: torch.Tensor, w1: torch.Tensor, w2: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """Noisy teacher labels: sampled from the teacher's softmax (so the best NLL is above 0)."""
    return torch.multinomial(torch.softmax(torch.tanh(x @ w1) @ w2, dim=1), 1, generator=gen).squeeze(1)


def batch(seed: int, step: int, size: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The training batch of ``step``: a function of (seed, step) only, so a redone step repeats it."""
    teacher = torch.Generator().manual_seed(seed)
    w1, w2 = torch.randn(DIM, HIDDEN, generator=teacher), torch.randn(HIDDEN, CLASSES, generator=teacher)
    draw = torch.Generator().manual_seed((seed * 1_000_003 + 17 * (step + 1)) % 2**63)
    x = torch.randn(size, DIM, generator=draw)
    return x, label(x, w1, w2, draw)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    model = nn.Sequential(nn.Linear(DIM, HIDDEN), nn.Tanh(), nn.Linear(HIDDEN, CLASSES))
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    loss_fn = nn.CrossEntropyLoss()
    shard = args.batch // args.sites
    held_x, held_y = dataset(args.seed, 4096)
    tmp = tempfile.TemporaryDirectory(prefix="byo-ckpt-")
    ckpt = Path(args.ckpt_dir or tmp.name) / "last.pt"
    ckpt.parent.mkdir(parents=True, exist_ok=True)

    def train_step(step: int, sites: list[int]) -> int:
        """One optimizer step on the shards of ``sites``; the examples computed."""
        x, y = batch(args.seed, step, shard * args.sites)
        rows = torch.cat([torch.arange(s * shard, (s + 1) * shard) for s in sites])
        opt.zero_grad()
        loss_fn(model(x[rows]), y[rows]).backward()
        opt.step()
        return len(rows)

    def save(step: int) -> None:
        with phase("checkpoint"):
            torch.save({"step": step, "model": model.state_dict(), "opt": opt.state_dict()}, ckpt)

    all_sites = list(range(args.sites))
    survivors = [s for s in all_sites if s != args.fail_site]
    outage = range(args.fail_step, args.fail_step + args.outage_steps)
    attempted_steps = attempted_examples = lost_steps = 0
    save(0)
    step = 0
    while step < args.steps:
        if step == args.fail_step and args.policy == "restart":
            # the site fails during this step: the synchronous step in flight is lost on every site
            attempted_examples += shard * args.sites
            attempted_steps += 1
            with phase("restore"):
                state = torch.load(ckpt, weights_only=True)
                model.load_state_dict(state["model"])
                opt.load_state_dict(state["opt"])
            lost_steps = step - state["step"] + 1  # the steps since the checkpoint, and this one
            with phase("replay"):
                for redo in range(state["step"], step):
                    attempted_examples += train_step(redo, all_sites)
                    attempted_steps += 1
        elif step == args.fail_step:
            attempted_examples += shard  # continue: only the failed site's shard is lost; the step ends without it
        with phase("compute"):
            sites = survivors if args.policy == "continue" and step in outage else all_sites
            attempted_examples += train_step(step, sites)
            attempted_steps += 1
        step += 1
        if step % args.ckpt_every == 0 and step < args.steps:
            save(step)
    with torch.no_grad():
        final_nll = loss_fn(model(held_x), held_y).item()
    tmp.cleanup()
    metrics = {
        "final_nll": round(final_nll, 6),
        "attempted_steps": attempted_steps,
        "attempted_examples": attempted_examples,
        "lost_steps": lost_steps,
    }
    if args.metrics:
        Path(args.metrics).write_text(json.dumps(metrics) + "\n")
    else:
        print(json.dumps(metrics))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
