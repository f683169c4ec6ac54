"""The ``prereg-studies`` console script: the churn law's tables (docs/churn-law.md).

``prereg-studies churn``: the checkpoint-interval table of one job (closed forms and Monte Carlo), a scan over
worker counts, or the admission of heterogeneous worker pools. Argparse + one call + printing; errors and exit
codes (0 ok, 2 bad input or usage) as the toolkit's console scripts (``prereg_toolkit_cli.kit``).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from typing import Any

from prereg.errors import EXIT_OK, InputError
from prereg_toolkit_cli.kit import ArgumentParser, emit_json, run_main


def _churn_mode(args: argparse.Namespace) -> str:
    """``pools``, ``scan`` or ``table``, refusing options that do not belong together (``InputError``)."""
    mc = [
        f
        for f, v in (("--workers", args.workers), ("--segments", args.segments), ("--seed", args.seed))
        if v is not None
    ]
    if args.pool:
        given = [f for f, v in (("--mtbf-s", args.mtbf_s), ("--scan-workers", args.scan_workers)) if v is not None]
        if given + mc:
            raise InputError(f"--pool gives each pool's workers and rate; it does not take {', '.join(given + mc)}")
        return "pools"
    if args.mtbf_s is None:
        raise InputError("give --mtbf-s (one kind of worker) or --pool COUNT:RATE (heterogeneous pools)")
    if args.scan_workers is not None:
        if mc:
            raise InputError(f"--scan-workers is closed forms only; it does not take {', '.join(mc)}")
        return "scan"
    return "table"


def _worker_counts(text: str) -> list[int]:
    try:
        counts = [int(part) for part in text.split(",")]
    except ValueError:
        raise InputError(f"--scan-workers {text!r} must be whole numbers separated by commas, e.g. 1,10,100") from None
    return counts


def cmd_churn(args: argparse.Namespace) -> int:
    """The churn law: the interval table, a scan over worker counts, or the admission of heterogeneous pools."""
    from prereg_seed_studies.multisite.churn import churn_table, render_churn_table  # lazy: scipy
    from prereg_seed_studies.multisite.churn_scaling import (  # lazy: scipy
        admission,
        parse_pool,
        render_admission,
        render_worker_scan,
        worker_scan,
    )

    mode = _churn_mode(args)
    for name in ("mtbf_s", "checkpoint_s"):
        value = getattr(args, name)
        if value is not None and not value > 0:
            raise InputError(f"--{name.replace('_', '-')} must be > 0")
    workers = 1 if args.workers is None else args.workers
    segments = 20_000 if args.segments is None else args.segments
    if args.restart_s < 0 or workers < 1 or segments < 100:
        raise InputError("--restart-s must be >= 0, --workers >= 1 and --segments >= 100")
    text: Callable[[dict[str, Any]], str]
    try:
        if mode == "pools":
            table = admission([parse_pool(spec) for spec in args.pool], args.checkpoint_s, args.restart_s)
            text = render_admission
        elif mode == "scan":
            table = worker_scan(args.mtbf_s, args.checkpoint_s, args.restart_s, _worker_counts(args.scan_workers))
            text = render_worker_scan
        else:
            table = churn_table(
                args.mtbf_s, args.checkpoint_s, args.restart_s, workers, segments, 0 if args.seed is None else args.seed
            )
            text = render_churn_table
    except ValueError as err:
        raise InputError(str(err)) from None
    except (ArithmeticError, MemoryError) as err:  # a last guard: numbers past what can be computed
        raise InputError(f"these numbers are too extreme to compute ({type(err).__name__})") from None
    if args.json:
        emit_json(table)
    else:
        print(text(table))
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    """The ``prereg-studies`` argument parser."""
    parser = ArgumentParser(
        prog="prereg-studies",
        description="The seed studies' own tools (modeled): the churn law of checkpointing under preemption.",
        epilog="exit codes: 0 ok, 2 bad input or usage, 4 internal error",
    )
    sub = parser.add_subparsers(title="subcommands", metavar="COMMAND")
    p = sub.add_parser(
        "churn",
        help="checkpoint intervals under Poisson preemption: exact, Young, Daly, MC",
        description="The churn law (modeled). With --mtbf-s: the interval table for one job "
        "(closed forms and Monte Carlo), or with --scan-workers a closed-form scan over worker "
        "counts. With --pool (repeatable): which workers of heterogeneous pools to admit to one "
        "synchronous job. Examples and their output: docs/churn-law.md.",
    )
    p.add_argument("--mtbf-s", dest="mtbf_s", type=float, help="mean time between failures per worker, s")
    p.add_argument("--checkpoint-s", dest="checkpoint_s", type=float, required=True, help="checkpoint cost C, s")
    p.add_argument("--restart-s", dest="restart_s", type=float, required=True, help="restart cost R, s")
    p.add_argument("--workers", type=int, help="synchronous workers (job failure rate = N / MTBF; default 1)")
    p.add_argument("--segments", type=int, help="Monte Carlo segments per interval (default 20000)")
    p.add_argument("--seed", type=int, help="Monte Carlo seed (default 0)")
    p.add_argument(
        "--scan-workers",
        dest="scan_workers",
        metavar="N1,N2,...",
        help="closed forms for each worker count: w*, Young/Daly overshoot, efficiency, losses at w*/2 and "
        "2w*, throughput; plus where efficiency falls to 50%% and where throughput peaks",
    )
    p.add_argument(
        "--pool",
        action="append",
        metavar="COUNT:RATE",
        help="a pool of COUNT workers each failing RATE times per second (1/MTBF_s), e.g. 600:1e-6; "
        "repeat for each pool: shows which workers to admit and the throughput with and without them",
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="the table as JSON (intervals.<name>.*; or rows / half_efficiency_workers with "
        "--scan-workers; or pools / rows / best / threshold_rate_per_s with --pool)",
    )
    p.set_defaults(handler=cmd_churn)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``prereg-studies``."""
    return run_main("prereg-studies", build_parser, argv)


if __name__ == "__main__":
    raise SystemExit(main())
