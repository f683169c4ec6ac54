"""The energy counter's update period when a log does not say it: a default per GPU generation.

More in ``docs/internals.md``.
"""

from __future__ import annotations

import re

#: generation -> (the energy counter's update period in ms, where that figure comes from, quoted)
COUNTER_PERIOD_MS: dict[str, tuple[float, str]] = {}

#: for a GPU whose generation has no entry (or that no log line names): the longest period any
#: source reports, so that no read is taken as fresher than the sources allow
CONSERVATIVE_COUNTER_PERIOD_MS = 100.0
CONSERVATIVE_SOURCE = (
    "the longest update period public sources give for NVML's energy counter on NVIDIA GPUs: about 100 ms "
    "(Zeus, ml-energy/zeus skills/measuring-energy/SKILL.md: 'GPU energy counters update roughly every 100 ms'; "
    "ML.ENERGY blog 'Thermally Stable Profiling for Accurate GPU Energy Measurement': 'approximately every "
    "100 ms on NVIDIA GPUs'; PETSc PetscLogGpuEnergyMeter: 'for newer GPUs, energy readings are updated every "
    "20-100ms'); none names a generation"
)

#: NVML's reference documents the energy counter "for Volta or newer fully supported devices"
NO_COUNTER_GENERATIONS = ("kepler", "maxwell", "pascal")

# (generation, pattern on the name as nvidia-smi / NVML / CodeCarbon print it), first match wins;
# the more specific patterns (Ada and Blackwell workstation names, Grace Hopper) come first
_GENERATIONS: tuple[tuple[str, str], ...] = (
    ("blackwell", r"\b(?:GB\d{3}|B\d{3}A?)\b|RTX (?:PRO )?\d{4}\S* Blackwell|RTX 50\d0"),
    ("ada", r"\bL4\b|\bL40S?\b|\bL20\b|RTX \d{4}\S* Ada|RTX 40\d0"),
    ("hopper", r"\bG?H(?:100|200|800|20)\b"),
    ("ampere", r"\bA(?:100|800|40|30|16|10[GM]?|2)\b|RTX A\d{3,4}\b|RTX 30\d0"),
    ("turing", r"\bT4\b|RTX 20\d0|TITAN RTX|Quadro RTX|GTX 16\d0|\bT(?:400|600|1000|1200)\b"),
    ("volta", r"\bV100S?\b|TITAN V\b|GV100"),
    ("pascal", r"\bP(?:100|40|6|4)\b|GTX 10\d0|TITAN Xp|TITAN X \(Pascal\)|GP100"),
    ("maxwell", r"\bM(?:60|40|10|6|4)\b|GTX 9\d0|TITAN X\b"),
    ("kepler", r"\bK(?:80|40m?|40c|20m?|20X|10|2)\b|GTX 7\d0|GTX TITAN\b"),
)
_COMPILED = tuple((gen, re.compile(pattern, re.IGNORECASE)) for gen, pattern in _GENERATIONS)


def gpu_generation(gpu_name: str | None) -> str | None:
    """The architecture generation (``volta``, ``turing``, ``ampere``, ``hopper``, ``ada``, ``blackwell``,
    ``pascal``, ``maxwell``, ``kepler``) of a GPU named as logs print it ("NVIDIA A100-SXM4-80GB",
    "Tesla V100-SXM2-16GB", "NVIDIA H100 80GB HBM3", "NVIDIA GeForce RTX 3090"); None when unknown.
    Underscores (nvidia-smi names in file names) count as spaces."""
    if not gpu_name:
        return None
    name = gpu_name.replace("_", " ")
    for gen, pattern in _COMPILED:
        if pattern.search(name):
            return gen
    return None


def check_period_table(table: dict[str, tuple[float, str]], conservative_ms: float) -> None:
    """``ValueError`` unless every entry names a known generation, has a finite period above 0 and at
    most ``conservative_ms`` (the default must be the longest period any source gives), and a source text."""
    known = {gen for gen, _ in _GENERATIONS}
    for gen, (period_ms, source) in table.items():
        if gen not in known:
            raise ValueError(f"counter period table: unknown generation {gen!r} (known: {', '.join(sorted(known))})")
        if not (0 < period_ms <= conservative_ms):
            raise ValueError(
                f"counter period table: {gen} has {period_ms} ms; it must be above 0 and at most the "
                f"conservative default {conservative_ms:g} ms"
            )
        if not source.strip():
            raise ValueError(f"counter period table: {gen} has no source")


check_period_table(COUNTER_PERIOD_MS, CONSERVATIVE_COUNTER_PERIOD_MS)


def default_counter_period(gpu_name: str | None) -> tuple[float, str]:
    """``(period in ms, its basis in words)`` for a GPU by its name as the log gives it (e.g. CodeCarbon's
    ``gpu_model``, nvidia-smi's ``name``), or None when the log names none."""
    generation = gpu_generation(gpu_name)
    if generation in COUNTER_PERIOD_MS:
        period_ms, source = COUNTER_PERIOD_MS[generation]
        return period_ms, f"default {period_ms:g} ms for {generation} GPUs ({gpu_name}): {source}"
    if gpu_name is None or not gpu_name.strip():
        which = "the log names no GPU"
    elif generation is None:
        which = f"GPU {gpu_name!r} is of no generation this toolkit knows"
    elif generation in NO_COUNTER_GENERATIONS:
        which = (
            f"{gpu_name} is a {generation.capitalize()} GPU, for which NVML documents no energy counter "
            "(Volta or newer)"
        )
    else:
        which = f"no source gives the counter period of {generation.capitalize()} GPUs ({gpu_name})"
    return CONSERVATIVE_COUNTER_PERIOD_MS, (
        f"default {CONSERVATIVE_COUNTER_PERIOD_MS:g} ms, the longest period public sources give for NVML's energy "
        f"counter (Zeus, ML.ENERGY, PETSc: collect/telemetry/logs/periods.py); {which}; give --counter-period-ms "
        "as collect probe measures it on the same GPU model"
    )


__all__ = [
    "CONSERVATIVE_COUNTER_PERIOD_MS",
    "CONSERVATIVE_SOURCE",
    "COUNTER_PERIOD_MS",
    "NO_COUNTER_GENERATIONS",
    "check_period_table",
    "default_counter_period",
    "gpu_generation",
]
