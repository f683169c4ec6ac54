"""The ``gates`` console script: ``gates evaluate LOCK RUNS`` and ``gates verify EVALUATION LOCK RUNS``.

Argparse + one call of :func:`gates.api.evaluate` (or :func:`gates.verify.verify_evaluation`) +
printing (the report is drawn by ``reports``).

More in ``docs/internals.md``.
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path

from prereg_toolkit_cli.kit import (
    EXIT_INTEGRITY,
    EXIT_NOT_SUPPORTED,
    EXIT_OK,
    ArgumentParser,
    emit_json,
    run_main,
    safe,
)

DECISION_EXIT = {"supported": EXIT_OK, "not_supported": EXIT_NOT_SUPPORTED, "refused": EXIT_INTEGRITY}


def cmd_evaluate(args: argparse.Namespace) -> int:
    """Evaluate every gate of a verified lock on a runs folder (``gates.api.evaluate``); write and print the report."""
    from gates.api import evaluate  # lazy: pydantic

    out = Path(args.out) if args.out else Path(args.runs) / "evaluation.json"
    also = []
    if args.markdown:
        from reports.markdown.evaluation import is_evaluation_markdown  # lazy: pydantic

        also.append((Path(args.markdown), is_evaluation_markdown))
    evaluation = evaluate(
        args.lock,
        args.runs,
        plan_version=args.plan_version,
        out=out,
        force=args.force,
        also_writes=also,
        published=args.published,
    )
    published = None
    if args.published:
        from gates.provenance import lock_as_of  # lazy: pydantic
        from gates.seals import check_published_seal  # lazy: pydantic
        from prereg.api import load_lock  # lazy: pydantic

        data = load_lock(args.lock).data
        published = check_published_seal(
            lock_as_of(data, args.plan_version) if args.plan_version else data, args.published
        )
    if args.markdown:
        from prereg.fileio import write_text_atomically  # lazy: startup
        from reports.markdown.evaluation import evaluation_markdown  # lazy: pydantic

        write_text_atomically(Path(args.markdown), evaluation_markdown(evaluation, show_blocks=args.blocks))
    if args.json:
        emit_json(evaluation.model_dump(mode="json", by_alias=True))
    else:
        from gates.integrity import chain_sentence  # lazy: pydantic
        from reports.terminal.console import make_console  # lazy: rich
        from reports.terminal.evaluation import render_evaluation  # lazy: pydantic

        make_console().print(render_evaluation(evaluation, show_blocks=args.blocks, verbose=args.verbose))
        print(f"evaluation written to {out}")
        led = evaluation.ledger
        words = chain_sentence(led.chain, None)
        print(textwrap.fill(f"ledger {words}", 80))
        if led.head_sha256:
            print(f"ledger head sha256:\n{led.head_sha256}")
        if evaluation.monitoring is not None and evaluation.monitoring.looks_head:
            print(f"look ledger head sha256 (publish it with the ledger head):\n{evaluation.monitoring.looks_head}")
    if published:
        print(published, file=sys.stderr if args.json else sys.stdout)
    return DECISION_EXIT[evaluation.decision]


def cmd_verify(args: argparse.Namespace) -> int:
    """Evaluate the lock on the runs again and compare it with the artifact (``gates.verify``)."""
    from gates.api import check_runs_folder, read_evaluation  # lazy: pydantic
    from gates.verify import Published, verify_evaluation  # lazy: pydantic

    ev = read_evaluation(args.evaluation)
    check_runs_folder(args.runs, args.lock)
    given = Published(args.published, args.head, args.looks_head)
    result = verify_evaluation(ev, args.lock, args.runs, given if given != Published() else None, args.source or ())
    if args.json:
        emit_json(
            {
                "ok": result.ok,
                "evaluation": args.evaluation,
                "lock": args.lock,
                "runs": args.runs,
                "version": result.version,
                "differences": result.differences,
                "unpublished": result.unpublished,
                "published": result.published,
                "sources": list(result.sources),
            }
        )
    elif result.ok:
        print(f"{args.evaluation}: {result.sentence()}")
    else:
        print(f"{args.evaluation}: FORGED OR STALE: it {safe(result.sentence())}", file=sys.stderr)
    return EXIT_OK if result.ok else EXIT_INTEGRITY


def build_parser() -> argparse.ArgumentParser:
    """The ``gates`` argument parser."""
    parser = ArgumentParser(
        prog="gates",
        description="Evaluate a frozen plan's gates on collected runs: paired intervals, invalidators, verdicts.",
        epilog="exit codes: 0 supported, 1 not supported, 3 refused or broken lock, 2 bad input or usage, "
        "4 internal error",
    )
    sub = parser.add_subparsers(title="subcommands", metavar="COMMAND")
    p = sub.add_parser("evaluate", help="verdict per gate and the decision from a lock and a runs folder")
    p.add_argument("lock", help="the frozen plan (*.lock.json)")
    p.add_argument("runs", help="the runs folder holding ledger.jsonl")
    p.add_argument("--out", metavar="FILE", help="where to write evaluation.json (default: RUNS/evaluation.json)")
    p.add_argument("--markdown", metavar="FILE", help="also write the report as Markdown")
    p.add_argument("--blocks", action="store_true", help="include the per-block paired rows in the report")
    p.add_argument(
        "--plan-version",
        type=int,
        metavar="N",
        help="evaluate under version N of the plan (1 = as first frozen) from the lock's amendment chain, "
        "e.g. runs collected before a post-data amendment; the report says it was superseded",
    )
    p.add_argument(
        "--verbose", action="store_true", help="name every run in the run accounting (the artifact always lists all)"
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="replace an existing --out/--markdown file the toolkit did not write (never a ledger, "
        "lock, plan, trace, link or device)",
    )
    p.add_argument("--json", action="store_true", help="print the evaluation artifact as JSON instead of the report")
    p.add_argument(
        "--published",
        metavar="SEAL",
        help="the lock seal published at freeze (prereg freeze prints it): the lock must have it, or "
        "nothing is evaluated (exit 3)",
    )
    p.set_defaults(handler=cmd_evaluate)
    p = sub.add_parser(
        "verify",
        help="evaluate again from the lock and runs and compare with an evaluation.json: "
        "decision, verdicts and numbers (exit 3 when they differ)",
    )
    p.add_argument("evaluation", metavar="EVALUATION", help="the artifact to check (evaluation.json)")
    p.add_argument("lock", help="the frozen plan (*.lock.json) it was evaluated under")
    p.add_argument("runs", help="the runs folder holding ledger.jsonl")
    p.add_argument(
        "--published",
        metavar="SEAL",
        help="the lock seal the author published at freeze: the lock (up to the artifact's plan version) "
        "must have it, or nothing is re-evaluated (exit 3)",
    )
    p.add_argument(
        "--head",
        metavar="HASH",
        help="the run ledger head the author published when collection ended: the ledger's head must be "
        "it (exit 3 otherwise)",
    )
    p.add_argument(
        "--looks-head",
        metavar="HASH",
        help="the look ledger head the author published (gates evaluate prints it for a monitored plan): "
        "RUNS/looks.jsonl's head must be it (exit 3 otherwise)",
    )
    p.add_argument(
        "--source",
        action="append",
        metavar="SOURCE",
        help="a tracker the runs were imported from (mlflow:URI, tensorboard:DIR, wandb:DIR, raytune:DIR), read "
        "again: a run whose data or files changed since the import fails the verification (exit 3); repeatable",
    )
    p.add_argument("--json", action="store_true", help="print the outcome as JSON")
    p.set_defaults(handler=cmd_verify)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``gates``."""
    return run_main("gates", build_parser, argv)


if __name__ == "__main__":
    raise SystemExit(main())
