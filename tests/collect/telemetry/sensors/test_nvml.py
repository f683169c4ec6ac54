"""The NVML sensor against a fake ``pynvml`` (CI has no GPU): per-field errors, stale timestamps,
NotSupported / NoPermission never read as zero, buffered samples, units, open failures."""

from __future__ import annotations

import ctypes
import string
import subprocess
import sys
import time
from types import ModuleType
from typing import ClassVar

import pytest

from collect.telemetry.sensors.base import SensorError
from collect.telemetry.sensors.nvml import NVML_ERROR_NAMES, NvmlSensor, classify_nvml_error
from collect.telemetry.sensors.registry import open_sensor

# NVML return codes and constants, with pynvml's names and values (checked against the real module below).
CODES = {
    "NVML_ERROR_UNINITIALIZED": 1,
    "NVML_ERROR_NOT_SUPPORTED": 3,
    "NVML_ERROR_NO_PERMISSION": 4,
    "NVML_ERROR_NOT_FOUND": 6,
    "NVML_ERROR_DRIVER_NOT_LOADED": 9,
    "NVML_ERROR_LIBRARY_NOT_FOUND": 12,
    "NVML_ERROR_FUNCTION_NOT_FOUND": 13,
    "NVML_ERROR_GPU_IS_LOST": 15,
    "NVML_ERROR_UNKNOWN": 999,
}
CONSTANTS = {
    "NVML_SUCCESS": 0,
    "NVML_TEMPERATURE_GPU": 0,
    "NVML_CLOCK_SM": 1,
    "NVML_CLOCK_MEM": 2,
    "NVML_TOTAL_POWER_SAMPLES": 0,
    "NVML_FI_DEV_POWER_AVERAGE": 185,
    "NVML_FI_DEV_POWER_INSTANT": 186,
    "NVML_VALUE_TYPE_DOUBLE": 0,
    "NVML_VALUE_TYPE_UNSIGNED_INT": 1,
    "NVML_VALUE_TYPE_UNSIGNED_LONG": 2,
    "NVML_VALUE_TYPE_UNSIGNED_LONG_LONG": 3,
    "NVML_VALUE_TYPE_SIGNED_LONG_LONG": 4,
    "NVML_VALUE_TYPE_SIGNED_INT": 5,
}
C = {**CODES, **CONSTANTS}
INSTANT, AVERAGE = C["NVML_FI_DEV_POWER_INSTANT"], C["NVML_FI_DEV_POWER_AVERAGE"]
UINT = C["NVML_VALUE_TYPE_UNSIGNED_INT"]


# ctypes layouts as in pynvml (c_nvmlValue_t, c_nvmlFieldValue_t, c_nvmlSample_t), so the sensor
# must read the union by valueType exactly as it would on a real device.
class Value(ctypes.Union):
    _fields_ = [("dVal", ctypes.c_double), ("uiVal", ctypes.c_uint), ("ulVal", ctypes.c_ulong),
                ("ullVal", ctypes.c_ulonglong), ("sllVal", ctypes.c_longlong), ("siVal", ctypes.c_int),
                ("usVal", ctypes.c_ushort)]  # fmt: skip


class FieldValue(ctypes.Structure):
    _fields_ = [("fieldId", ctypes.c_uint32), ("scopeId", ctypes.c_uint32), ("timestamp", ctypes.c_int64),
                ("latencyUsec", ctypes.c_int64), ("valueType", ctypes.c_uint), ("nvmlReturn", ctypes.c_uint),
                ("value", Value)]  # fmt: skip


class Sample(ctypes.Structure):
    _fields_ = [("timeStamp", ctypes.c_ulonglong), ("sampleValue", Value)]


MEMBER = {0: "dVal", 1: "uiVal", 2: "ulVal", 3: "ullVal", 4: "sllVal", 5: "siVal"}


class NVMLError(Exception):
    """Mirrors pynvml: ``NVMLError(code)`` builds the matching subclass and sets ``.value``."""

    _valClassMapping: ClassVar[dict[int, type]] = {}

    def __new__(cls, value: int):
        typ = NVMLError._valClassMapping.get(value, cls) if cls is NVMLError else cls
        obj = Exception.__new__(typ)
        obj.value = value
        return obj

    def __str__(self) -> str:
        return f"NVML error {self.value}"


ERROR_CLASSES: dict[str, type] = {}
for _name, _code in CODES.items():  # NVML_ERROR_NOT_SUPPORTED -> NVMLError_NotSupported, as pynvml does
    _cls_name = "NVMLError_" + string.capwords(_name.replace("NVML_ERROR_", ""), "_").replace("_", "")
    _cls = type(_cls_name, (NVMLError,), {"__new__": lambda cls, *a, _v=_code: NVMLError.__new__(cls, _v)})
    NVMLError._valClassMapping[_code] = _cls
    ERROR_CLASSES[_cls_name] = _cls


class FakeNvml:
    """The pynvml calls the sensor makes, on one fake GPU. Tests change the attributes."""

    def __init__(self) -> None:
        self.count = 1
        self.init_error: int | None = None
        self.fail: dict[str, int] = {}  # pynvml function name -> NVML code it raises
        self.calls: list[tuple] = []
        self.shutdowns = 0
        self.energy_mj = 987_654_321
        self.power_mw = 123_456
        # field id -> (nvmlReturn, valueType, value, timestamp_us)
        self.fields: dict[int, tuple[int, int, float, int]] = {
            INSTANT: (0, UINT, 250_000, 1_000_000),
            AVERAGE: (0, UINT, 240_000, 1_000_500),
        }
        self.samples: list[tuple[int, int]] = []  # (timestamp_us, mW), unsigned int values
        self.samples_ignore_last_seen = False  # a misbehaving driver returning its whole buffer

    def module(self, drop: tuple[str, ...] = ()) -> ModuleType:
        mod = ModuleType("pynvml")
        for name in dir(self):
            if name.startswith("nvml"):
                setattr(mod, name, self._wrap(name, getattr(self, name)))
        for name, value in {**C, **ERROR_CLASSES, "NVMLError": NVMLError}.items():
            setattr(mod, name, value)
        for name in drop:
            delattr(mod, name)
        return mod

    def _wrap(self, name: str, fn):
        def call(*args):
            self.calls.append((name, *args))
            if name in self.fail:
                raise NVMLError(self.fail[name])
            return fn(*args)

        return call

    def called(self, name: str) -> list[tuple]:
        return [c for c in self.calls if c[0] == name]

    def nvmlInit(self) -> None:
        if self.init_error is not None:
            raise NVMLError(self.init_error)

    def nvmlShutdown(self) -> None:
        self.shutdowns += 1

    def nvmlDeviceGetCount(self) -> int:
        return self.count

    def nvmlDeviceGetHandleByIndex(self, index: int) -> str:
        return f"handle{index}"

    def nvmlDeviceGetTotalEnergyConsumption(self, handle) -> int:
        return self.energy_mj

    def nvmlDeviceGetPowerUsage(self, handle) -> int:
        return self.power_mw

    def nvmlDeviceGetFieldValues(self, handle, field_ids):
        values = (FieldValue * len(field_ids))()
        for slot, field_id in zip(values, field_ids, strict=True):
            ret, vtype, value, ts = self.fields[field_id]
            slot.fieldId, slot.nvmlReturn, slot.valueType, slot.timestamp = field_id, ret, vtype, ts
            setattr(slot.value, MEMBER[vtype], value)
        return values

    def nvmlDeviceGetSamples(self, handle, sampling_type, last_seen):
        new = [(ts, mw) for ts, mw in self.samples if ts > last_seen or self.samples_ignore_last_seen]
        if not new:
            raise NVMLError(C["NVML_ERROR_NOT_FOUND"])
        out = [Sample(ts) for ts, _ in new]
        for sample, (_, mw) in zip(out, new, strict=True):
            sample.sampleValue.uiVal = mw
        return UINT, out

    def nvmlDeviceGetUtilizationRates(self, handle):
        return type("Utilization", (), {"gpu": 87, "memory": 40})()

    def nvmlDeviceGetTemperature(self, handle, sensor) -> int:
        assert sensor == C["NVML_TEMPERATURE_GPU"]
        return 61

    def nvmlDeviceGetClockInfo(self, handle, clock) -> int:
        return {C["NVML_CLOCK_SM"]: 1980, C["NVML_CLOCK_MEM"]: 2619}[clock]

    def nvmlDeviceGetPerformanceState(self, handle) -> int:
        return 0

    def nvmlDeviceGetCurrentClocksEventReasons(self, handle) -> int:
        return 0x4

    def nvmlDeviceGetCurrentClocksThrottleReasons(self, handle) -> int:
        return 0x8

    def nvmlDeviceGetName(self, handle) -> str:
        return "NVIDIA H100 80GB HBM3"

    def nvmlDeviceGetUUID(self, handle) -> str:
        return "GPU-0000"

    def nvmlSystemGetDriverVersion(self) -> str:
        return "550.54.15"

    def nvmlSystemGetNVMLVersion(self) -> bytes:
        return b"12.550.54.15"

    def nvmlDeviceGetEnforcedPowerLimit(self, handle) -> int:
        return 700_000


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> FakeNvml:
    state = FakeNvml()
    monkeypatch.setitem(sys.modules, "pynvml", state.module())
    return state


def install(monkeypatch: pytest.MonkeyPatch, state: FakeNvml, drop: tuple[str, ...] = ()) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", state.module(drop))


def by_signal(readings) -> dict:
    return {r.signal: r for r in readings}


def test_fake_mirrors_real_pynvml_names_and_values() -> None:
    pynvml = pytest.importorskip("pynvml")
    for name, value in C.items():
        assert getattr(pynvml, name) == value, name
    for name, cls in ERROR_CLASSES.items():
        real = getattr(pynvml, name)
        assert issubclass(real, pynvml.NVMLError)
        assert real().value == cls().value  # pynvml subclasses take no argument and carry .value
        assert type(pynvml.NVMLError(cls().value)) is real
    assert [n for n, _ in pynvml.c_nvmlFieldValue_t._fields_] == [n for n, _ in FieldValue._fields_]
    assert [n for n, _ in pynvml.c_nvmlValue_t._fields_] == [n for n, _ in Value._fields_]
    real_names = {getattr(pynvml, n): n for n in dir(pynvml) if n.startswith("NVML_ERROR_")}
    assert {k: v for k, v in NVML_ERROR_NAMES.items() if k} == {k: real_names[k] for k in NVML_ERROR_NAMES if k}


@pytest.mark.subprocess(quick=True)
def test_importing_the_module_does_not_import_pynvml() -> None:
    code = "import sys, collect.telemetry.sensors.nvml; assert 'pynvml' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_classify_maps_each_error_once() -> None:
    assert classify_nvml_error(NVMLError(3)) == ("not_supported", "NVML_ERROR_NOT_SUPPORTED")
    assert classify_nvml_error(ERROR_CLASSES["NVMLError_NoPermission"]()) == (
        "no_permission",
        "NVML_ERROR_NO_PERMISSION",
    )
    assert classify_nvml_error(15) == ("error", "NVML_ERROR_GPU_IS_LOST")
    assert classify_nvml_error(12345) == ("error", "NVML_ERROR_CODE_12345")


def test_all_signals_available_with_units(fake: FakeNvml) -> None:
    with open_sensor("nvml") as sensor:
        assert sensor.evidence == "measured"
        assert sensor.unavailable == {}
        infos = sensor.signals()
        assert {i.evidence for i in infos.values()} == {"measured"}
        assert infos["energy_counter"].kind == "counter" and infos["energy_counter"].unit == "mJ"
        got = by_signal(sensor.read(list(infos)))
    assert got["energy_counter"].value == 987_654_321 and got["energy_counter"].unit == "mJ"
    assert got["power_usage"].value == pytest.approx(123.456) and got["power_usage"].unit == "W"
    assert got["power_instant"].value == pytest.approx(250.0)
    assert got["power_average"].value == pytest.approx(240.0)
    assert got["utilization_gpu"].value == 87 and got["utilization_gpu"].unit == "%"
    assert got["temperature_gpu"].value == 61 and got["temperature_gpu"].unit == "C"
    assert (got["clock_sm"].value, got["clock_mem"].value) == (1980, 2619)
    assert got["pstate"].value == 0
    assert got["clock_event_reasons"].value == 0x4
    assert "power_samples" not in got  # no samples buffered: nothing, and no error
    for r in got.values():
        assert r.status == "ok" and r.t_before_ns <= r.t_after_ns
        assert r.unit == infos[r.signal].unit
    assert fake.shutdowns == 1


def test_read_calls_only_what_is_asked(fake: FakeNvml) -> None:
    sensor = open_sensor("nvml")
    fake.calls.clear()
    [reading] = sensor.read(["power_usage"])
    assert reading.signal == "power_usage"
    assert [c[0] for c in fake.calls] == ["nvmlDeviceGetPowerUsage"]
    fake.calls.clear()
    readings = sensor.read(["power_average", "clock_sm", "power_instant"])
    assert [r.signal for r in readings] == ["power_average", "power_instant", "clock_sm"]
    field_calls = fake.called("nvmlDeviceGetFieldValues")
    assert len(field_calls) == 1 and list(field_calls[0][2]) == [AVERAGE, INSTANT]


def test_per_field_errors_in_one_call(fake: FakeNvml) -> None:
    fake.fields[AVERAGE] = (C["NVML_ERROR_NOT_SUPPORTED"], UINT, 0, 0)
    sensor = open_sensor("nvml")
    assert sensor.unavailable == {"power_average": "NVML_ERROR_NOT_SUPPORTED"}
    assert sensor.signals()["power_average"].evidence == "unavailable"
    assert sensor.signals()["power_instant"].evidence == "measured"
    got = by_signal(sensor.read(["power_instant", "power_average"]))
    assert got["power_instant"].status == "ok" and got["power_instant"].value == pytest.approx(250.0)
    assert got["power_instant"].driver_ts_us == 1_000_000
    assert got["power_average"].status == "not_supported" and got["power_average"].value is None
    assert got["power_average"].detail == "NVML_ERROR_NOT_SUPPORTED"


def test_transient_per_field_error_is_an_error_not_unavailable(fake: FakeNvml) -> None:
    sensor = open_sensor("nvml")
    fake.fields[INSTANT] = (C["NVML_ERROR_GPU_IS_LOST"], UINT, 0, 0)
    fake.calls.clear()
    got = by_signal(sensor.read(["power_instant", "power_average"]))
    assert len(fake.called("nvmlDeviceGetFieldValues")) == 1
    assert got["power_instant"].status == "error" and got["power_instant"].value is None
    assert got["power_instant"].detail == "NVML_ERROR_GPU_IS_LOST"
    assert got["power_average"].status == "ok" and got["power_average"].driver_ts_us == 1_000_500
    assert sensor.unavailable == {}


def test_whole_field_call_failing_marks_both(fake: FakeNvml) -> None:
    fake.fail["nvmlDeviceGetFieldValues"] = C["NVML_ERROR_NOT_SUPPORTED"]
    sensor = open_sensor("nvml")
    assert set(sensor.unavailable) == {"power_instant", "power_average"}


@pytest.mark.parametrize(
    ("vtype", "raw", "watts"),
    [(0, 251_500.5, 251.5005), (1, 250_000, 250.0), (2, 260_000, 260.0), (3, 2**33, 2**33 / 1000), (4, 7, 0.007),
     (5, 300_000, 300.0)],
)  # fmt: skip
def test_field_value_union_read_by_value_type(fake: FakeNvml, vtype: int, raw: float, watts: float) -> None:
    fake.fields[INSTANT] = (0, vtype, raw, 5)
    [reading] = open_sensor("nvml").read(["power_instant"])
    assert reading.value == pytest.approx(watts)


def test_unknown_value_type_is_an_error(fake: FakeNvml) -> None:
    sensor = open_sensor("nvml")
    fake.fields[INSTANT] = (0, 1, 1, 5)
    real_getter = fake.nvmlDeviceGetFieldValues

    def odd_type(handle, ids):
        values = real_getter(handle, ids)
        values[0].valueType = 42
        return values

    monkey = sys.modules["pynvml"]
    monkey.nvmlDeviceGetFieldValues = odd_type
    [reading] = sensor.read(["power_instant"])
    assert reading.status == "error" and reading.value is None and "42" in reading.detail


def test_stale_driver_timestamps_pass_through(fake: FakeNvml) -> None:
    sensor = open_sensor("nvml")
    first = sensor.read(["power_instant"])[0]
    second = sensor.read(["power_instant"])[0]
    assert first.driver_ts_us == second.driver_ts_us == 1_000_000
    assert first.value == second.value == pytest.approx(250.0)
    assert first.t_after_ns <= second.t_before_ns  # host bounds still advance


def test_energy_not_supported_is_never_zero(fake: FakeNvml) -> None:
    fake.fail["nvmlDeviceGetTotalEnergyConsumption"] = C["NVML_ERROR_NOT_SUPPORTED"]
    sensor = open_sensor("nvml")
    assert sensor.unavailable["energy_counter"] == "NVML_ERROR_NOT_SUPPORTED"
    assert sensor.signals()["energy_counter"].evidence == "unavailable"
    calls_before = len(fake.called("nvmlDeviceGetTotalEnergyConsumption"))
    [reading] = sensor.read(["energy_counter"])
    assert reading.status == "not_supported" and reading.value is None and reading.unit == "mJ"
    assert reading.detail == "NVML_ERROR_NOT_SUPPORTED"
    assert len(fake.called("nvmlDeviceGetTotalEnergyConsumption")) == calls_before  # not asked again


def test_no_permission(fake: FakeNvml) -> None:
    fake.fail["nvmlDeviceGetPowerUsage"] = C["NVML_ERROR_NO_PERMISSION"]
    sensor = open_sensor("nvml")
    assert sensor.unavailable == {"power_usage": "NVML_ERROR_NO_PERMISSION"}
    [reading] = sensor.read(["power_usage"])
    assert (reading.status, reading.value) == ("no_permission", None)


def test_transient_scalar_error_stays_available(fake: FakeNvml) -> None:
    sensor = open_sensor("nvml")
    fake.fail["nvmlDeviceGetTemperature"] = C["NVML_ERROR_UNKNOWN"]
    [reading] = sensor.read(["temperature_gpu"])
    assert (reading.status, reading.value, reading.detail) == ("error", None, "NVML_ERROR_UNKNOWN")
    assert sensor.unavailable == {}


@pytest.mark.parametrize(
    ("code", "words"),
    [("NVML_ERROR_DRIVER_NOT_LOADED", "driver not loaded"), ("NVML_ERROR_LIBRARY_NOT_FOUND", "not found"),
     ("NVML_ERROR_UNKNOWN", "NVML error 999")],
)  # fmt: skip
def test_no_driver_raises_sensor_error(fake: FakeNvml, code: str, words: str) -> None:
    fake.init_error = C[code]
    with pytest.raises(SensorError) as info:
        open_sensor("nvml")
    message = str(info.value)
    assert message.startswith("cannot open NVML: ") and words in message and f"({code})" in message


@pytest.mark.parametrize("spec", ["nvml:index=2", "nvml:index=-1", "nvml:index=x", "nvml:gpu=0"])
def test_bad_index_or_option(fake: FakeNvml, spec: str) -> None:
    fake.count = 2
    with pytest.raises(SensorError, match="index|option"):
        open_sensor(spec)
    assert fake.shutdowns == len(fake.called("nvmlInit"))  # every successful init is shut down


def test_no_gpu_at_all(fake: FakeNvml) -> None:
    fake.count = 0
    with pytest.raises(SensorError, match="sees no GPU"):
        open_sensor("nvml")
    assert fake.shutdowns == 1


def test_handle_error_is_a_sensor_error(fake: FakeNvml) -> None:
    fake.fail["nvmlDeviceGetHandleByIndex"] = C["NVML_ERROR_NO_PERMISSION"]
    with pytest.raises(SensorError, match=r"GPU 0: insufficient permissions \(NVML_ERROR_NO_PERMISSION\)"):
        open_sensor("nvml:index=0")
    assert fake.shutdowns == 1


def test_index_selects_the_device(fake: FakeNvml) -> None:
    fake.count = 4
    sensor = NvmlSensor.from_spec("index=3")
    assert sensor.index == 3 and fake.called("nvmlDeviceGetHandleByIndex") == [("nvmlDeviceGetHandleByIndex", 3)]
    assert all(c[1] == "handle3" for c in fake.called("nvmlDeviceGetPowerUsage"))


def test_samples_only_new_ones_and_not_found_is_empty(fake: FakeNvml) -> None:
    fake.samples = [(100, 200_000), (200, 210_000)]  # buffered before open: skipped by the probe
    sensor = open_sensor("nvml")
    assert sensor.unavailable == {}
    assert sensor.read(["power_samples"]) == []  # NOT_FOUND -> nothing new, not an error
    fake.samples += [(300, 220_000), (400, 230_500)]
    got = sensor.read(["power_samples"])
    assert [(r.driver_ts_us, r.value) for r in got] == [(300, pytest.approx(220.0)), (400, pytest.approx(230.5))]
    assert all(r.status == "ok" and r.unit == "W" for r in got)
    fake.samples += [(500, 240_000)]
    [reading] = sensor.read(["power_samples"])
    assert reading.driver_ts_us == 500
    assert [c[3] for c in fake.called("nvmlDeviceGetSamples")] == [0, 200, 200, 400]  # last seen passed
    assert sensor.read(["power_samples"]) == []


def test_samples_already_returned_are_not_repeated(fake: FakeNvml) -> None:
    fake.samples_ignore_last_seen = True
    fake.samples = [(100, 200_000)]
    sensor = open_sensor("nvml")
    assert sensor.read(["power_samples"]) == []
    fake.samples += [(150, 205_000)]
    assert [r.driver_ts_us for r in sensor.read(["power_samples"])] == [150]


def test_samples_other_error_is_reported(fake: FakeNvml) -> None:
    sensor = open_sensor("nvml")
    fake.fail["nvmlDeviceGetSamples"] = C["NVML_ERROR_GPU_IS_LOST"]
    [reading] = sensor.read(["power_samples"])
    assert (reading.status, reading.value) == ("error", None)


def test_unknown_signal_raises_key_error(fake: FakeNvml) -> None:
    sensor = open_sensor("nvml")
    fake.calls.clear()
    with pytest.raises(KeyError, match="power_magic"):
        sensor.read(["power_usage", "power_magic"])
    assert fake.calls == []


def test_close_shuts_down_exactly_once(fake: FakeNvml) -> None:
    sensor = open_sensor("nvml")
    with sensor:
        pass
    sensor.close()
    assert fake.shutdowns == 1
    with pytest.raises(RuntimeError):
        sensor.read(["power_usage"])


def test_missing_field_constants_in_old_pynvml(monkeypatch: pytest.MonkeyPatch) -> None:
    state = FakeNvml()
    install(monkeypatch, state, drop=("NVML_FI_DEV_POWER_INSTANT", "NVML_FI_DEV_POWER_AVERAGE"))
    sensor = open_sensor("nvml")
    assert "NVML_FI_DEV_POWER_INSTANT" in sensor.unavailable["power_instant"]
    assert "power_average" in sensor.unavailable
    assert state.called("nvmlDeviceGetFieldValues") == []
    [reading] = sensor.read(["power_instant"])
    assert (reading.status, reading.value) == ("not_supported", None)


def test_clock_event_reasons_falls_back_to_throttle_name(monkeypatch: pytest.MonkeyPatch) -> None:
    state = FakeNvml()
    install(monkeypatch, state, drop=("nvmlDeviceGetCurrentClocksEventReasons",))
    [reading] = open_sensor("nvml").read(["clock_event_reasons"])
    assert reading.value == 0x8
    state = FakeNvml()
    state.fail["nvmlDeviceGetCurrentClocksEventReasons"] = C["NVML_ERROR_FUNCTION_NOT_FOUND"]  # old driver
    install(monkeypatch, state)
    sensor = open_sensor("nvml")
    assert sensor.unavailable == {}
    assert sensor.read(["clock_event_reasons"])[0].value == 0x8


def test_device_info_tolerates_not_supported(fake: FakeNvml) -> None:
    sensor = open_sensor("nvml")
    assert sensor.device_info() == {
        "index": 0,
        "name": "NVIDIA H100 80GB HBM3",
        "uuid": "GPU-0000",
        "driver_version": "550.54.15",
        "nvml_version": "12.550.54.15",
        "power_limit_w": 700.0,
    }
    fake.fail["nvmlDeviceGetEnforcedPowerLimit"] = C["NVML_ERROR_NOT_SUPPORTED"]
    fake.fail["nvmlDeviceGetUUID"] = C["NVML_ERROR_NOT_SUPPORTED"]
    info = sensor.device_info()
    assert info["power_limit_w"] is None and info["uuid"] is None and info["name"] == "NVIDIA H100 80GB HBM3"


def test_power_range_from_the_power_limit(fake: FakeNvml) -> None:
    sensor = open_sensor("nvml")
    assert sensor.power_range_w() == (0.0, 1050.0)  # 1.5 x the 700 W enforced limit
    fake.fail["nvmlDeviceGetEnforcedPowerLimit"] = C["NVML_ERROR_NOT_SUPPORTED"]
    fake.fail["nvmlDeviceGetPowerManagementLimit"] = C["NVML_ERROR_NOT_SUPPORTED"]
    assert sensor.power_range_w() == (0.0, 2000.0)  # unknown limit: the conservative default


def _driver_present(pynvml: ModuleType) -> bool:
    """Whether the real ``pynvml`` finds an NVIDIA driver (``nvmlInit`` succeeds)."""
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:
        return False
    pynvml.nvmlShutdown()
    return True


@pytest.fixture
def real_pynvml() -> ModuleType:
    """The installed ``pynvml`` (never the fake)."""
    pynvml = pytest.importorskip("pynvml")
    assert not isinstance(sys.modules["pynvml"], FakeNvml)
    assert hasattr(pynvml, "c_nvmlFieldValue_t")  # the real module, not a leftover fake
    return pynvml


def test_real_pynvml_without_driver_raises_sensor_error(real_pynvml: ModuleType) -> None:
    if _driver_present(real_pynvml):
        pytest.skip("an NVIDIA driver is present (test_real_gpu_is_read covers this machine)")
    with pytest.raises(SensorError, match="^cannot open NVML: "):
        open_sensor("nvml")


@pytest.mark.gpu
def test_real_gpu_is_read(real_pynvml: ModuleType) -> None:
    """On a machine with an NVIDIA driver: the sensor opens GPU 0, reads every measured signal with its
    unit, the energy counter never runs backwards, and closing shuts NVML down."""
    if not _driver_present(real_pynvml):
        pytest.skip("no NVIDIA driver on this machine")
    with open_sensor("nvml") as sensor:
        infos = sensor.signals()
        measured = [name for name, info in infos.items() if info.evidence == "measured"]
        assert measured, sensor.unavailable
        first = by_signal(sensor.read(measured))
        time.sleep(0.05)
        second = by_signal(sensor.read(measured))
        info = sensor.device_info()
        low, high = sensor.power_range_w()
    for name in measured:
        if name == "power_samples":
            continue  # a buffer: empty when nothing new was sampled
        reading = first[name]
        assert reading.status == "ok", (name, reading)
        assert reading.unit == infos[name].unit and reading.t_before_ns <= reading.t_after_ns
    if "power_usage" in measured:
        assert low <= first["power_usage"].value < high, (first["power_usage"], high)
    if "energy_counter" in measured:  # mJ since the driver loaded: never backwards
        assert second["energy_counter"].value >= first["energy_counter"].value
    assert info["index"] == 0 and info["name"], info


def test_collect_measure_reads_the_nvml_counter_through_the_fake(fake: FakeNvml) -> None:
    """``collect.measure("nvml")`` (thread mode: the fake lives in this process) polls the energy
    counter the driver reports; the bounds hold the energy the fake counter advanced by."""
    import threading

    import collect

    stop = threading.Event()
    start_mj = fake.energy_mj

    def driver() -> None:  # the counter moves by 5 J every 20 ms, as a 250 W GPU's would
        while not stop.wait(0.02):
            fake.energy_mj += 5_000

    with collect.measure("nvml", poll_ms=5, mode="thread") as m:
        thread = threading.Thread(target=driver)
        thread.start()
        with m.phase("compute"):
            deadline = threading.Event()
            deadline.wait(0.4)
        stop.set()
        thread.join(timeout=30)
    result = m.result()
    assert result.signal == "energy_counter" and result.evidence == "measured"
    true_j = (fake.energy_mj - start_mj) / 1000
    assert result.energy.lower_j <= true_j + 1e-9 and result.energy.lower_j <= result.energy.upper_j
    assert 0 < result.energy.upper_j
    assert 10 <= result.effective_period_ms <= 2_000  # measured from the counter's own updates
    assert any(c[0] == "nvmlDeviceGetTotalEnergyConsumption" for c in fake.calls)
