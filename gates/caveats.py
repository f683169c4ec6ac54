"""Which of a gate's warnings are data-driven coverage caveats (standard library only: read by the look logic).

``estimators.feasibility`` warns when the units' contrasts look skewed or look like rare events
(ties with departures on the side that threatens the rule): what a small sample understates. A
pass carrying either is named in the decision line, and at a look before the last it does not stop
the study (``gates.looks``).
"""

from __future__ import annotations

from collections.abc import Sequence

#: how the data-driven coverage warnings of ``estimators.feasibility`` open (skew, rare events)
DATA_WARNINGS = ("the block contrasts look skewed", "rare events:")


def data_warned(gate_warnings: Sequence[str]) -> bool:
    """Whether a gate's warnings include a data-driven coverage warning (skewed or rare-event contrasts)."""
    return any(w.startswith(DATA_WARNINGS) for w in gate_warnings)


__all__ = ["DATA_WARNINGS", "data_warned"]
