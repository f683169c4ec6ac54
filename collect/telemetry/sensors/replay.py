"""Replay a recorded trace as a sensor (``replay:PATH``): for re-analysis and tests.

More in ``docs/internals.md``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from collect.telemetry.sensors.base import Reading, Sensor, SensorError, SignalInfo
from collect.traces.telemetry import Trace, TraceError, meta_path_of, read_trace


class ReplaySensor(Sensor):
    """A recorded trace played back on a virtual clock."""

    virtual = True

    def __init__(self, trace: Trace) -> None:
        self.trace = trace
        self.evidence = "modeled" if trace.evidence == "modeled" else "measured"
        self._rows = {name: trace.rows(name, ok_only=False) for name in trace.signals}
        self._status = {name: trace.status[trace.signal == name] for name in trace.signals}
        self._t = int(trace.poll_ns[0]) if trace.poll_ns.size else 0

    @classmethod
    def from_spec(cls, rest: str) -> ReplaySensor:
        """``replay:PATH``: the trace at ``PATH`` (see :meth:`from_path`)."""
        return cls.from_path(rest)

    @classmethod
    def from_path(cls, path: str) -> ReplaySensor:
        """Open the trace written at ``path`` (its base name or its ``.meta.json``), checked against
        its ledger record when it lies in a runs folder (:func:`read_replay_trace`)."""
        try:
            return cls(read_replay_trace(path)[0])
        except TraceError as err:
            raise SensorError(str(err)) from None

    def signals(self) -> dict[str, SignalInfo]:
        """The recorded signals."""
        return dict(self.trace.signals)

    @property
    def unavailable(self) -> dict[str, str]:
        """Signals the original run could not read (no ok reading at all)."""
        return {
            name: str(self._status[name][0])
            for name in self.trace.signals
            if self._status[name].size and not np.any(self._status[name] == "ok")
        }

    def power_range_w(self) -> tuple[float, float]:
        """The original sensor's power range when the trace kept it, else the conservative default."""
        return self.trace.power_range_w if self.trace.power_range_w is not None else super().power_range_w()

    def now_ns(self) -> int:
        """The replay's virtual clock."""
        return self._t

    def advance(self, ns: int) -> None:
        """Let ``ns`` of replay time pass."""
        self._t += int(ns)

    def read(self, signals: Sequence[str]) -> list[Reading]:
        """The last recorded value of each signal at or before now."""
        out = []
        for name in signals:
            if name not in self.trace.signals:
                raise KeyError(name)
            rows = self._rows[name]
            k = int(np.searchsorted(rows["t_before_ns"], self._t, side="right")) - 1
            unit = self.trace.signals[name].unit
            if k < 0:
                out.append(
                    Reading(name, self._t, self._t, None, unit, "error", None, "before the first recorded reading")
                )
                continue
            value = float(rows["value"][k])
            stamp = rows["driver_ts_us"][k]
            ok = not np.isnan(value)
            out.append(
                Reading(
                    name,
                    self._t,
                    self._t,
                    value if ok else None,
                    unit,
                    "ok" if ok else "error",
                    None if np.isnan(stamp) else int(stamp),
                )
            )
        return out


def read_replay_trace(path: str) -> tuple[Trace, str | None]:
    """The trace ``replay:PATH`` names, and a note when it could not be checked against a ledger.

    In a runs folder every file of the trace must match its record's SHA-256 (``IntegrityError``,
    exit 3, otherwise, and when no record lists it); elsewhere it is read as it is (bounded, regular
    files only) and the note says it was not checked. No path is a ``TraceError`` (exit 2).
    """
    if not path.strip():
        raise TraceError("replay: needs the path of a kept trace (replay:RUNS/traces/<run_id>.telemetry.meta.json)")
    from collect.ledger.store import read_ledger  # lazy: pydantic
    from collect.ledger.trace_check import runs_folder_of, trace_record, verified_loader  # lazy: pydantic

    base = Path(path)
    meta = meta_path_of(base)
    runs = runs_folder_of(meta)
    if runs is None:
        return read_trace(base), (
            f"{meta}: not in a runs folder's traces/ (beside a ledger.jsonl), so no ledger "
            "record can vouch for it; re-analysed as it is"
        )
    record, _ = trace_record(runs, meta, read_ledger(runs).records)
    return read_trace(meta, load=verified_loader(runs, record)), None
