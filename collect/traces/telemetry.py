"""The telemetry trace format: every poll of every signal, and the phase marks.

More in ``docs/internals.md``.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from collect.traces.readings import Reading, SignalInfo
from prereg.errors import InputError, RetiredFormat
from prereg.fileio import atomic_write, read_regular_file
from prereg.jsoncodec import loads

TRACE_FORMAT = "collect/trace/v2"
RETIRED_TRACE_FORMATS = ("collect/trace/v1",)


@dataclass
class Phase:
    """A marked interval of the run (nestable: ``depth`` 0 is outermost)."""

    name: str
    start_ns: int
    end_ns: int
    depth: int


@dataclass
class Trace:
    """Readings in columns (numpy arrays), the signals' metadata, the polls and the phases."""

    signal: np.ndarray  # str
    t_before_ns: np.ndarray  # int64
    t_after_ns: np.ndarray  # int64
    value: np.ndarray  # float64, NaN when not ok
    status: np.ndarray  # str
    driver_ts_us: np.ndarray  # float64, NaN when absent
    signals: dict[str, SignalInfo]
    requested_poll_ms: float
    poll_ns: np.ndarray  # int64: when each poll began
    phases: list[Phase] = field(default_factory=list)
    sensor: str = ""
    evidence: str = "measured"
    power_range_w: tuple[float, float] | None = None  # the sensor's physical power bounds (W)
    _row_cache: dict[tuple[str, bool], tuple[Any, Any, Any, np.ndarray | None]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    @classmethod
    def from_readings(
        cls,
        readings: list[Reading],
        signals: dict[str, SignalInfo],
        requested_poll_ms: float,
        poll_ns: list[int],
        phases: list[Phase],
        sensor: str,
        evidence: str,
    ) -> Trace:
        """Build the columns from a list of readings."""
        return cls(
            signal=np.array([r.signal for r in readings], dtype=object),
            t_before_ns=np.array([r.t_before_ns for r in readings], dtype=np.int64),
            t_after_ns=np.array([r.t_after_ns for r in readings], dtype=np.int64),
            value=np.array([np.nan if r.value is None else r.value for r in readings], dtype=np.float64),
            status=np.array([r.status for r in readings], dtype=object),
            driver_ts_us=np.array(
                [np.nan if r.driver_ts_us is None else r.driver_ts_us for r in readings], dtype=np.float64
            ),
            signals=signals,
            requested_poll_ms=requested_poll_ms,
            poll_ns=np.array(poll_ns, dtype=np.int64),
            phases=phases,
            sensor=sensor,
            evidence=evidence,
        )

    def rows(self, signal: str, ok_only: bool = True) -> dict[str, np.ndarray]:
        """The readings of one signal, in time order (only ok ones by default).

        The row selection (string compares over every row: the costly part at millions of rows)
        is kept per (signal, ok_only) while ``signal``, ``status`` and ``t_before_ns`` are the
        same arrays; the sort is skipped when the rows are already in time order.
        """
        key = (signal, ok_only)
        hit = self._row_cache.get(key)
        if hit is not None and hit[0] is self.signal and hit[1] is self.status and hit[2] is self.t_before_ns:
            idx = hit[3]
        else:
            mask = self.signal == signal
            if ok_only:
                mask &= self.status == "ok"
            idx = np.flatnonzero(mask)
            t = self.t_before_ns[idx]
            if t.size > 1 and not bool(np.all(t[1:] >= t[:-1])):
                idx = idx[np.argsort(t, kind="stable")]
            elif idx.size == self.t_before_ns.size:
                idx = None  # every row, in order: copies, no gather
            self._row_cache[key] = (self.signal, self.status, self.t_before_ns, idx)
        if idx is None:
            return {
                "t_before_ns": self.t_before_ns.copy(),
                "t_after_ns": self.t_after_ns.copy(),
                "value": self.value.copy(),
                "driver_ts_us": self.driver_ts_us.copy(),
            }
        return {
            "t_before_ns": self.t_before_ns[idx],
            "t_after_ns": self.t_after_ns[idx],
            "value": self.value[idx],
            "driver_ts_us": self.driver_ts_us[idx],
        }

    def phase(self, name: str) -> Phase:
        """The first phase called ``name``."""
        for p in self.phases:
            if p.name == name:
                return p
        raise KeyError(name)


COLUMNS = ["signal", "t_before_ns", "t_after_ns", "value", "status", "driver_ts_us"]


def write_trace(trace: Trace, base: str | Path) -> list[Path]:
    """Write the trace beside ``base`` (Parquet when pyarrow is installed, else CSV.gz)."""
    base = Path(base)
    base.parent.mkdir(parents=True, exist_ok=True)
    try:
        import pyarrow as pa  # lazy: pyarrow
        import pyarrow.parquet as pq  # lazy: pyarrow
    except ImportError:
        pa = None
    if pa is not None:
        table = pa.table(
            {
                "signal": pa.array(list(trace.signal), pa.string()),
                "t_before_ns": trace.t_before_ns,
                "t_after_ns": trace.t_after_ns,
                "value": trace.value,
                "status": pa.array(list(trace.status), pa.string()),
                "driver_ts_us": trace.driver_ts_us,
            }
        )
        buffer = io.BytesIO()
        pq.write_table(table, buffer)
        polls = base.with_name(base.name + ".polls.parquet")
        atomic_write(polls, buffer.getvalue())
    else:
        text = io.StringIO()
        writer = csv.writer(text)
        writer.writerow(COLUMNS)
        for i in range(trace.signal.size):
            value = "" if np.isnan(trace.value[i]) else repr(float(trace.value[i]))
            stamp = "" if np.isnan(trace.driver_ts_us[i]) else str(int(trace.driver_ts_us[i]))
            writer.writerow(
                [trace.signal[i], int(trace.t_before_ns[i]), int(trace.t_after_ns[i]), value, trace.status[i], stamp]
            )
        polls = base.with_name(base.name + ".polls.csv.gz")
        atomic_write(polls, gzip.compress(text.getvalue().encode(), mtime=0))
    meta = {
        "format": TRACE_FORMAT,
        "sensor": trace.sensor,
        "evidence": trace.evidence,
        "signals": {
            n: {
                "unit": s.unit,
                "kind": s.kind,
                "evidence": s.evidence,
                **{
                    k: v
                    for k, v in (
                        ("window_ms", s.window_ms),
                        ("period_ms", s.period_ms),
                        ("period_basis", s.period_basis),
                        ("power_model", s.power_model),
                        ("lossy_joins", s.lossy_joins or None),
                    )
                    if v is not None
                },
            }
            for n, s in trace.signals.items()
        },
        "requested_poll_ms": trace.requested_poll_ms,
        "poll_ns": [int(x) for x in trace.poll_ns],
        "phases": [[p.name, p.start_ns, p.end_ns, p.depth] for p in trace.phases],
        "polls_file": polls.name,
        "power_range_w": None if trace.power_range_w is None else [float(x) for x in trace.power_range_w],
    }
    meta_path = base.with_name(base.name + ".meta.json")
    atomic_write(meta_path, json.dumps(meta, indent=1).encode())
    return [polls, meta_path]


class TraceError(InputError, ValueError):
    """A trace that cannot be read."""


MAX_TRACE_FILE_BYTES = 512 << 20  # a trace's file, on disk and decompressed


def _read_file(path: Path) -> bytes:
    """A trace file's bytes: a regular file (never a FIFO or device, never a link), size-bounded."""
    return read_regular_file(path, MAX_TRACE_FILE_BYTES, follow_links=False)


POLLS_SUFFIXES = (".polls.parquet", ".polls.csv.gz")


def meta_path_of(path: Path) -> Path:
    """A trace's ``.meta.json`` from any name of it: the base name, the meta file or its polls file."""
    name = path.name
    if name.endswith(".meta.json"):
        return path
    for suffix in POLLS_SUFFIXES:
        if name.endswith(suffix):
            return path.with_name(name[: -len(suffix)] + ".meta.json")
    return path.with_name(name + ".meta.json")


def read_trace(base: str | Path, load: Callable[[Path], bytes] | None = None) -> Trace:
    """Read a trace written by :func:`write_trace` (``base`` without the suffixes, or the meta file).

    ``load`` reads each of its files (default: a bounded regular-file read); a runs folder's reader
    passes one that checks each file against its ledger record (``collect.ledger.trace_check``).
    """
    base = Path(base)
    if not base.name:
        raise TraceError("no trace path given (replay:PATH names a trace's .meta.json or its base name)")
    meta_path = meta_path_of(base)
    read = load or _read_file
    try:
        meta: dict[str, Any] = loads(read(meta_path))
        if isinstance(meta, dict) and meta.get("format") in RETIRED_TRACE_FORMATS:
            raise RetiredFormat(
                meta_path,
                str(meta["format"]),
                TRACE_FORMAT,
                "record the telemetry again (collect run) or replay a trace this toolkit wrote",
            )
        if not isinstance(meta, dict) or meta.get("format") != TRACE_FORMAT:
            raise TraceError(f"{meta_path}: not a {TRACE_FORMAT} trace")
        polls_name = str(meta["polls_file"])
        if Path(polls_name).name != polls_name or polls_name in ("", ".", ".."):
            raise TraceError(f"{meta_path}: its polls_file {polls_name!r} is not a file beside it")
        polls = meta_path.with_name(polls_name)
        if polls.name.endswith(".parquet"):
            import pyarrow.parquet as pq  # lazy: pyarrow

            # in memory: no pre-buffering, whose background I/O threads can abort the process at exit
            cols = pq.read_table(io.BytesIO(read(polls)), use_threads=False, pre_buffer=False).to_pydict()
        else:
            with gzip.open(io.BytesIO(read(polls)), "rb") as gz:
                text = gz.read(MAX_TRACE_FILE_BYTES + 1)
            if len(text) > MAX_TRACE_FILE_BYTES:
                raise TraceError(f"{polls}: decompresses to more than {MAX_TRACE_FILE_BYTES} bytes; not read")
            rows = list(csv.DictReader(io.StringIO(text.decode("utf-8"), newline="")))
            cols = {c: [r[c] for r in rows] for c in COLUMNS}
    except TraceError:
        raise
    except (OSError, ValueError, KeyError, ImportError, TypeError) as err:  # an IntegrityError passes through
        raise TraceError(f"{meta_path}: cannot read the trace ({err})") from None
    try:
        signals = {
            n: SignalInfo(
                n,
                s["unit"],
                s["kind"],
                s["evidence"],
                None if s.get("window_ms") is None else float(s["window_ms"]),
                None if s.get("period_ms") is None else float(s["period_ms"]),
                None if s.get("period_basis") is None else str(s["period_basis"]),
                None if s.get("power_model") is None else str(s["power_model"]),
                s.get("lossy_joins") is True,
            )
            for n, s in meta["signals"].items()
        }
        sensor, evidence = meta["sensor"], meta["evidence"]
        if not isinstance(sensor, str) or not isinstance(evidence, str):
            raise TypeError("'sensor' and 'evidence' must be strings")
        power_range = meta["power_range_w"]
        power_range_w = None if power_range is None else (float(power_range[0]), float(power_range[1]))
    except (TypeError, ValueError, KeyError, IndexError) as err:
        raise TraceError(f"{meta_path}: not a valid trace description ({err})") from None

    def floats(values: list[Any]) -> np.ndarray:
        return np.array([np.nan if v in ("", None) else float(v) for v in values], dtype=np.float64)

    return Trace(
        signal=np.array(cols["signal"], dtype=object),
        t_before_ns=np.array([int(v) for v in cols["t_before_ns"]], dtype=np.int64),
        t_after_ns=np.array([int(v) for v in cols["t_after_ns"]], dtype=np.int64),
        value=floats(cols["value"]),
        status=np.array(cols["status"], dtype=object),
        driver_ts_us=floats(cols["driver_ts_us"]),
        signals=signals,
        requested_poll_ms=float(meta["requested_poll_ms"]),
        poll_ns=np.array(meta["poll_ns"], dtype=np.int64),
        phases=[Phase(str(n), int(a), int(b), int(d)) for n, a, b, d in meta["phases"]],
        sensor=sensor,
        evidence=evidence,
        power_range_w=power_range_w,
    )
