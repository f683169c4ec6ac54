"""The energy counter's update period when a log does not say it: a default per GPU generation.

A log of counter reads (Zeus, CodeCarbon, DCGM ``TOTEC``) bounds each read's lag behind the true
counter by the counter's update period, which no log states. It is taken, in this order, from the
plan's metric (``meter.counter_period_ms``), the command line (``--counter-period-ms``, e.g. as
``collect probe`` measured it on the same GPU model) or :func:`default_counter_period`: a value
per GPU generation with its source, and for a GPU the log does not name, the most conservative one.
"""

from __future__ import annotations

#: generation -> (the counter's update period in ms, where that figure comes from)
COUNTER_PERIOD_MS: dict[str, tuple[float, str]] = {}
#: for a GPU no log line names: the longest period any source gives, so that no read is taken as fresher
#: than it may be
CONSERVATIVE_COUNTER_PERIOD_MS = 1000.0


def default_counter_period(gpu_name: str | None) -> tuple[float, str]:
    """``(period in ms, its basis in words)`` for a GPU by its name as the log gives it (e.g. CodeCarbon's
    ``gpu_model``, nvidia-smi's ``name``), or None when the log names none."""
    return CONSERVATIVE_COUNTER_PERIOD_MS, (f"default {CONSERVATIVE_COUNTER_PERIOD_MS:g} ms: the log names no GPU "
                                            "generation with a documented period (give --counter-period-ms)")


__all__ = ["CONSERVATIVE_COUNTER_PERIOD_MS", "COUNTER_PERIOD_MS", "default_counter_period"]
