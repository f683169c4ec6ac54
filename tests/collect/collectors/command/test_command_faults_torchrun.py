"""kill_rank on a real torchrun job (two CPU ranks, gloo): the plan's fault kills rank 1 at a step,
torchrun tears the job down, the collector starts it again and it resumes from its checkpoint to the
same result as an uninterrupted run."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from collect.collectors.base import RunContext
from collect.collectors.command.collector import CommandCollector
from tests.helpers import requires

pytestmark = pytest.mark.slow  # torchrun and two ranks, twice

#: two ranks all-reduce a gradient per step; rank 0 reports progress and checkpoints every 10 steps
DDP = textwrap.dedent("""
    import json, os
    import torch
    import torch.distributed as dist
    from collect.marks import restart, resumed, step
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.set_num_threads(1)
    w, done = torch.zeros(4), 0
    ck = os.path.join(os.environ["PREREG_RUN_DIR"], "ck.pt")
    if os.path.exists(ck):
        state = torch.load(ck, weights_only=True)
        w, done = state["w"], int(state["step"])
    if rank == 0:
        resumed(done)
    while done < 40:
        g = torch.ones(4) * (rank + 1)
        dist.all_reduce(g)
        w -= 0.01 * g
        done += 1
        if rank == 0:
            step(done)
            if done % 10 == 0:
                torch.save({"w": w, "step": done}, ck + ".part")
                os.replace(ck + ".part", ck)
        dist.barrier()
    if rank == 0:
        json.dump({"w0": float(w[0]), "starts": restart() + 1}, open(os.environ["PREREG_METRICS"], "w"))
    dist.destroy_process_group()
""")


@requires("torch")
def test_kill_rank_of_a_torchrun_job_restarts_it_and_it_resumes_to_the_same_result(tmp_path: Path) -> None:
    (tmp_path / "ddp.py").write_text(DDP)
    (tmp_path / "traces").mkdir()
    failures = {
        "unit": "step",
        "at": [15],
        "fractions": None,
        "poisson_rate": None,
        "horizon": None,
        "action": "kill_rank",
        "rank": 1,
        "max_restarts": 3,
    }
    argv = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc-per-node",
        "2",
        "--max-restarts",
        "0",
        "ddp.py",
    ]
    params = CommandCollector.check_run(
        {
            "argv": argv,
            "workdir": str(tmp_path),
            "code": ["ddp.py"],
            "timeout_s": 600.0,
            "failures": failures,
            "metrics": ["w0", "starts", "lost_steps", "attempted_steps"],
        },
        {},
    )
    result = CommandCollector().run(RunContext("r1", params, 1, {}, "a", 0, tmp_path / "traces"))
    (fault,) = result.info["faults"]["record"]
    assert fault["landed"] and fault["step"] == 15 and fault["restart"] == 1, fault
    assert result.metrics["starts"] == 2
    assert result.metrics["lost_steps"] == 5 and result.metrics["attempted_steps"] == 45  # resumed at 10
    assert result.metrics["w0"] == pytest.approx(-0.03 * 40)  # 40 steps of (1 + 2) * 0.01, as if never killed
