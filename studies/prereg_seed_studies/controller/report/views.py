"""``reports plot RUNS --run ID --commits [--arms A,B]`` and ``reports plot EVALUATION_JSON --family F``.

The plot view (group ``prereg_toolkit.plot_views``, name ``commits``) draws controller runs' commit
ledgers on one wall-time axis (:mod:`.figure`) and prints the text equivalent (:mod:`.commit_timeline`)
even without matplotlib (then exit 2). Runs without a commit ledger exit 2; a changed ledger, 3.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from prereg.errors import EXIT_OK, InputError
from prereg_seed_studies.controller.report.commit_select import block_run_ids, family_block_runs
from prereg_seed_studies.controller.report.commit_timeline import load_commit_timeline, timeline_text
from prereg_seed_studies.controller.report.figure import commit_figure
from reports.plots.command import output_folder, print_paths
from reports.plots.figures import require_matplotlib, save_figure
from reports.words.safe_text import clean


def _draw(args: argparse.Namespace, runs: Path, run_ids: list[str], asked: str, out_default: Path) -> int:
    """The commit timeline of ``run_ids``, named after ``asked``: text first if matplotlib is missing."""
    timeline = load_commit_timeline(runs, run_ids, asked)  # refuses runs without, or with a changed, commit ledger
    text = clean("\n".join(timeline_text(timeline)))
    try:
        require_matplotlib()
    except InputError:
        print("Text equivalent of the commit timeline (no figure: matplotlib is not installed):")
        print(text)
        raise
    out = output_folder(args, out_default)
    paths = save_figure(commit_figure(timeline), out, f"commits-{asked}", args.format)
    print_paths("commit timeline (modes, abstentions, membership, WAN and held-out NLL on one time axis)", paths)
    print("\nText equivalent of the commit timeline:")
    print(text)
    return EXIT_OK


def _arms(args: argparse.Namespace) -> list[str] | None:
    if args.arms is None:
        return None
    arms = [a.strip() for a in args.arms.split(",")]
    if not all(arms) or len(set(arms)) != len(arms):
        raise InputError(f"--arms {args.arms!r}: give distinct arm names separated by commas (--arms A,B)")
    return arms


class CommitsView:
    """The commit timeline of a block's runs (``--commits``) or of an evaluation's family (``--family``)."""

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "--commits",
            action="store_true",
            help="with RUNS --run ID: plot the optimizer-commit ledgers of ID's stratum and replicate "
            "(controller runs only) on one wall-time axis: modes, abstentions, membership, WAN, "
            "held-out NLL; a commit ledger that does not match its ledger hash is refused (exit 3)",
        )
        parser.add_argument(
            "--arms",
            metavar="A,B",
            help="with --commits: only these arms, in this order (default: every arm of the block)",
        )
        parser.add_argument(
            "--family",
            metavar="FAMILY",
            help="with EVALUATION_JSON: the commit timeline of the challenger and the chosen comparator "
            "in the first block of that family (the evaluation's comparator)",
        )

    def asked(self, args: argparse.Namespace) -> bool:
        return (
            bool(getattr(args, "commits", False))
            or getattr(args, "family", None) is not None
            or (getattr(args, "arms", None) is not None)
        )

    def plot(self, args: argparse.Namespace, source: Path) -> int:
        telemetry, commits, family = bool(getattr(args, "telemetry", False)), args.commits, args.family
        if telemetry and commits:
            raise InputError("--telemetry and --commits draw different figures: give one of them")
        if args.arms is not None and not commits:
            raise InputError("--arms needs RUNS --run ID --commits (with --family the evaluation chooses the arms)")
        if source.is_dir():
            if family is not None:
                raise InputError(
                    f"--family needs the evaluation.json (EVALUATION_JSON --family F), not the folder {source}"
                )
            if not args.run:
                raise InputError(
                    f"{source}: a runs folder needs --run ID (a run in its ledger.jsonl); "
                    "for the forest plot give the evaluation.json itself"
                )
            return _draw(args, source, block_run_ids(source, args.run, _arms(args)), args.run, source)
        if telemetry or commits:
            flag = "--telemetry" if telemetry else "--commits"
            raise InputError(f"{flag} needs a runs folder and --run ID (RUNS --run ID {flag}), not the file {source}")
        if args.run:
            raise InputError(
                "--family reads the runs from the evaluation: give EVALUATION_JSON --family F without --run"
            )
        from gates.api import read_evaluation  # lazy: pydantic

        runs, run_ids = family_block_runs(read_evaluation(source), family, evaluation_path=source)
        return _draw(args, runs, run_ids, run_ids[0], source.parent)
