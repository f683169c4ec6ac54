"""``collect probe``: what a meter can and cannot resolve, before an energy margin is preregistered.

More in ``docs/internals.md``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from collect.telemetry.analysis.energy import ENERGY_SIGNALS, run_energy
from collect.telemetry.analysis.resolution import achieved_poll, achieved_poll_worst, update_period
from collect.telemetry.recording.recorder import Recorder
from collect.telemetry.sensors.base import DEFAULT_POWER_RANGE_W, SensorError
from collect.telemetry.sensors.registry import open_sensor
from collect.telemetry.sensors.replay import read_replay_trace
from collect.traces.telemetry import Trace
from prereg.errors import InputError

POWER_SIGNALS = ("power_average", "power_usage", "power_instant", "power_samples")


@dataclass(frozen=True)
class SignalProbe:
    """What one signal delivered during the probe."""

    signal: str
    unit: str
    status: str  # "ok" or the reason it is unavailable
    evidence: str
    requested_poll_ms: float
    achieved_poll_ms: float | None
    achieved_poll_p95_ms: float | None
    effective_period_ms: float | None
    driver_period_ms: float | None
    updates: int
    observed_power_w: float | None
    window_s: float
    resolvable_j: float | None
    resolvable_fraction: float | None
    period_lower_ms: float | None = None  # the period's lower end if no update went unseen
    achieved_poll_worst_ms: float | None = None  # mean poll gap over the worst stretch (about 1 s)


def observed_power_w(trace: Trace) -> float | None:
    """Mean power over the probe: from the energy counter if present, else the power readings."""
    rows = trace.rows("energy_counter")
    if rows["value"].size >= 2 and rows["t_after_ns"][-1] > rows["t_after_ns"][0]:
        dv = rows["value"][-1] - rows["value"][0]
        if dv > 0:
            return float(dv / 1000.0 / ((rows["t_after_ns"][-1] - rows["t_after_ns"][0]) / 1e9))
    for signal in POWER_SIGNALS:
        values = trace.rows(signal)["value"]
        if values.size:
            return float(np.mean(values))
    return None


def probe_trace(trace: Trace, unavailable: dict[str, str], window_s: float = 1.0) -> list[SignalProbe]:
    """Per-signal probe results for a recorded trace."""
    power = observed_power_w(trace)
    med, p95 = achieved_poll(trace)
    worst = achieved_poll_worst(trace.poll_ns, trace.requested_poll_ms)
    out = []
    for name, info in trace.signals.items():
        if name not in set(trace.signal) and name not in unavailable:
            continue
        if name in unavailable:
            out.append(
                SignalProbe(
                    name,
                    info.unit,
                    unavailable[name],
                    "unavailable",
                    trace.requested_poll_ms,
                    med,
                    p95,
                    None,
                    None,
                    0,
                    power,
                    window_s,
                    None,
                    None,
                    None,
                    worst,
                )
            )
            continue
        period = update_period(trace, name)
        resolvable = fraction = None
        if power is not None and period.effective_period_ms is not None and info.unit in ("mJ", "W"):
            quantum_j = 0.002 if info.kind == "counter" else 0.0
            resolvable = 2 * power * period.effective_period_ms / 1000.0 + quantum_j
            fraction = resolvable / (power * window_s) if power > 0 else None
        out.append(
            SignalProbe(
                name,
                info.unit,
                "ok",
                trace.evidence if info.evidence != "unavailable" else "unavailable",
                trace.requested_poll_ms,
                med,
                p95,
                period.effective_period_ms,
                period.driver_period_ms,
                period.updates,
                power,
                window_s,
                resolvable,
                fraction,
                period.period_lower_ms,
                worst,
            )
        )
    return out


def probe_sensor(
    spec: str, poll_ms: float, seconds: float, window_s: float = 1.0, signals: list[str] | None = None
) -> list[SignalProbe]:
    """Open the sensor ``spec``, poll ``signals`` (default: all) for ``seconds`` and probe each one.

    The sensor is closed on the way out, even on error; an unknown signal or a sensor that cannot
    be opened is an ``InputError`` (exit 2) with one clear message.
    """
    try:
        sensor = open_sensor(spec)
    except SensorError as err:
        raise InputError(f"cannot open sensor {spec!r}: {err}") from None
    with sensor:
        wanted = list(signals) if signals else list(sensor.signals())
        try:
            readable = [s for s in wanted if s not in sensor.unavailable]
            recorder = Recorder(sensor, readable, poll_ms, spec=spec)
        except KeyError as err:
            raise InputError(str(err).strip('"')) from None
        with recorder, recorder.phase("probe"):
            recorder.advance(seconds * 1000)
        unavailable = {s: r for s, r in sensor.unavailable.items() if s in wanted}
        return probe_trace(recorder.trace(), unavailable, window_s)


def recorded_summaries(trace: Trace) -> dict[str, dict[str, Any]]:
    """A kept run trace re-analysed as the run's collector summarised it: per energy signal the
    trace holds, the ledger's telemetry summary (``collect.telemetry.analysis.energy.run_energy``), and
    the energy metrics under ``metrics``. The same function, so the same numbers as the ledger."""
    p_min, p_max = trace.power_range_w if trace.power_range_w is not None else DEFAULT_POWER_RANGE_W
    out: dict[str, dict[str, Any]] = {}
    for signal in ENERGY_SIGNALS:
        if signal in trace.signals and trace.rows(signal)["value"].size:
            energy = run_energy(trace, signal, p_min, p_max)
            info = trace.signals[signal]
            meter = {
                k: v
                for k, v in (("period_basis", info.period_basis), ("power_model", info.power_model))
                if v is not None
            }
            out[signal] = {**energy.summary, "metrics": energy.metrics, **meter}
    return out


def probe_recorded(
    path: str, window_s: float = 1.0, signals: list[str] | None = None
) -> tuple[list[SignalProbe], dict[str, dict[str, Any]], str | None]:
    """``replay:PATH`` probed as recorded (no re-polling, which could only show less): the probe of
    each signal over the whole trace, the recorded run's summaries (:func:`recorded_summaries`),
    and a note when the trace lies outside a runs folder (so no record checked it). A trace in a
    runs folder is checked against its record first (``collect.telemetry.sensors.replay.read_replay_trace``)."""
    trace, note = read_replay_trace(path)
    unknown = [s for s in signals or [] if s not in trace.signals]
    if unknown:
        raise InputError(f"the trace {path} has no signal(s) {', '.join(unknown)}; it has {', '.join(trace.signals)}")
    keep = set(signals) if signals else set(trace.signals)
    probes = [p for p in probe_trace(trace, {}, window_s) if p.signal in keep]
    return probes, {k: v for k, v in recorded_summaries(trace).items() if k in keep}, note


def probe_json(
    probes: list[SignalProbe], sensor: str, seconds: float | None, recorded: dict[str, dict[str, Any]] | None = None
) -> dict[str, Any]:
    """The ``--json`` object: ``signals.<name>.<field>`` (and ``recorded.<signal>`` for a replay)."""
    out: dict[str, Any] = {"sensor": sensor, "seconds": seconds, "signals": {p.signal: asdict(p) for p in probes}}
    if recorded is not None:
        out["recorded"] = recorded
    return out


def recorded_sentence(signal: str, summary: dict[str, Any]) -> str:
    """One line per re-analysed signal: the run's energy, its bound and the bound's arm-dependent part
    (docs/estimators.md, measurement error), the meter it assumed, and the support of each phase."""
    metrics = summary.get("metrics", {})
    bound = summary.get("bound")
    part = summary.get("systematic_bound")
    meter = ""
    if summary.get("counter_period_ms") is not None:
        meter = f" (counter update period {summary['counter_period_ms']:g} ms: {summary.get('period_basis')})"
    elif summary.get("power_model") is not None:
        meter = f" (power_model {summary['power_model']})"
    text = (
        f"{signal} (as recorded): energy {metrics.get('energy', float('nan')):.6g} J"
        + (f" +/- {bound:.3g} J" if bound is not None else " (no bound)")
        + (f", of which {part:.3g} J may differ by arm{meter}" if part is not None else meter)
        + f", {summary.get('updates')} updates, effective period {summary.get('effective_period_ms')} ms"
    )
    phases = summary.get("phases") or {}
    parts = [
        f"{name} {ph['updates']} updates in {ph['intervals']} interval(s)"
        for name, ph in phases.items()
        if ph["intervals"]
    ]
    return text + ("; " + ", ".join(parts) if parts else "") + "."


def _percent(fraction: float) -> str:
    """A share in per cent, in plain digits (99.7%, 250%, 0.5%)."""
    value = 100 * fraction
    return f"{value:.3g}%" if value < 1000 else f"{value:.0f}%"


def probe_sentence(p: SignalProbe) -> str:
    """The sentence a researcher needs before preregistering an energy margin."""
    if p.status != "ok":
        return f"{p.signal}: unavailable ({p.status}); it cannot back any claim"
    achieved = f"{p.achieved_poll_ms:.3g} ms" if p.achieved_poll_ms is not None else "n/a"
    worst = (
        f", {p.achieved_poll_worst_ms:.3g} ms over its worst stretch" if p.achieved_poll_worst_ms is not None else ""
    )
    text = f"{p.signal}: polled every {achieved} (asked {p.requested_poll_ms:g} ms{worst}); the value changed {p.updates} times"
    if p.effective_period_ms is None:
        text += ", too few to tell how often it updates"
    else:
        text += f": an update every {p.effective_period_ms:.4g} ms at most"
    notes = [f"at least {p.period_lower_ms:.4g} ms if none went unseen"] if p.period_lower_ms is not None else []
    if p.driver_period_ms is not None:
        notes.append(f"driver timestamps: every {p.driver_period_ms:.4g} ms")
    if notes:
        text += f" ({'; '.join(notes)})"
    if p.resolvable_j is not None and p.observed_power_w is not None:
        text += (
            f". Over a {p.window_s:g} s window at {p.observed_power_w:.4g} W it resolves energy differences "
            f"of about {p.resolvable_j:.3g} J or more ({_percent(p.resolvable_fraction or 0)} of the window)"
        )
    return text + "."
