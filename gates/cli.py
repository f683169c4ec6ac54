"""The ``gates`` console script. ``gates evaluate`` arrives with the gates issue."""

from __future__ import annotations

from collections.abc import Sequence

from prereg.clikit import not_yet_parser, run_main

PLANNED = {"evaluate": "verdicts per gate and the decision, from a lock and a run ledger"}


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``gates``."""
    return run_main("gates", lambda: not_yet_parser("gates", __doc__ or "", PLANNED), argv)


if __name__ == "__main__":
    raise SystemExit(main())
