"""The ``reports`` console script. ``reports show`` arrives with the gates issue."""

from __future__ import annotations

from collections.abc import Sequence

from prereg.clikit import not_yet_parser, run_main

PLANNED = {"show": "reprint the reviewer's report from an evaluation.json"}


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``reports``."""
    return run_main("reports", lambda: not_yet_parser("reports", __doc__ or "", PLANNED), argv)


if __name__ == "__main__":
    raise SystemExit(main())
