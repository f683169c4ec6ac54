"""The ``collect`` console script. Its subcommands arrive with the collection issues."""

from __future__ import annotations

from collections.abc import Sequence

from prereg.clikit import not_yet_parser, run_main

PLANNED = {
    "run": "execute a frozen plan with the built-in collectors",
    "import": "bring runs made elsewhere into a ledger under a lock",
    "probe": "measure what a telemetry sensor can resolve",
    "churn": "checkpoint-interval table under Poisson preemption",
}


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``collect``."""
    return run_main("collect", lambda: not_yet_parser("collect", __doc__ or "", PLANNED), argv)


if __name__ == "__main__":
    raise SystemExit(main())
