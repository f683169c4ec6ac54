"""``reports plot``: the figures of an evaluation (forest plot) or of one block of runs (timeline, NLL,
progress, telemetry), each followed by its text equivalent; installed plot views add a study's own.

Only traces the runs' records list are drawn, each after it matches its record's SHA-256 (else exit 3).
Files go to ``--out`` (default: beside the evaluation, or RUNS), written atomically (docs/cli.md).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from prereg.errors import EXIT_OK, InputError
from reports.data.attempts import has_attempts, has_loss, loss_text, progress_runs, progress_text
from reports.data.telemetry import drawn, load_telemetry
from reports.data.timeline import has_trajectories, load_block, nll_text, seconds_format, timeline_text
from reports.plots.attempts import attempt_timeline_figure, progress_figure
from reports.plots.figures import forest_figure, nll_figure, require_matplotlib, save_figure, timeline_figure
from reports.plots.telemetry import telemetry_figure, telemetry_text
from reports.sections import installed_plot_views
from reports.words import evaluation as et
from reports.words.safe_text import clean, clean_model


def output_folder(args: argparse.Namespace, default: Path) -> Path:
    """``--out`` (created if needed), else ``default``; ``InputError`` if it is not a folder."""
    out = Path(args.out) if args.out else default
    if out.exists() and not out.is_dir():
        raise InputError(f"{out}: not a folder (--out names the folder the plots go to)")
    out.mkdir(parents=True, exist_ok=True)
    return out


def print_paths(title: str, paths: list[Path]) -> None:
    """One line: what the figure shows, then every file written."""
    print(f"{title}: " + ", ".join(str(p) for p in paths))


def _plot_evaluation(args: argparse.Namespace, source: Path) -> int:
    from gates.api import read_evaluation  # lazy: pydantic
    from reports.terminal.console import make_console  # lazy: rich
    from reports.terminal.evaluation import BAR_WIDTH, diagnostics_section, forest_section, gate_table  # lazy: pydantic

    ev = clean_model(read_evaluation(source))  # no control characters reach the terminal
    out = output_folder(args, source.parent)
    paths = save_figure(forest_figure(ev), out, "forest", args.format)
    print_paths("forest plot (every gate's interval against its margin and null)", paths)
    print("Text equivalent of the forest plot: the gates table that `reports show` prints (same numbers):")
    console = make_console()
    primary = [et.gate_view(g, ev, BAR_WIDTH) for g in et.primary_gates(ev)]
    console.print(gate_table(f"Primary gates (decide the claim; multiplicity {ev.multiplicity})", primary))
    console.print(forest_section(primary))
    sensitivity = [et.gate_view(g, ev, BAR_WIDTH) for g in et.sensitivity_gates(ev)]
    if sensitivity:
        console.print(gate_table("Sensitivity (reported, never decides)", sensitivity))
        console.print(forest_section(sensitivity))
    for part in diagnostics_section(ev, et.diagnostic_gates(ev)):
        console.print(part)
    return EXIT_OK


def _plot_runs(args: argparse.Namespace, source: Path) -> int:
    block = load_block(source, args.run)  # every trace checked against its record's SHA-256 first
    for stray in block.unlisted:
        print(
            f"reports: warning: {clean(stray, True)} is not listed in its run's record, so it cannot be checked "
            "against the ledger; not drawn",
            file=sys.stderr,
        )
    out = output_folder(args, source)
    written: list[tuple[str, list[Path], str]] = []
    story = any(has_attempts(t.events) for t in block.runs)  # command runs: attempts, faults, restarts
    if story:
        paths = save_figure(attempt_timeline_figure(block), out, f"timeline-{args.run}", args.format)
        written.append(
            (
                "timeline of attempts, faults, restarts and phases (every arm on one time axis)",
                paths,
                timeline_text(block),
            )
        )
    elif any(t.events for t in block.runs):
        paths = save_figure(timeline_figure(block), out, f"timeline-{args.run}", args.format)
        written.append(("recovery timeline (every arm of the block on one time axis)", paths, timeline_text(block)))
    if progress_runs(block):
        paths = save_figure(progress_figure(block), out, f"progress-{args.run}", args.format)
        text = progress_text(block, seconds_format(block))
        written.append(
            (
                "progress the programs reported (step over time" + (", loss over steps)" if has_loss(block) else ")"),
                paths,
                text,
            )
        )
        if has_loss(block):
            written.append(("training loss over steps (the lower panel of the progress figure)", [], loss_text(block)))
    if has_trajectories(block):
        paths = save_figure(nll_figure(block), out, f"nll-{args.run}", args.format)
        written.append(("held-out NLL over ticks (every arm on one axis)", paths, nll_text(block)))
    for title, paths, _ in written:
        if paths:
            print_paths(title, paths)
    if not has_trajectories(block) and not story:  # command runs report their loss as progress instead
        print(f"no NLL plot: no run of the block left a trajectory.csv ({clean(block.title)})")
    if story and not progress_runs(block):
        print(
            f"no progress plot: no run of the block left a progress.csv (its program reported no progress; "
            f"{clean(block.title)})"
        )
    for title, _, text in written:
        print(f"\nText equivalent of the {title.split(' (')[0]}:")
        print(clean(text))
    return EXIT_OK


def _plot_telemetry(args: argparse.Namespace, source: Path) -> int:
    view = load_telemetry(source, args.run)  # refuses unknown runs, runs without a trace, changed traces
    shown = drawn(view)
    text = clean(telemetry_text(view, shown))
    for name, why in view.other_problems:
        print(
            f"reports: warning: run {view.run_id}: trace {clean(name, True)} {why} (the telemetry trace itself "
            "matches the ledger)",
            file=sys.stderr,
        )
    try:
        require_matplotlib()
    except InputError:
        print("Text equivalent of the telemetry trace (no figure: matplotlib is not installed):")
        print(text)
        raise
    out = output_folder(args, source)
    paths = save_figure(telemetry_figure(view, shown), out, f"telemetry-{args.run}", args.format)
    print_paths("telemetry trace (every poll, every update at its window, phases shaded)", paths)
    print("\nText equivalent of the telemetry trace:")
    print(text)
    return EXIT_OK


def cmd_plot(args: argparse.Namespace) -> int:
    """Dispatch on the input: an evaluation.json file, or a runs folder with ``--run``; or a study's view."""
    source = Path(args.input)
    if not source.exists():
        raise InputError(f"{source}: no such file or folder")
    for view in installed_plot_views():
        if view.asked(args):
            return view.plot(args, source)
    telemetry = bool(getattr(args, "telemetry", False))
    if source.is_dir():
        if not args.run:
            raise InputError(
                f"{source}: a runs folder needs --run ID (a run in its ledger.jsonl); "
                "for the forest plot give the evaluation.json itself"
            )
        if telemetry:  # the text equivalent is printed even without matplotlib
            return _plot_telemetry(args, source)
        require_matplotlib()
        return _plot_runs(args, source)
    if telemetry:
        raise InputError(
            f"--telemetry needs a runs folder and --run ID (RUNS --run ID --telemetry), not the file {source}"
        )
    if args.run:
        raise InputError(f"--run needs a runs folder (the one holding ledger.jsonl), not the file {source}")
    require_matplotlib()
    return _plot_evaluation(args, source)


def add_view_arguments(parser: argparse.ArgumentParser) -> None:
    """Let every installed plot view add its options to the ``reports plot`` parser."""
    for view in installed_plot_views():
        view.add_arguments(parser)
