"""The order a betting gate reads its units in: the order they were run, never the order the plan lists them.

More in ``docs/internals.md``.
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
