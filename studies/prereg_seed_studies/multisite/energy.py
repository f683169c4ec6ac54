"""The modeled energy of a ``sim.multisite`` run: base (sites up) plus compute (work done and moved).

Model, rules and assumptions: docs/seed-studies.md (prereg_seed_studies.multisite.energy).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from prereg_seed_studies.multisite.accounting import SimResult

TRANSFER_CLASSES = ("checkpoint_upload", "restore_download", "rejoin_transfer")
ENERGY_METRICS = {"energy": "J", "energy_base": "J", "energy_compute": "J"}


@dataclass(frozen=True)
class EnergyModel:
    """The energy parameters (see the module doc for the formulas)."""

    site_idle_w: float = 1000.0  # W drawn by each up site, the whole wall time
    site_compute_w: float = 3000.0  # W above idle while a site computes a step
    transfer_j_per_byte: float = 0.0  # J per checkpoint / restore / rejoin byte moved
    facility_pue: float = 1.0  # facility energy / IT energy

    def energy(self, r: SimResult, tick_ms: float) -> dict[str, float]:
        """``energy``, ``energy_base`` and ``energy_compute`` (J) of a run; energy = base + compute."""
        tick_s = tick_ms / 1000.0
        base = self.facility_pue * self.site_idle_w * tick_s * r.up_site_ticks
        moved = sum(r.bytes[c] for c in TRANSFER_CLASSES)
        compute = self.facility_pue * (self.site_compute_w * tick_s * r.attempted + self.transfer_j_per_byte * moved)
        return {"energy": base + compute, "energy_base": base, "energy_compute": compute}


ENERGY_DEFAULTS = EnergyModel()


def _nonnegative(v: float) -> bool:
    return math.isfinite(v) and v >= 0


ENERGY_PARAM_SPECS: dict[str, tuple[float, str, Any, str]] = {  # name -> default, help, check, check text
    "site_idle_w": (
        ENERGY_DEFAULTS.site_idle_w,
        "power of each up site over the whole wall time (W)",
        _nonnegative,
        "must be a finite number >= 0",
    ),
    "site_compute_w": (
        ENERGY_DEFAULTS.site_compute_w,
        "power above idle of a site computing a step (W); a site-step costs site_compute_w x tick_ms / 1000 J",
        _nonnegative,
        "must be a finite number >= 0",
    ),
    "transfer_j_per_byte": (
        ENERGY_DEFAULTS.transfer_j_per_byte,
        "energy per checkpoint / restore / rejoin byte moved (J/byte); 0: not modeled",
        _nonnegative,
        "must be a finite number >= 0",
    ),
    "facility_pue": (
        ENERGY_DEFAULTS.facility_pue,
        "facility energy / IT energy (power usage effectiveness, dimensionless); 1.0: IT energy only",
        lambda v: math.isfinite(v) and v >= 1.0,
        "must be a finite number >= 1",
    ),
}


def energy_model_from(p: Mapping[str, Any]) -> EnergyModel:
    """The energy model of validated params."""
    return EnergyModel(**{k: float(p[k]) for k in ENERGY_PARAM_SPECS})
