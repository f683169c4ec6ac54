"""The ``nvml`` sensor: real NVIDIA GPU readings through nvidia-ml-py (module ``pynvml``).

More in ``docs/internals.md``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

from collect.telemetry.sensors.base import DEFAULT_POWER_RANGE_W, Sensor, SensorError, parse_spec_options
from collect.traces.readings import Kind, Reading, SignalInfo, Status

# NVML return codes (nvml.h, a stable C ABI; the same values as pynvml's NVML_ERROR_* constants).
NVML_SUCCESS = 0
NVML_ERROR_NOT_SUPPORTED = 3
NVML_ERROR_NO_PERMISSION = 4
NVML_ERROR_NOT_FOUND = 6
NVML_ERROR_DRIVER_NOT_LOADED = 9
NVML_ERROR_LIBRARY_NOT_FOUND = 12
NVML_ERROR_FUNCTION_NOT_FOUND = 13
# fmt: off
_ERROR_SUFFIXES = [  # index = NVML return code
    "SUCCESS", "UNINITIALIZED", "INVALID_ARGUMENT", "NOT_SUPPORTED", "NO_PERMISSION",
    "ALREADY_INITIALIZED", "NOT_FOUND", "INSUFFICIENT_SIZE", "INSUFFICIENT_POWER", "DRIVER_NOT_LOADED",
    "TIMEOUT", "IRQ_ISSUE", "LIBRARY_NOT_FOUND", "FUNCTION_NOT_FOUND", "CORRUPTED_INFOROM", "GPU_IS_LOST",
    "RESET_REQUIRED", "OPERATING_SYSTEM", "LIB_RM_VERSION_MISMATCH", "IN_USE", "MEMORY", "NO_DATA",
    "VGPU_ECC_NOT_SUPPORTED", "INSUFFICIENT_RESOURCES", "FREQ_NOT_SUPPORTED", "ARGUMENT_VERSION_MISMATCH",
    "DEPRECATED", "NOT_READY", "GPU_NOT_FOUND", "INVALID_STATE", "RESET_TYPE_NOT_SUPPORTED",
]
# fmt: on
#: NVML return code -> its nvml.h name (``NVML_ERROR_NOT_SUPPORTED``...).
NVML_ERROR_NAMES: dict[int, str] = {
    code: ("NVML_" if code == 0 else "NVML_ERROR_") + suffix for code, suffix in enumerate(_ERROR_SUFFIXES)
} | {999: "NVML_ERROR_UNKNOWN"}
_OPEN_TEXT = {
    NVML_ERROR_LIBRARY_NOT_FOUND: "NVML library libnvidia-ml.so.1 not found (no NVIDIA driver installed)",
    NVML_ERROR_DRIVER_NOT_LOADED: "NVIDIA driver not loaded",
    NVML_ERROR_NO_PERMISSION: "insufficient permissions",
}

#: signal -> (unit, kind), as in ``base``'s table.
SIGNALS: dict[str, tuple[str, Kind]] = {
    "energy_counter": ("mJ", "counter"),
    "power_instant": ("W", "gauge"),
    "power_average": ("W", "gauge"),
    "power_usage": ("W", "gauge"),
    "power_samples": ("W", "gauge"),
    "utilization_gpu": ("%", "gauge"),
    "temperature_gpu": ("C", "gauge"),
    "clock_sm": ("MHz", "gauge"),
    "clock_mem": ("MHz", "gauge"),
    "pstate": ("-", "gauge"),
    "clock_event_reasons": ("-", "gauge"),
}
#: the two signals read together by one ``nvmlDeviceGetFieldValues`` call -> their field-id constant
FIELD_SIGNALS = {"power_instant": "NVML_FI_DEV_POWER_INSTANT", "power_average": "NVML_FI_DEV_POWER_AVERAGE"}
# pynvml names each scalar signal needs (functions and constants)
_NEEDS: dict[str, tuple[str, ...]] = {
    "energy_counter": ("nvmlDeviceGetTotalEnergyConsumption",),
    "power_usage": ("nvmlDeviceGetPowerUsage",),
    "power_samples": ("nvmlDeviceGetSamples", "NVML_TOTAL_POWER_SAMPLES"),
    "utilization_gpu": ("nvmlDeviceGetUtilizationRates",),
    "temperature_gpu": ("nvmlDeviceGetTemperature", "NVML_TEMPERATURE_GPU"),
    "clock_sm": ("nvmlDeviceGetClockInfo", "NVML_CLOCK_SM"),
    "clock_mem": ("nvmlDeviceGetClockInfo", "NVML_CLOCK_MEM"),
    "pstate": ("nvmlDeviceGetPerformanceState",),
    "clock_event_reasons": ("nvmlDeviceGetCurrentClocksEventReasons",),
}
_THROTTLE_FN = "nvmlDeviceGetCurrentClocksThrottleReasons"  # the pre-r535 name of the event reasons
# NVML_VALUE_TYPE_* (nvml.h) -> member of the c_nvmlValue_t union holding the value
_UNION_MEMBER = {0: "dVal", 1: "uiVal", 2: "ulVal", 3: "ullVal", 4: "sllVal", 5: "siVal", 6: "usVal"}
_UNAVAILABLE_STATUSES = ("not_supported", "no_permission")


def classify_nvml_error(error: BaseException | int) -> tuple[Status, str]:
    """An ``NVMLError`` (or a bare NVML return code) -> (status, reason = the nvml.h error name).

    NotSupported and FunctionNotFound (the driver lacks the call) -> ``not_supported``;
    NoPermission -> ``no_permission``; everything else -> ``error``.
    """
    code = error if isinstance(error, int) else getattr(error, "value", None)
    name = NVML_ERROR_NAMES.get(code, f"NVML_ERROR_CODE_{code}") if isinstance(code, int) else repr(error)
    if code in (NVML_ERROR_NOT_SUPPORTED, NVML_ERROR_FUNCTION_NOT_FOUND):
        return "not_supported", name
    if code == NVML_ERROR_NO_PERMISSION:
        return "no_permission", name
    return "error", name


def _describe(error: BaseException) -> str:
    """One human line for an error that stops the sensor from opening."""
    code = getattr(error, "value", None)
    text = _OPEN_TEXT.get(code) if isinstance(code, int) else None
    if text is None:
        try:
            text = str(error) or type(error).__name__
        except Exception:  # noqa: BLE001 - pynvml's __str__ may itself call into NVML
            text = type(error).__name__
    return f"{text} ({classify_nvml_error(error)[1]})"


def _union_value(value: Any, value_type: int) -> float | None:
    """Read a ``c_nvmlValue_t`` union by its ``NVML_VALUE_TYPE_*``; None for an unknown type."""
    member = _UNION_MEMBER.get(value_type)
    return None if member is None else float(getattr(value, member))


def _text(value: object) -> str | None:
    """pynvml returns str or bytes depending on the call and version."""
    if isinstance(value, bytes):
        return value.decode(errors="replace")
    return None if value is None else str(value)


class NvmlSensor(Sensor):
    """One NVIDIA GPU read through NVML. Open with ``open_sensor("nvml[:index=N]")``."""

    evidence = "measured"

    def __init__(self, nv: ModuleType, handle: Any, index: int) -> None:
        """Use ``from_spec``; ``nv`` is an initialised ``pynvml`` and ``handle`` a device handle."""
        self._nv = nv
        self._handle = handle
        self.index = index
        self._closed = False
        self._last_sample_us = 0  # driver timestamp of the newest power sample already returned
        self._unavailable: dict[str, tuple[Status, str]] = {}
        self._field_ids: dict[str, int] = {}
        self._calls: dict[str, Callable[[], float]] = {}
        self._resolve()
        self._probe()

    @classmethod
    def from_spec(cls, rest: str) -> NvmlSensor:
        """Open GPU ``index=N`` (default 0); raises ``SensorError`` with one clear message."""
        index = parse_spec_options(rest, {"index": int}).get("index", 0)
        assert isinstance(index, int)
        if index < 0:
            raise SensorError(f"sensor option index={index} must be >= 0")
        try:
            import pynvml  # lazy: pynvml
        except ImportError as err:
            raise SensorError("cannot open NVML: nvidia-ml-py (module pynvml) is not installed") from err
        try:
            pynvml.nvmlInit()
        except pynvml.NVMLError as err:
            raise SensorError(f"cannot open NVML: {_describe(err)}") from err
        try:
            count = pynvml.nvmlDeviceGetCount()
            if not 0 <= index < count:
                seen = f"valid indices are 0..{count - 1}" if count else "NVML sees no GPU"
                raise SensorError(f"no NVIDIA GPU with index {index}: {seen}")
            return cls(pynvml, pynvml.nvmlDeviceGetHandleByIndex(index), index)
        except BaseException as err:
            try:
                pynvml.nvmlShutdown()
            except pynvml.NVMLError:
                pass
            if isinstance(err, pynvml.NVMLError):
                raise SensorError(f"cannot open NVIDIA GPU {index}: {_describe(err)}") from err
            raise

    # -- setup -------------------------------------------------------------------------------------

    def _resolve(self) -> None:
        """Bind each signal to its pynvml call; names this pynvml lacks make the signal unavailable."""
        nv, h = self._nv, self._handle
        for name, const in FIELD_SIGNALS.items():
            field_id = getattr(nv, const, None)
            if field_id is None:
                self._unavailable[name] = ("not_supported", f"pynvml has no {const} (nvidia-ml-py too old)")
            else:
                self._field_ids[name] = int(field_id)
        needs = dict(_NEEDS)
        if not hasattr(nv, needs["clock_event_reasons"][0]) and hasattr(nv, _THROTTLE_FN):
            needs["clock_event_reasons"] = (_THROTTLE_FN,)
        for name, names in needs.items():
            missing = [n for n in names if not hasattr(nv, n)]
            if missing:
                self._unavailable[name] = ("not_supported", f"pynvml has no {', '.join(missing)}")
        calls: dict[str, Callable[[], float]] = {
            "energy_counter": lambda: float(nv.nvmlDeviceGetTotalEnergyConsumption(h)),  # mJ
            "power_usage": lambda: nv.nvmlDeviceGetPowerUsage(h) / 1000.0,  # mW -> W
            "utilization_gpu": lambda: float(nv.nvmlDeviceGetUtilizationRates(h).gpu),
            "temperature_gpu": lambda: float(nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU)),
            "clock_sm": lambda: float(nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM)),
            "clock_mem": lambda: float(nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_MEM)),
            "pstate": lambda: float(nv.nvmlDeviceGetPerformanceState(h)),
            "clock_event_reasons": lambda: float(getattr(nv, needs["clock_event_reasons"][0])(h)),
        }
        self._calls = {name: call for name, call in calls.items() if name not in self._unavailable}

    def _probe(self) -> None:
        """Read every signal once; NotSupported / NoPermission make it unavailable for good."""
        if "clock_event_reasons" in self._calls and hasattr(self._nv, _THROTTLE_FN):
            detail = self._read_scalar("clock_event_reasons").detail
            if detail == NVML_ERROR_NAMES[NVML_ERROR_FUNCTION_NOT_FOUND]:  # driver < r535: old name only
                fallback = getattr(self._nv, _THROTTLE_FN)
                self._calls["clock_event_reasons"] = lambda: float(fallback(self._handle))
        probes = [self._read_scalar(name) for name in self._calls]
        probes += self._read_fields([n for n in FIELD_SIGNALS if n not in self._unavailable])
        if "power_samples" not in self._unavailable:
            probes += self._read_samples()  # also skips samples buffered before open
        for reading in probes:
            if reading.status in _UNAVAILABLE_STATUSES:
                self._unavailable[reading.signal] = (reading.status, reading.detail or reading.status)
                self._calls.pop(reading.signal, None)

    # -- Sensor interface ----------------------------------------------------------------------------

    def signals(self) -> dict[str, SignalInfo]:
        """All eleven NVML signals; unavailable ones carry evidence ``unavailable``."""
        return {
            name: SignalInfo(name, unit, kind, "unavailable" if name in self._unavailable else "measured")
            for name, (unit, kind) in SIGNALS.items()
        }

    @property
    def unavailable(self) -> dict[str, str]:
        """Signal -> reason (nvml.h error name, or the missing pynvml name)."""
        return {name: reason for name, (_, reason) in self._unavailable.items()}

    def now_ns(self) -> int:
        """Host monotonic clock, ns."""
        return time.monotonic_ns()

    def read(self, signals: Sequence[str]) -> list[Reading]:
        """Poll ``signals`` once, in the order asked (the two field-value powers share one call).

        ``power_samples`` gives one reading per new driver sample (possibly none).
        """
        unknown = [name for name in signals if name not in SIGNALS]
        if unknown:
            raise KeyError(f"unknown signal(s) {unknown}; known: {', '.join(SIGNALS)}")
        if self._closed:
            raise RuntimeError("NVML sensor is closed")
        out: list[Reading] = []
        wanted = list(dict.fromkeys(signals))
        fields = [n for n in wanted if n in FIELD_SIGNALS and n not in self._unavailable]
        for name in wanted:
            if name in self._unavailable:
                status, reason = self._unavailable[name]
                t = time.monotonic_ns()
                out.append(Reading(name, t, t, None, SIGNALS[name][0], status=status, detail=reason))
            elif name in FIELD_SIGNALS:
                if name == fields[0]:
                    out += self._read_fields(fields)
            elif name == "power_samples":
                out += self._read_samples()
            else:
                out.append(self._read_scalar(name))
        return out

    def close(self) -> None:
        """Shut NVML down (once; later calls do nothing)."""
        if self._closed:
            return
        self._closed = True
        try:
            self._nv.nvmlShutdown()
        except self._nv.NVMLError:
            pass

    def power_range_w(self) -> tuple[float, float]:
        """(0, 1.5 x the enforced power limit): power can exceed the limit briefly, never by half."""
        limit = self.device_info().get("power_limit_w")
        return (0.0, 1.5 * float(limit)) if isinstance(limit, (int, float)) and limit > 0 else DEFAULT_POWER_RANGE_W

    def device_info(self) -> dict[str, object]:
        """The device's identity for the run's environment; a field NVML refuses is None."""
        nv, h = self._nv, self._handle

        def get(fn_name: str, *args: Any) -> Any:
            fn = getattr(nv, fn_name, None)
            if fn is None:
                return None
            try:
                return fn(*args)
            except nv.NVMLError:
                return None

        limit_mw = get("nvmlDeviceGetEnforcedPowerLimit", h)
        if limit_mw is None:
            limit_mw = get("nvmlDeviceGetPowerManagementLimit", h)
        return {
            "index": self.index,
            "name": _text(get("nvmlDeviceGetName", h)),
            "uuid": _text(get("nvmlDeviceGetUUID", h)),
            "driver_version": _text(get("nvmlSystemGetDriverVersion")),
            "nvml_version": _text(get("nvmlSystemGetNVMLVersion")),
            "power_limit_w": None if limit_mw is None else limit_mw / 1000.0,
        }

    # -- readers ---------------------------------------------------------------------------------------

    def _failed(self, name: str, t0: int, t1: int, status: Status, reason: str) -> Reading:
        return Reading(name, t0, t1, None, SIGNALS[name][0], status=status, detail=reason)

    def _read_scalar(self, name: str) -> Reading:
        """One plain NVML getter call, converted to the signal's unit."""
        t0 = time.monotonic_ns()
        try:
            value = self._calls[name]()
        except self._nv.NVMLError as err:
            t1 = time.monotonic_ns()
            return self._failed(name, t0, t1, *classify_nvml_error(err))
        return Reading(name, t0, time.monotonic_ns(), value, SIGNALS[name][0])

    def _read_fields(self, names: list[str]) -> list[Reading]:
        """``power_instant`` / ``power_average`` in ONE ``nvmlDeviceGetFieldValues`` call (mW -> W).

        Each value has its own ``nvmlReturn`` (one may fail while the other succeeds) and its own
        driver timestamp (us), kept as ``driver_ts_us``.
        """
        if not names:
            return []
        nv = self._nv
        t0 = time.monotonic_ns()
        try:
            values = nv.nvmlDeviceGetFieldValues(self._handle, [self._field_ids[n] for n in names])
        except nv.NVMLError as err:
            t1 = time.monotonic_ns()
            status, reason = classify_nvml_error(err)
            return [self._failed(n, t0, t1, status, reason) for n in names]
        t1 = time.monotonic_ns()
        out: list[Reading] = []
        for name, fv in zip(names, values, strict=True):
            ret = int(fv.nvmlReturn)
            raw = _union_value(fv.value, int(fv.valueType)) if ret == NVML_SUCCESS else None
            if ret != NVML_SUCCESS:
                out.append(self._failed(name, t0, t1, *classify_nvml_error(ret)))
            elif raw is None:
                out.append(self._failed(name, t0, t1, "error", f"unknown NVML value type {int(fv.valueType)}"))
            else:
                out.append(Reading(name, t0, t1, raw / 1000.0, "W", driver_ts_us=int(fv.timestamp)))
        return out

    def _read_samples(self) -> list[Reading]:
        """New buffered power samples since the last poll (mW -> W), each with its driver timestamp.

        ``t_before_ns``/``t_after_ns`` bound the poll, not the sample (which the driver took earlier,
        at ``driver_ts_us``). NOT_FOUND (no new samples) gives an empty list.
        """
        nv = self._nv
        t0 = time.monotonic_ns()
        try:
            value_type, samples = nv.nvmlDeviceGetSamples(
                self._handle, nv.NVML_TOTAL_POWER_SAMPLES, self._last_sample_us
            )
        except nv.NVMLError as err:
            t1 = time.monotonic_ns()
            if getattr(err, "value", None) == NVML_ERROR_NOT_FOUND:
                return []
            return [self._failed("power_samples", t0, t1, *classify_nvml_error(err))]
        t1 = time.monotonic_ns()
        out: list[Reading] = []
        newest = self._last_sample_us
        for sample in samples:
            ts = int(sample.timeStamp)
            if ts <= self._last_sample_us:  # already returned by an earlier poll
                continue
            newest = max(newest, ts)
            raw = _union_value(sample.sampleValue, int(value_type))
            if raw is None:
                out.append(
                    Reading(
                        "power_samples",
                        t0,
                        t1,
                        None,
                        "W",
                        status="error",
                        driver_ts_us=ts,
                        detail=f"unknown NVML value type {int(value_type)}",
                    )
                )
            else:
                out.append(Reading("power_samples", t0, t1, raw / 1000.0, "W", driver_ts_us=ts))
        self._last_sample_us = newest
        return out
