"""A torch run keeps deterministic algorithms but never loads torch._dynamo / torch._inductor (about 800
modules, seconds of every worker's start), and computes bitwise what torch's own calls compute."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import REPO
from tests.helpers.torchrun import SMALL

pytestmark = pytest.mark.usefixtures("torch")  # skips where torch is missing


RUNS = r"""
import inspect, json, sys, tempfile
from pathlib import Path
if sys.argv[1] == "stock":
    import torch._dynamo  # loaded first: every call below takes torch's own path
import torch
from torch.optim import optimizer as base
from collect.collectors.base import RunContext
from prereg_seed_studies.torch.collector import TorchMultisiteCollector
out = {}
for policy in ("restart", "continue"):  # checkpoints saved and restored, survivors continuing
    params = {**json.loads(sys.argv[2]), "policy": policy}
    result = TorchMultisiteCollector().run(RunContext(f"run-{policy}", params, 101, {}, policy, 0,
                                                      Path(tempfile.mkdtemp())))
    out[policy] = {"metrics": result.metrics, "state": result.info["final_state_sha256"]}
out["loaded"] = sorted(m for m in sys.modules if m.startswith(("torch._dynamo", "torch._inductor")))[:5]
out["cache_left"] = [name for name in ("add_param_group", "zero_grad", "state_dict", "load_state_dict")
                     if hasattr(inspect.unwrap(getattr(base.Optimizer, name)), "__dynamo_disable")]
out["deterministic_after"] = torch.are_deterministic_algorithms_enabled()
print(json.dumps(out))
"""


def _in_fresh_python(code: str, *args: str) -> dict:
    proc = subprocess.run([sys.executable, "-c", code, *args], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.splitlines()[-1])


@pytest.mark.slow
def test_runs_never_load_dynamo_and_equal_torchs_own_path_bitwise() -> None:
    lean = _in_fresh_python(RUNS, "lean", json.dumps(SMALL))
    stock = _in_fresh_python(RUNS, "stock", json.dumps(SMALL))
    assert lean["loaded"] == [] and stock["loaded"]
    for policy in ("restart", "continue"):
        assert lean[policy] == stock[policy]  # metrics and the final model + optimizer state, bitwise
    assert lean["cache_left"] == []  # torch.optim is left as it was found
    assert lean["deterministic_after"] is stock["deterministic_after"] is False


def test_deterministic_sets_the_aten_switch_and_puts_the_previous_one_back(torch) -> None:
    from prereg_seed_studies.torch.trainer import deterministic, set_deterministic_algorithms  # lazy: torch

    set_deterministic_algorithms(True, warn_only=True)
    try:
        with deterministic(5):
            assert torch.are_deterministic_algorithms_enabled()
            assert not torch.is_deterministic_algorithms_warn_only_enabled()
            assert torch.utils.deterministic.fill_uninitialized_memory
            assert torch.isnan(torch.empty(16)).all()  # deterministic mode fills uninitialised memory
        assert torch.are_deterministic_algorithms_enabled() and torch.is_deterministic_algorithms_warn_only_enabled()
    finally:
        set_deterministic_algorithms(False)
    with deterministic(5):
        pass
    assert not torch.are_deterministic_algorithms_enabled()


INDUCTOR = r"""
import json
import torch._inductor.config as inductor
from prereg_seed_studies.torch.trainer import deterministic
before = inductor.deterministic
with deterministic(1):
    inside = inductor.deterministic
print(json.dumps([before, inside, inductor.deterministic]))
"""


@pytest.mark.slow
def test_with_inductor_loaded_its_deterministic_option_follows() -> None:
    assert _in_fresh_python(INDUCTOR) == [False, True, False]


def test_an_optimizer_with_step_hooks_takes_torchs_own_step(torch) -> None:
    from prereg_seed_studies.torch.trainer import optimizer_step  # lazy: imports torch

    param = torch.nn.Parameter(torch.ones(3))
    opt = torch.optim.Adam([param], lr=0.1)
    calls: list[int] = []
    opt.register_step_pre_hook(lambda *_: calls.append(1))
    param.grad = torch.ones(3)
    optimizer_step(opt)
    assert calls == [1] and bool((param < 1).all())
