"""What each kind of log can bound, for planning: the arm-dependent part of a run's energy bound.

More in ``docs/internals.md``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from collect.telemetry.analysis.energy import run_energy
from collect.telemetry.logs.common import LogOptions
from collect.telemetry.logs.formats import FORMATS
from collect.telemetry.logs.synthetic import dcgm_log, nvidia_smi_log, zeus_log
from collect.telemetry.sensors.base import DEFAULT_POWER_RANGE_W

#: the counter period the table assumes (ms): the default the converters use for a GPU they cannot name
TABLE_PERIOD_MS = 100.0


@dataclass(frozen=True)
class MeterBound:
    """One kind of log: what it is, and the arm-dependent part of a run's energy bound (J)."""

    log: str
    systematic_j: float

    def share(self, power_w: float, run_s: float) -> float:
        """The part as a share of a run's energy at ``power_w`` W for ``run_s`` s."""
        return self.systematic_j / (power_w * run_s)


def _systematic(fmt: str, text: str, signal: str, options: LogOptions) -> float:
    trace = FORMATS[fmt](text, f"planning.{fmt}", options)
    return run_energy(trace, signal, *DEFAULT_POWER_RANGE_W).total.systematic_bound_j  # type: ignore[union-attr]


@lru_cache(maxsize=16)
def meter_bounds(run_s: float, counter_period_ms: float | None = None) -> tuple[MeterBound, ...]:
    """The arm-dependent part of a ``run_s``-second run's energy bound (J) for each kind of log, with
    the default power range (0-2000 W) and a counter period of ``counter_period_ms`` (default
    :data:`TABLE_PERIOD_MS`): the energy counter read at the run's two ends (a Zeus or CodeCarbon
    window, ``sensor: nvml``), DCGM's counter sampled every second (``dcgmi dmon -e 156``),
    nvidia-smi ``power.draw`` every 100 ms as a true 1 s average and under part-time sampling
    (``power_model``). Kept per argument: every energy gate of a plan asks for the same table."""
    period = counter_period_ms or TABLE_PERIOD_MS
    counter = LogOptions(counter_period_ms=period, period_basis="planning table")
    seconds = round(run_s, 3)
    smi = nvidia_smi_log(seconds, na_lines=())  # one log, read under each averaging model
    return (
        MeterBound(
            "counter read at the run's ends",
            _systematic("zeus", zeus_log([(0.0, seconds, "run")]), "energy_counter", counter),
        ),
        MeterBound(
            "DCGM counter every 1 s",
            _systematic(
                "dcgm",
                dcgm_log(seconds, delay_ms=1000.0, na_samples=(), header_every=10**9),
                "energy_counter",
                LogOptions(poll_ms=1000.0, counter_period_ms=period),
            ),
        ),
        MeterBound(
            "nvidia-smi 100 ms, average",
            _systematic("nvidia-smi", smi, "power_average", LogOptions(power_model="average")),
        ),
        MeterBound(
            "nvidia-smi 100 ms, part-time",
            _systematic("nvidia-smi", smi, "power_average", LogOptions(power_model="part-time")),
        ),
    )


__all__ = ["TABLE_PERIOD_MS", "MeterBound", "meter_bounds"]
