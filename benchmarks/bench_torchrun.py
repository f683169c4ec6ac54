"""torch.multisite: overhead of the failure harness over a plain training loop; checkpoint MB/s.

Run: python benchmarks/bench_torchrun.py [--tokens N] [--repeats R] [--ckpt-width W]
     (needs torch: pip install torch==2.13.0)

Throughput (tokens/s, one thread, the collector's default model and data; no outages), timed in
R interleaved rounds, best round kept (noise only ever slows a round):

* ``plain``: ``for s in steps: batch(s, sites); zero_grad; loss; backward; Adam step`` -- nothing else.
* ``harness``: the same steps driven by the failure harness (policy ``continue``, no outage,
  checkpoint cadence beyond the run so no checkpoint is written), with the recorder on the
  virtual sim sensor and phase marks: the cost of the harness and telemetry themselves (target < 5%).
* ``harness+ckpt``: as a collector run does it: durable checkpoints every 64 steps (torch.save, fsync,
  os.replace) and no evaluations; the difference to ``harness`` is the checkpoint cost.

Checkpoint write (torch.save to a temp file, fsync, rename, folder fsync) and restore
(torch.load(weights_only=True) + load_state_dict of model and Adam + RNG) in MB/s, for the demo
model and a wider one (``--ckpt-width``), median of R x 5 repetitions, in the system temp folder.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import torch

from collect.telemetry.recording.recorder import Recorder
from collect.telemetry.sensors.registry import open_sensor
from prereg_seed_studies.multisite.accounting import SimConfig
from prereg_seed_studies.multisite.harness import Harness
from prereg_seed_studies.torch.collector import PARAMS, _Telemetry
from prereg_seed_studies.torch.markov import SourceSpec, make_corpora
from prereg_seed_studies.torch.model import Batches, WindowMLP, param_count
from prereg_seed_studies.torch.trainer import Trainer, deterministic

D = {k: v.default for k, v in PARAMS.items()}
SITES = 3


def _trainer(corpus, width: int, ckpt: Path | None) -> Trainer:
    model = WindowMLP(D["vocab"], D["context"], D["emb"], width)
    return Trainer(model, Batches(corpus, D["context"], D["micro_batch"], 1), D["lr"], ckpt)


def plain(corpus, steps: int) -> float:
    with deterministic(1):
        model = WindowMLP(D["vocab"], D["context"], D["emb"], D["width"])
        batches = Batches(corpus, D["context"], D["micro_batch"], 1)
        opt = torch.optim.Adam(model.parameters(), lr=D["lr"], foreach=True)
        loss_fn = torch.nn.CrossEntropyLoss()
        t0 = time.perf_counter()
        for s in range(1, steps + 1):
            x, y = batches.batch(s, [0, 1, 2])
            opt.zero_grad(set_to_none=True)
            loss_fn(model(x), y).backward()
            opt.step()
        return time.perf_counter() - t0


class _Worker:
    def __init__(self, t: Trainer, tel: _Telemetry) -> None:
        self.t, self.tel = t, tel

    def step(self, step_id: int, sites) -> None:
        self.t.step(step_id, sites)
        self.tel.tick += 1

    def save(self, ckpt_id: int, step_id: int, tokens: int) -> int:
        return self.t.save(ckpt_id, step_id, tokens)

    def load(self, ckpt_id: int) -> None:
        self.t.load(ckpt_id)


def harness(corpus, steps: int, every: int, folder: Path) -> float:
    with deterministic(1):
        t = _trainer(corpus, D["width"], folder / "bench.ckpt")
        t.save(0, 0, 0)
        rec = Recorder(open_sensor("sim:clock=virtual"), ["energy_counter"], D["poll_ms"])
        tel = _Telemetry(rec, D["tick_ms"])
        cfg = SimConfig("continue", sites=SITES, checkpoint_every_steps=every)
        h = Harness(
            cfg, [], _Worker(t, tel), steps * SITES * D["micro_batch"], site_tokens=D["micro_batch"], phase=tel.phase
        )
        t0 = time.perf_counter()
        with rec:
            r = h.run()
            tel.switch(None)
        dt = time.perf_counter() - t0
        assert r.attempted_steps == steps
        return dt


def checkpoint_rates(corpus, width: int, reps: int, folder: Path) -> tuple[int, int, float, float]:
    with deterministic(1):
        t = _trainer(corpus, width, folder / f"w{width}.ckpt")
        t.step(1, [0, 1, 2])  # Adam state exists
        writes, reads, size = [], [], 0
        for i in range(reps):
            t0 = time.perf_counter()
            size = t.save(i, 1, 0)
            writes.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            t.load(i)
            reads.append(time.perf_counter() - t0)
        return param_count(t.model), size, size / 1e6 / statistics.median(writes), size / 1e6 / statistics.median(reads)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokens", type=int, default=262144, help="tokens per timed loop (default 262144)")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--ckpt-width", type=int, default=16384, help="hidden width of the larger checkpoint model")
    a = ap.parse_args()
    steps = a.tokens // (SITES * D["micro_batch"])
    tokens = steps * SITES * D["micro_batch"]
    corpus = make_corpora(SourceSpec(), 1, D["train_tokens"] // 2048, 2048, 1, 64).train
    print(
        f"torch {torch.__version__}, 1 thread, model vocab={D['vocab']} context={D['context']} emb={D['emb']} "
        f"width={D['width']}, {SITES} sites x micro_batch {D['micro_batch']}, {steps} steps = {tokens} tokens"
    )
    times: dict[str, list[float]] = {"plain": [], "harness": [], "harness+ckpt": []}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        plain(corpus, 20)  # warm-up
        for _ in range(a.repeats):
            times["plain"].append(plain(corpus, steps))
            times["harness"].append(harness(corpus, steps, steps + 1, folder))
            times["harness+ckpt"].append(harness(corpus, steps, D["checkpoint_every_steps"], folder))
        best = {k: min(v) for k, v in times.items()}
        print(f"{'loop':<14}{'tokens/s':>12}{'best s':>9}{'median s':>10}{'overhead':>10}")
        for k, v in times.items():
            over = (best[k] / best["plain"] - 1) * 100
            print(f"{k:<14}{tokens / best[k]:>12,.0f}{best[k]:>9.3f}{statistics.median(v):>10.3f}{over:>9.1f}%")
        print(
            f"\ncheckpoint (torch.save + fsync + os.replace; torch.load weights_only + load_state_dict), "
            f"median of {a.repeats * 5}:"
        )
        print(f"{'width':>7}{'params':>11}{'bytes':>12}{'write MB/s':>12}{'restore MB/s':>14}")
        for width in (D["width"], a.ckpt_width):
            n, size, w, r = checkpoint_rates(corpus, width, a.repeats * 5, folder)
            print(f"{width:>7}{n:>11,}{size:>12,}{w:>12.1f}{r:>14.1f}")


if __name__ == "__main__":
    main()
