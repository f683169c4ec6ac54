"""Telemetry around a ``command`` run: the sensor sampled in the collector's process, outside the program.

More in ``docs/internals.md``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from collect.collectors.command.outputs import Mark, RunFailure, parse_mark, phases_of
from collect.collectors.command.process import Finished
from collect.collectors.command.runfolder import MARKS_FILE, RunFolder, read_marks_in
from collect.telemetry.sensors.base import Sensor, SensorError
from collect.telemetry.sensors.registry import open_sensor

if TYPE_CHECKING:
    from collect.traces.telemetry import Trace

PROGRAM = "program"  # the phase around the whole program


def sensor_for_env(spec: str, env: Mapping[str, str]) -> tuple[str, dict[str, Any]]:
    """The spec to open and a note for the record: a bare ``nvml`` reads the one GPU the program's
    ``CUDA_VISIBLE_DEVICES`` names (``nvml:index=N``); several, a UUID or none is a ``RunFailure``
    asking for an explicit index. NVML counts GPUs in PCI bus order, CUDA only with
    ``CUDA_DEVICE_ORDER=PCI_BUS_ID`` (recorded beside the index)."""
    visible = env.get("CUDA_VISIBLE_DEVICES")
    if spec != "nvml" or visible is None:
        return spec, {}
    devices = [d.strip() for d in visible.split(",") if d.strip()]
    if len(devices) != 1 or not devices[0].isdigit():
        raise RunFailure(
            f"sensor nvml reads one GPU, but CUDA_VISIBLE_DEVICES={visible!r} does not name exactly one "
            "GPU by index; name the GPU to read: sensor: nvml:index=N"
        )
    note = {
        "cuda_visible_devices": visible,
        "nvml_index": int(devices[0]),
        "cuda_device_order": env.get("CUDA_DEVICE_ORDER"),
    }
    return f"nvml:index={int(devices[0])}", note


class MarksTail:
    """Reads the marks file's new complete lines as the program writes them, and tells the recorder
    the innermost open phase (its sensor's load hint)."""

    def __init__(self, folder: RunFolder, recorder: Any) -> None:
        self.folder, self.rec = folder, recorder
        self.offset, self.line = 0, 0
        self.open: list[str] = []

    def poll(self) -> None:
        data = self.folder.read_at(MARKS_FILE, self.offset, 1 << 20)  # never through a link, never blocking
        end = data.rfind(b"\n")
        if end < 0:
            return
        self.offset += end + 1
        before = self.open[-1] if self.open else PROGRAM
        for raw in data[: end + 1].splitlines():
            self.line += 1
            try:
                mark = parse_mark(raw.decode("utf-8", "replace"), self.line)
            except RunFailure:
                continue  # reported when the file is read after the run
            if mark is None:
                continue
            if mark.kind == "begin":
                self.open.append(mark.name)
            elif self.open:
                self.open.pop()
        now = self.open[-1] if self.open else PROGRAM
        if now != before:
            self.rec.hint(now)


@dataclass
class Recorded:
    """The program's end, the telemetry trace and the sensor's power range (W)."""

    finished: Finished
    trace: Trace
    power_range_w: tuple[float, float]
    evidence: str


def _clock_offset(sensor: Sensor) -> int:
    """Host monotonic ns minus the sensor's clock, bracketed by two host readings."""
    a = time.monotonic_ns()
    s = sensor.now_ns()
    b = time.monotonic_ns()
    return (a + b) // 2 - s


def _replay_timeline(rec: Any, finished: Finished, marks: list[Mark]) -> None:
    """Play the program's timeline on a virtual clock: its wall time, its marks where they fell."""
    cursor = finished.start_ns
    stack: list[AbstractContextManager[Any]] = []
    for m in marks:
        t = min(max(m.after_ns if m.kind == "begin" else m.before_ns, cursor), finished.end_ns)
        rec.advance((t - cursor) / 1e6)
        cursor = t
        if m.kind == "begin":
            cm = rec.phase(m.name)
            cm.__enter__()
            stack.append(cm)
        else:
            stack.pop().__exit__(None, None, None)
    rec.advance((finished.end_ns - cursor) / 1e6)


def record_program(
    spec: str,
    signal: str,
    poll_ms: float,
    idle_ms: float,
    folder: RunFolder,
    launch: Callable[[Callable[[], None] | None], Finished],
) -> Recorded:
    """Run the program through ``launch(on_tick)`` with ``spec``'s sensor recording ``signal`` around it
    (see the module doc). The marks must nest (``RunFailure`` otherwise, after the program ran)."""
    from collect.telemetry.recording.recorder import Recorder  # lazy: numpy
    from collect.traces.telemetry import Phase  # lazy: numpy

    try:
        sensor = open_sensor(spec)
    except SensorError as err:
        raise RunFailure(f"sensor {spec!r}: {err}") from None
    with sensor:
        if signal not in sensor.signals() or signal in sensor.unavailable:
            why = sensor.unavailable.get(signal, "not one of its signals")
            raise RunFailure(f"sensor {spec!r} cannot read {signal} ({why})")
        rec = Recorder(sensor, [signal], poll_ms, spec=spec)
        if rec.virtual:
            finished = launch(None)
            marks = read_marks_in(folder)
            phases_of(marks)  # they nest, or the run fails here
            rec.start()
            if idle_ms > 0:
                with rec.phase("idle"):
                    rec.advance(idle_ms)
            with rec.phase(PROGRAM):
                _replay_timeline(rec, finished, marks)
            rec.stop()
            trace = rec.trace()
        else:
            tail = MarksTail(folder, rec)
            offset = _clock_offset(sensor)
            with rec:
                if idle_ms > 0:
                    with rec.phase("idle"):
                        rec.advance(idle_ms)
                with rec.phase(PROGRAM):
                    finished = launch(tail.poll if getattr(sensor, "set_phase", None) else None)
            trace = rec.trace()
            marked = phases_of(read_marks_in(folder))
            trace.phases = sorted(
                [*trace.phases, *(Phase(p.name, p.start_ns - offset, p.end_ns - offset, p.depth + 1) for p in marked)],
                key=lambda p: (p.start_ns, p.depth),
            )
        return Recorded(finished, trace, sensor.power_range_w(), sensor.evidence)
