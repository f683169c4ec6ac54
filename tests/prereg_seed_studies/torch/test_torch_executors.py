"""torch.multisite through `collect run`: the same records in-process, in the local pool and on Ray (batched)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from tests.conftest import OWN_EXAMPLES
from tests.helpers import requires, run
from tests.helpers.engine import contents

pytestmark = [requires("torch"), pytest.mark.ray_instance]

SMALL = """    useful_tokens: 12288
    micro_batch: 64
    train_tokens: 16384
    heldout_tokens: 2048
    width: 64
    checkpoint_every_steps: 8
    outage_count: 1
    outage_horizon_ticks: 40
    outage_duration_ticks: 10
"""


@pytest.mark.slow
def test_torch_runs_record_the_same_whatever_the_executor(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = (OWN_EXAMPLES / "equal-work-torch.yaml").read_text()
    start, end = text.index("    useful_tokens:"), text.index("    outage_duration_dist:")
    text = text[:start] + SMALL + text[end:]
    text = text.replace("outage_site: [0, 1, 2]", "outage_site: [0, 2]").replace("seed: [101, 102]", "seed: [101]")
    plan = tmp_path / "torch.yaml"
    plan.write_text(text)
    assert run("prereg", "freeze", str(plan)).returncode == 0
    lock = str(tmp_path / "torch.lock.json")
    monkeypatch.delenv("RAY_ADDRESS", raising=False)  # Ray: a local instance of its own
    variants = {"serial": [], "pool": ["--jobs", "2"]}
    if importlib.util.find_spec("ray") is not None:
        variants["ray"] = ["--executor", "ray", "--jobs", "2"]
    for name, extra in variants.items():
        proc = run("collect", "run", lock, "--out", str(tmp_path / name), *extra)
        assert proc.returncode == 0, proc.stderr[-3000:]
    serial = contents(tmp_path / "serial")
    assert len(serial) == 4 and all(r["status"] == "complete" for r in serial)
    for name in variants:
        assert contents(tmp_path / name) == serial, name  # metrics, final state hashes, traces' bytes
