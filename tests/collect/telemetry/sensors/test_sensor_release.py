"""A collector run that fails mid-way still closes its sensor (NVML is released, not leaked).

The torch collector opens its sensor through ``collect.telemetry.sensors.registry`` and holds it in a
``with`` block; here the registry's ``sim`` entry points at a sensor that records ``close()``, and
training (``prereg_seed_studies.torch.run``, replaced by a stand-in module, so no torch is needed) raises.
"""

from __future__ import annotations

import sys
import types
from pathlib import Path
from typing import Any

import pytest

from collect.collectors.base import RunContext
from collect.telemetry.sensors import registry
from collect.telemetry.sensors.sim import SimSensor


class RecordingSensor(SimSensor):
    """A simulated sensor that counts its ``close()`` calls."""

    closed: list[int] = []

    def close(self) -> None:
        RecordingSensor.closed.append(id(self))
        super().close()


def _failing_training(*args: Any, **kwargs: Any) -> Any:
    raise RuntimeError("the trainer blew up mid-run")


@pytest.fixture
def recording(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    RecordingSensor.closed = []
    monkeypatch.setitem(registry.SENSORS, "sim", f"{__name__}:RecordingSensor")
    return RecordingSensor.closed


def test_the_registry_opens_the_registered_class(recording: list[int]) -> None:
    with registry.open_sensor("sim:clock=virtual") as sensor:
        assert isinstance(sensor, RecordingSensor)
    assert recording == [id(sensor)]


def test_a_torch_run_that_raises_closes_its_sensor(
    recording: list[int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from prereg_seed_studies.torch.collector import TorchMultisiteCollector

    stand_in = types.ModuleType("prereg_seed_studies.torch.run")
    stand_in.train_through_failures = _failing_training  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "prereg_seed_studies.torch.run", stand_in)
    ctx = RunContext("run-x", {"policy": "restart", "sensor": "sim:clock=virtual"}, 101, {}, "fixed", 0, tmp_path)
    with pytest.raises(RuntimeError, match="blew up"):
        TorchMultisiteCollector().run(ctx)
    assert len(recording) == 1
