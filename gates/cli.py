"""The ``gates`` console script: ``gates evaluate LOCK RUNS``.

Exit codes: 0 supported, 1 not supported, 3 refused (or the lock does not verify), 2 bad input or
usage (one clear message, never a traceback), 4 internal error.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from prereg.clikit import EXIT_INTEGRITY, EXIT_OK, ArgumentParser, UserError, emit_json, run_main

EXIT_NOT_SUPPORTED = 1
DECISION_EXIT = {"supported": EXIT_OK, "not_supported": EXIT_NOT_SUPPORTED, "refused": EXIT_INTEGRITY}


def cmd_evaluate(args: argparse.Namespace) -> int:
    """Evaluate every gate of a verified lock on a runs folder; write and print the report."""
    from collect.cli import load_verified_lock
    from collect.ledger import read_ledger
    from gates.artifact import is_evaluation_file, sealed, write_evaluation
    from gates.assemble import build_evaluation
    from gates.integrity import LedgerTampered
    from prereg.fileio import check_output

    lock, plan = load_verified_lock(args.lock)
    if args.plan_version is not None:
        from gates.provenance import lock_as_of
        from prereg.plan import plan_from_canonical

        try:
            lock = lock_as_of(lock, args.plan_version)
        except ValueError as err:
            raise UserError(f"{args.lock}: {err}") from None
        plan = plan_from_canonical(lock["plan"])
    runs = _runs_folder(Path(args.runs), args.lock)
    out = Path(args.out) if args.out else runs / "evaluation.json"
    check_output(out, args.force, is_evaluation_file)  # before anything is computed or written
    if args.markdown:
        from reports.evaluation_markdown import is_evaluation_markdown

        check_output(Path(args.markdown), args.force, is_evaluation_markdown)
    try:
        evaluation = build_evaluation(lock, plan, read_ledger(runs), Path(args.lock))
    except LedgerTampered as err:
        raise UserError(f"{err}:\n- " + "\n- ".join(err.problems[:50]), exit_code=EXIT_INTEGRITY,
                        details=err.problems) from None
    evaluation = sealed(evaluation)
    write_evaluation(out, evaluation)
    if args.markdown:
        from reports.evaluation_view import evaluation_markdown

        from reports.cli import write_text_atomically

        write_text_atomically(Path(args.markdown), evaluation_markdown(evaluation, show_blocks=args.blocks))
    if args.json:
        emit_json(evaluation.model_dump(mode="json", by_alias=True))
    else:
        from reports.evaluation_view import render_evaluation
        from reports.terminal import make_console

        make_console().print(render_evaluation(evaluation, show_blocks=args.blocks, verbose=args.verbose))
        print(f"evaluation written to {out}")
        from gates.integrity import chain_sentence

        import textwrap

        led = evaluation.ledger
        words = chain_sentence(led.chain, None, led.unchained)
        print(textwrap.fill(f"ledger {words}", 80))
        if led.head_sha256:
            print(f"ledger head sha256:\n{led.head_sha256}")
    return DECISION_EXIT[evaluation.decision]


def _runs_folder(runs: Path, lock: str) -> Path:
    """RUNS as a folder holding ledger.jsonl; anything else gets a message saying what is expected."""
    from collect.ledger import LEDGER_NAME, ledger_path

    if runs.is_file() and runs.name == LEDGER_NAME:
        raise UserError(f"{runs}: gates evaluate expects the runs folder, not the ledger file: "
                        f"gates evaluate {lock} {runs.parent}")
    if runs.is_file() and runs.name.lower().endswith((".csv", ".csv.gz", ".jsonl", ".ndjson", ".parquet")):
        raise UserError(f"{runs}: is a table of runs, but gates evaluate expects a runs folder holding ledger.jsonl; "
                        f"import the table first: collect import {runs} --lock {lock} --out RUNS, then "
                        f"gates evaluate {lock} RUNS")
    if runs.is_file():
        raise UserError(f"{runs}: is a file; gates evaluate expects a runs folder holding ledger.jsonl "
                        "(written by 'collect run' or 'collect import')")
    if not runs.is_dir():
        raise UserError(f"{runs}: no such runs folder")
    if not ledger_path(runs).is_file():
        raise UserError(f"{runs}: holds no ledger.jsonl (run 'collect run' or 'collect import' first)")
    return runs


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
    p.add_argument("--plan-version", type=int, metavar="N",
                   help="evaluate under version N of the plan (1 = as first frozen) from the lock's amendment chain, "
                        "e.g. runs collected before a post-data amendment; the report says it was superseded")
    p.add_argument("--verbose", action="store_true",
                   help="name every run in the run accounting (the artifact always lists all)")
    p.add_argument("--force", action="store_true",
                   help="replace an existing --out/--markdown file the toolkit did not write (never a ledger, "
                        "lock, plan, trace, link or device)")
    p.add_argument("--json", action="store_true", help="print the evaluation artifact as JSON instead of the report")
    p.set_defaults(handler=cmd_evaluate)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``gates``."""
    return run_main("gates", build_parser, argv)



if __name__ == "__main__":
    raise SystemExit(main())
