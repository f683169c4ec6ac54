"""The cited default update period of NVML's energy counter: GPU names to generations, the
conservative default for anything no source covers, and a source text for every figure."""

from __future__ import annotations

import pytest

from collect.telemetry.logs import periods
from collect.telemetry.logs.periods import (
    CONSERVATIVE_COUNTER_PERIOD_MS,
    COUNTER_PERIOD_MS,
    check_period_table,
    default_counter_period,
    gpu_generation,
)

# names as nvidia-smi --query-gpu=name, NVML's nvmlDeviceGetName and CodeCarbon's gpu_model print them
NAMES = {
    "NVIDIA A100-SXM4-80GB": "ampere",
    "NVIDIA A100 80GB PCIe": "ampere",
    "NVIDIA_A100-PCIE-40GB": "ampere",  # as nvidia-smi names appear in file names
    "NVIDIA A10G": "ampere",
    "NVIDIA A40": "ampere",
    "NVIDIA RTX A6000": "ampere",
    "NVIDIA GeForce RTX 3090": "ampere",
    "Tesla V100-SXM2-16GB": "volta",
    "Tesla V100S-PCIE-32GB": "volta",
    "NVIDIA TITAN V": "volta",
    "NVIDIA H100 80GB HBM3": "hopper",
    "NVIDIA H100 PCIe": "hopper",
    "NVIDIA H200": "hopper",
    "NVIDIA GH200 480GB": "hopper",
    "Tesla T4": "turing",
    "NVIDIA GeForce RTX 2080 Ti": "turing",
    "Quadro RTX 8000": "turing",
    "NVIDIA TITAN RTX": "turing",
    "NVIDIA L4": "ada",
    "NVIDIA L40S": "ada",
    "NVIDIA GeForce RTX 4090": "ada",
    "NVIDIA RTX 6000 Ada Generation": "ada",
    "NVIDIA B200": "blackwell",
    "NVIDIA GeForce RTX 5090": "blackwell",
    "Tesla P100-PCIE-16GB": "pascal",
    "NVIDIA GeForce GTX 1080 Ti": "pascal",
    "NVIDIA TITAN X (Pascal)": "pascal",
    "Tesla M40": "maxwell",
    "Tesla K80": "kepler",
}


@pytest.mark.parametrize(("name", "generation"), sorted(NAMES.items()))
def test_gpu_names_map_to_their_generation(name: str, generation: str) -> None:
    assert gpu_generation(name) == generation


@pytest.mark.parametrize("name", [None, "", "AMD Instinct MI250X", "Intel Data Center GPU Max 1550", "some GPU"])
def test_unknown_or_missing_names_get_the_conservative_default(name: str | None) -> None:
    assert gpu_generation(name) is None
    period_ms, basis = default_counter_period(name)
    assert period_ms == CONSERVATIVE_COUNTER_PERIOD_MS
    assert "--counter-period-ms" in basis and f"{CONSERVATIVE_COUNTER_PERIOD_MS:g} ms" in basis


def test_a_generation_without_a_source_gets_the_conservative_default_and_says_so() -> None:
    for name, generation in NAMES.items():
        if generation in COUNTER_PERIOD_MS:
            continue
        period_ms, basis = default_counter_period(name)
        assert period_ms == CONSERVATIVE_COUNTER_PERIOD_MS
        assert name in basis and generation.capitalize() in basis


def test_the_conservative_default_is_cited_and_no_entry_exceeds_it() -> None:
    # the default is the longest period the quoted sources report, with the quotes
    assert CONSERVATIVE_COUNTER_PERIOD_MS == 100.0
    for quoted in ("roughly every 100 ms", "approximately every 100 ms", "20-100ms"):
        assert quoted in periods.CONSERVATIVE_SOURCE
    for generation, (period_ms, source) in COUNTER_PERIOD_MS.items():
        assert 0 < period_ms <= CONSERVATIVE_COUNTER_PERIOD_MS, generation
        assert source.strip(), generation


def test_a_table_entry_without_a_source_or_above_the_default_is_refused() -> None:
    check_period_table({"hopper": (100.0, "a measurement, cited")}, 100.0)
    with pytest.raises(ValueError, match="no source"):
        check_period_table({"hopper": (100.0, "  ")}, 100.0)
    with pytest.raises(ValueError, match="at most the conservative default"):
        check_period_table({"volta": (250.0, "a source")}, 100.0)
    with pytest.raises(ValueError, match="unknown generation"):
        check_period_table({"fermi2": (20.0, "a source")}, 100.0)


def test_a_cited_entry_is_used_for_its_generation(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(COUNTER_PERIOD_MS, "volta", (20.0, "a cited measurement of V100 counters"))
    period_ms, basis = default_counter_period("Tesla V100-SXM2-16GB")
    assert period_ms == 20.0 and "a cited measurement of V100 counters" in basis and "volta" in basis
    assert default_counter_period("NVIDIA H100 80GB HBM3")[0] == CONSERVATIVE_COUNTER_PERIOD_MS
