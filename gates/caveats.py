"""Which of a gate's warnings are data-driven coverage caveats (standard library only: read by the look logic).

More in ``docs/internals.md``.
"""

from __future__ import annotations

from collections.abc import Sequence

#: how ``estimators.feasibility``'s skew warning opens
SKEW_NOTE = "the block contrasts look skewed"
#: how ``estimators.feasibility``'s rare-event warning opens
RARE_NOTE = "rare events:"
#: the data-driven coverage warnings (skew, rare events)
DATA_WARNINGS = (SKEW_NOTE, RARE_NOTE)
#: how ``estimators.betting.CROSSED_WARNING`` opens: the betting test rejected every mean
CROSSED_NOTE = "the betting test rejects every mean"


def data_warned(gate_warnings: Sequence[str]) -> bool:
    """Whether a gate's warnings include a data-driven coverage warning (skewed or rare-event contrasts)."""
    return any(w.startswith(DATA_WARNINGS) for w in gate_warnings)


__all__ = ["CROSSED_NOTE", "DATA_WARNINGS", "RARE_NOTE", "SKEW_NOTE", "data_warned"]
