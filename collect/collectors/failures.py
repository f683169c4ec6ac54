"""A run's planned faults, drawn from the plan's ``experiment.failures`` and the stratum's seed.

:func:`failure_spec` resolves the plan's section for one stratum (``"{factor}"`` values replaced by
the stratum's levels; ``None`` for a control stratum) into plain data the engine hands a collector
as its ``failures`` parameter; :func:`planned_faults` turns that and the run's seed -- the
stratum's, the same in every arm -- into the ordered fault points. The Poisson draw uses its own
stream (``random.Random`` seeded with ``"failures/<seed>"``): the program's use of the seed does not
shift it, and every arm of a stratum gets the same points (common random numbers).
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from typing import Any

from prereg.schema_failures import FACTOR_REF, Failures

#: the run's parameter the engine sets from the plan (never written in the plan's params)
PARAM = "failures"


def _resolve(value: Any, stratum: Mapping[str, Any]) -> Any:
    if isinstance(value, str):
        match = FACTOR_REF.match(value)
        if match is None:  # the schema refuses this before
            raise ValueError(f"not a number or a factor reference: {value!r}")
        return stratum[match.group(1)]
    return value


def failure_spec(failures: Failures | None, stratum: Mapping[str, Any]) -> dict[str, Any] | None:
    """The plan's failures for one stratum as plain data (factor references resolved), or ``None``
    when the stratum meets none (no section, or ``when`` does not select it)."""
    if failures is None:
        return None
    if failures.when and not all(stratum.get(k) in levels for k, levels in failures.when.items()):
        return None
    spec = failures.model_dump(mode="json", exclude={"when"})
    for name in ("at", "fractions"):
        if spec[name] is not None:
            spec[name] = [_resolve(v, stratum) for v in spec[name]]
    for name in ("poisson_rate", "horizon"):
        spec[name] = _resolve(spec[name], stratum)
    return spec


def planned_faults(spec: Mapping[str, Any] | None, seed: int) -> list[float]:
    """The fault points of one run, in order, in ``spec["unit"]`` (steps are whole numbers >= 1);
    at most ``max_restarts``. Empty without a spec or when the rate is 0."""
    if spec is None:
        return []
    horizon = float(spec.get("horizon") or 0.0)  # needed (and checked by the schema) for fractions and poisson
    if spec.get("at") is not None:
        points = [float(v) for v in spec["at"]]
    elif spec.get("fractions") is not None:
        points = [float(f) * horizon for f in spec["fractions"]]
    else:
        rate, points, t = float(spec["poisson_rate"]), [], 0.0
        draw = random.Random(f"failures/{seed}")
        while rate > 0:
            t += draw.expovariate(rate)
            if t >= horizon or len(points) >= int(spec["max_restarts"]):
                break
            points.append(t)
    points = sorted(points)
    if spec.get("unit", "step") == "step":
        points = [float(max(1, math.ceil(p))) for p in points]
    else:
        points = [round(p, 6) for p in points]
    return points[: int(spec["max_restarts"])]
