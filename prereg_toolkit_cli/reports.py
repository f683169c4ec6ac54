"""The ``reports`` console script: ``show`` (terminal, Markdown, JSON), ``plot`` and ``html`` of an evaluation.

Argparse and one library call per command (docs/cli.md). ``plot`` also takes the options of every
installed plot view (:mod:`reports.sections`), loaded only when ``plot`` runs so ``--help`` stays fast.
Exit codes: 0 shown, 2 bad input or usage, 3 an artifact or trace that does not match its seal or hash.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from prereg.errors import EXIT_BAD_INPUT, ToolkitError
from prereg_toolkit_cli.kit import EXIT_INTEGRITY, EXIT_OK, ArgumentParser, UserError, emit_json, run_main


def cmd_show(args: argparse.Namespace) -> int:
    """Print an evaluation for a reviewer (and write Markdown, or print the artifact as JSON)."""
    from gates.api import read_evaluation  # lazy: pydantic
    from prereg.fileio import check_output, write_text_atomically  # lazy: startup
    from reports.html.figures import check_figure_outputs, write_figures  # lazy: startup
    from reports.words.safe_text import clean_model  # lazy: startup

    if args.json and args.markdown == "-":
        raise UserError("--json and --markdown - both print on stdout; give --markdown a file")
    if args.markdown not in (None, "-"):
        from reports.markdown.evaluation import is_evaluation_markdown  # lazy: pydantic

        check_output(Path(args.markdown), args.force, is_evaluation_markdown)
        check_figure_outputs(Path(args.markdown), args.force)

    ev = read_evaluation(args.evaluation)
    from gates.artifact import seal_status  # lazy: pydantic
    from gates.consistency import consistency_problems  # lazy: pydantic

    problems = consistency_problems(ev)
    if problems:
        raise UserError(
            f"{args.evaluation}: INCONSISTENT evaluation artifact; refusing to show it:\n- " + "\n- ".join(problems),
            exit_code=EXIT_INTEGRITY,
            details=problems,
        )
    from collect.ledger.store import LEDGER_NAME  # lazy: pydantic
    from reports.data.reverify import reverify  # lazy: pydantic

    path = Path(args.evaluation)
    runs = path.parent if (path.parent / LEDGER_NAME).is_file() else None
    checked = reverify(ev, path, runs, Path(args.lock) if args.lock else None)  # a forged artifact: exit 3
    if seal_status(ev) == "unsealed":
        print(
            f"reports: note: {args.evaluation} carries no seal (not written by gates evaluate, or its seal was removed); its consistency "
            "was checked, but edits that keep it consistent cannot be detected",
            file=sys.stderr,
        )
    print(f"reports: {args.evaluation}{':' if checked.startswith('re-verified') else ''} {checked}", file=sys.stderr)
    if args.json:
        emit_json(ev.model_dump(mode="json", by_alias=True))
    if args.markdown is not None:
        from reports.markdown.evaluation import evaluation_markdown  # lazy: pydantic

        if args.markdown == "-":
            sys.stdout.write(evaluation_markdown(ev, show_blocks=args.blocks))
        else:
            figures = write_figures(clean_model(ev), Path(args.markdown), args.force)
            markdown = evaluation_markdown(ev, show_blocks=args.blocks, figures=figures)
            write_text_atomically(Path(args.markdown), markdown, args.force, is_evaluation_markdown)
            print(
                f"reports: wrote Markdown to {args.markdown} (figures beside it: "
                f"{', '.join(name for _, name in figures)})",
                file=sys.stderr,
            )
    if not args.json and args.markdown != "-":
        from reports.terminal.console import make_console  # lazy: rich
        from reports.terminal.evaluation import render_evaluation  # lazy: pydantic

        make_console().print(render_evaluation(ev, show_blocks=args.blocks, verbose=args.verbose))
    return EXIT_OK


def cmd_plot(args: argparse.Namespace) -> int:
    """Write the plots of an evaluation or of one block of runs, and print their text equivalents."""
    from reports.plots.command import cmd_plot as run_plot  # lazy: startup

    return run_plot(args)


def cmd_html(args: argparse.Namespace) -> int:
    """Write the reviewer's report as one self-contained HTML file."""
    from reports.html.page import write_html_report  # lazy: pydantic

    path, size, warnings = write_html_report(args.input, args.output, run_id=args.run, force=args.force, lock=args.lock)
    for warning in warnings:
        print(f"reports: warning: {warning}", file=sys.stderr)
    print(
        f"reports: wrote the HTML report to {path} ({size / 1024:.0f} KiB; self-contained: opens from disk, "
        "loads nothing)",
        file=sys.stderr,
    )
    return EXIT_OK


LOCK_HELP = (
    "the lock the evaluation was made under, to re-evaluate it from its runs folder (default: the one it "
    "recorded, or a *.lock.json in or above the runs folder)"
)


def build_parser(with_plot_views: bool = False) -> argparse.ArgumentParser:
    """The ``reports`` argument parser; ``with_plot_views`` adds the installed plot views' options to ``plot``."""
    parser = ArgumentParser(
        prog="reports",
        description="Render evaluations for people: the reviewer's report in the terminal or as Markdown, "
        "and plots with text equivalents.",
        epilog="exit codes: 0 shown, 2 bad input or usage (a missing or malformed artifact), 3 an artifact or "
        "trace that does not match its seal or ledger hash, 4 internal error",
    )
    sub = parser.add_subparsers(title="subcommands", metavar="COMMAND")
    p = sub.add_parser("show", help="the reviewer's report of an evaluation.json (gates evaluate writes it)")
    p.add_argument("evaluation", metavar="EVALUATION_JSON", help="the artifact (schema gates/evaluation/v2)")
    p.add_argument("--blocks", action="store_true", help="add the per-block paired rows")
    p.add_argument("--verbose", action="store_true", help="name every run in the run accounting")
    p.add_argument(
        "--markdown",
        metavar="FILE",
        help="also write the report as GitHub-flavoured Markdown to FILE (atomically), with its SVG "
        "figures beside it (FILE's stem + .forest.svg / .strata.svg, linked from it); '-' prints the "
        "Markdown on stdout instead of the terminal report (no figures)",
    )
    p.add_argument("--json", action="store_true", help="print the artifact as JSON instead of the report")
    p.add_argument("--lock", metavar="LOCK", help=LOCK_HELP)
    p.add_argument(
        "--force",
        action="store_true",
        help="replace an existing --markdown file the toolkit did not write (never a ledger, lock, "
        "plan, trace, link or device)",
    )
    p.set_defaults(handler=cmd_show)
    p = sub.add_parser(
        "plot",
        help="figures (PNG/SVG) with text equivalents: the forest plot of an evaluation.json, "
        "the recovery timeline and NLL trajectories of one run's stratum (RUNS --run ID; command "
        "runs: attempts, faults, restarts, and the progress and loss the program reported), one "
        "run's telemetry trace (RUNS --run ID --telemetry), or an installed study's own figures "
        "(their options: reports plot --help)",
        description="Write plots and print each one's text equivalent. Needs matplotlib: "
        "pip install 'prereg-toolkit[plot]'.",
    )
    p.add_argument(
        "input",
        metavar="EVALUATION_JSON|RUNS",
        help="an evaluation.json (forest plot), or a runs folder holding ledger.jsonl (with --run)",
    )
    p.add_argument(
        "--run",
        metavar="ID",
        help="a run id in RUNS/ledger.jsonl: plot its stratum and replicate, every arm on one time axis "
        "(a command run: its attempts, faults and restarts, and its progress and loss curves)",
    )
    p.add_argument(
        "--telemetry",
        action="store_true",
        help="with RUNS --run ID: plot that run's kept raw telemetry trace instead (every poll, the "
        "updates at their windows, phases shaded; text: per-phase energy with bounds); a trace "
        "that does not match its ledger hash is refused (exit 3)",
    )
    p.add_argument(
        "--out",
        metavar="DIR",
        help="folder for the files (created if needed; default: beside the evaluation, or RUNS itself)",
    )
    p.add_argument("--format", choices=("png", "svg", "both"), default="both", help="file format(s) (default: both)")
    if with_plot_views:  # each installed study's plot options (loaded only for `reports plot`)
        from reports.plots.command import add_view_arguments  # lazy: startup

        add_view_arguments(p)
    p.set_defaults(handler=cmd_plot)
    p = sub.add_parser(
        "html",
        help="the reviewer's report as one self-contained HTML file (decision, gates, forest plot, "
        "per-stratum points, runs, recovery timeline, telemetry, provenance)",
        description="Write one HTML file that opens from disk with no network (no external scripts, fonts or "
        "styles) and prints to PDF. Given a runs folder, it reads RUNS/evaluation.json and draws the "
        "run sections from the ledger and its traces; given an evaluation.json, the run sections come "
        "from its folder when that holds a ledger.",
    )
    p.add_argument(
        "input",
        metavar="RUNS_OR_EVALUATION",
        help="a runs folder holding ledger.jsonl and evaluation.json, or an evaluation.json",
    )
    p.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        help="where to write the page (atomically; default: report.html beside the evaluation)",
    )
    p.add_argument(
        "--run",
        metavar="ID",
        help="draw the recovery timeline of ID's stratum and replicate (default: "
        "the first block whose runs met a failure)",
    )
    p.add_argument("--lock", metavar="LOCK", help=LOCK_HELP)
    p.add_argument(
        "--force",
        action="store_true",
        help="replace an existing FILE the toolkit did not write (never a ledger, lock, plan, trace, link or device)",
    )
    p.set_defaults(handler=cmd_html)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``reports``."""
    args = list(sys.argv[1:] if argv is None else argv)
    command = next((a for a in args if not a.startswith("-")), None)
    try:
        parser = build_parser(with_plot_views=command == "plot")
    except ToolkitError as err:  # an installed plot view that cannot load
        print(f"reports: {err.message}", file=sys.stderr)
        return err.exit_code
    except argparse.ArgumentError as err:  # two installed plot views adding the same option
        print(f"reports: the installed plot views' options clash: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    return run_main("reports", lambda: parser, args)


if __name__ == "__main__":
    raise SystemExit(main())
