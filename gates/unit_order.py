"""The order a betting gate reads its units in: the order they were run, never the order the plan lists them.

A betting p-value (``estimators.betting``) is a product over the units in sequence, valid when the
sequence is exchangeable. The plan lists strata factor by factor (every seed of site 0, then site 1),
so strata whose effects differ by a factor would arrive sorted by that factor and could exclude the
mean of them all. So a betting gate reads its units

* in a monitored plan, in the frozen run order (``prereg.monitoring.run_order``): each look's units
  extend the previous look's, so the capital carried from look to look is one process (what makes the
  p-value anytime-valid across looks);
* otherwise, in a fixed pseudo-random order: the SHA-256 of each stratum's canonical form, the same
  key ``run_order`` uses, known before any data and independent of how the factor levels are listed.

Replicate units of one stratum keep their replicate order.
"""

from __future__ import annotations

import hashlib

from gates.matching import Block, stratum_key
from prereg.jsoncodec import canonical_bytes
from prereg.monitoring import run_order
from prereg.schema import Plan


def betting_order(plan: Plan, blocks: list[Block], units: list[list[int]]) -> list[int]:
    """Indices into ``units`` (each a list of indices into ``blocks``) in the order a betting gate reads
    them (module doc)."""
    if plan.monitoring is not None:
        position = {stratum_key(plan, s): i for i, s in enumerate(run_order(plan))}

        def key(u: int) -> tuple[object, ...]:
            block = blocks[units[u][0]]
            return (position.get(stratum_key(plan, block.stratum), len(position)), block.replicate, u)
    else:

        def key(u: int) -> tuple[object, ...]:
            block = blocks[units[u][0]]
            digest = hashlib.sha256(canonical_bytes({"seed": 0, "stratum": block.stratum})).hexdigest()
            return (digest, block.replicate, u)

    return sorted(range(len(units)), key=key)


__all__ = ["betting_order"]
