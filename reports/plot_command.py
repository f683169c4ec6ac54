"""``reports plot``: write the figures of an evaluation or of one block of runs, and their text equivalents.

* ``reports plot EVALUATION_JSON`` writes ``forest.png`` / ``forest.svg``; its text equivalent is the
  gates table (with the text forest bars) that ``reports show`` prints, printed again here.
* ``reports plot RUNS --run ID`` writes ``timeline-<ID>.png|svg`` (every arm of ID's stratum and
  replicate on one time axis) and, when the runs left ``trajectory.csv`` files,
  ``nll-<ID>.png|svg``; their text equivalents are a per-arm event list (seconds) and a table of
  tick vs held-out NLL per arm.
* ``reports plot RUNS --run ID --telemetry`` writes ``telemetry-<ID>.png|svg``: the run's kept raw
  telemetry trace (every poll, every update at its window, phases shaded; ``reports.telemetry_plot``).
  Its text equivalent gives per phase the intervals, total duration, updates inside and energy with
  bounds, and the effective update period. It is printed even without matplotlib (then exit 2 with
  the install hint). A run without a kept telemetry trace (simulator and imported runs) exits 2; a
  trace that does not match the SHA-256 in its record is never drawn (exit 3, naming the file).

Files go to ``--out`` (created if needed; default: beside the evaluation, or into RUNS), written
atomically. Every path is printed, then each plot's text equivalent, so nothing is only a picture.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from prereg.errors import EXIT_OK, InputError


def _out_dir(args: argparse.Namespace, default: Path) -> Path:
    out = Path(args.out) if args.out else default
    if out.exists() and not out.is_dir():
        raise InputError(f"{out}: not a folder (--out names the folder the plots go to)")
    out.mkdir(parents=True, exist_ok=True)
    return out


def _print_paths(title: str, paths: list[Path]) -> None:
    print(f"{title}: " + ", ".join(str(p) for p in paths))


def _plot_evaluation(args: argparse.Namespace, source: Path) -> int:
    from gates.api import read_evaluation
    from reports import evaluation_text as et
    from reports.evaluation_view import (
        BAR_WIDTH,
        diagnostics_section,
        forest_section,
        gate_table,
    )
    from reports.plots import forest_figure, save_figure
    from reports.safe_text import clean_model
    from reports.terminal import make_console

    ev = clean_model(read_evaluation(source))  # no control characters reach the terminal
    out = _out_dir(args, source.parent)
    paths = save_figure(forest_figure(ev), out, "forest", args.format)
    _print_paths("forest plot (every gate's interval against its margin and null)", paths)
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
    from reports.plots import nll_figure, save_figure, timeline_figure
    from reports.timeline import has_trajectories, load_block, nll_text, timeline_text

    block = load_block(source, args.run)
    out = _out_dir(args, source)
    written: list[tuple[str, list[Path], str]] = []
    if any(t.events for t in block.runs):
        paths = save_figure(timeline_figure(block), out, f"timeline-{args.run}", args.format)
        written.append(("recovery timeline (every arm of the block on one time axis)", paths, timeline_text(block)))
    if has_trajectories(block):
        paths = save_figure(nll_figure(block), out, f"nll-{args.run}", args.format)
        written.append(("held-out NLL over ticks (every arm on one axis)", paths, nll_text(block)))
    from reports.safe_text import clean

    for title, paths, _ in written:
        _print_paths(title, paths)
    if not has_trajectories(block):
        print(f"no NLL plot: no run of the block left a trajectory.csv ({clean(block.title)})")
    for title, _, text in written:
        print(f"\nText equivalent of the {title.split(' (')[0]}:")
        print(clean(text))
    return EXIT_OK


def _plot_telemetry(args: argparse.Namespace, source: Path) -> int:
    import sys

    from reports.plots import require_matplotlib, save_figure
    from reports.safe_text import clean
    from reports.telemetry_plot import telemetry_figure, telemetry_text
    from reports.telemetry_view import drawn, load_telemetry

    view = load_telemetry(source, args.run)  # refuses unknown runs, runs without a trace, changed traces
    shown = drawn(view)
    text = clean(telemetry_text(view, shown))
    for name, why in view.other_problems:
        print(f"reports: warning: run {view.run_id}: trace {clean(name, True)} {why} (the telemetry trace itself "
              "matches the ledger)", file=sys.stderr)
    try:
        require_matplotlib()
    except InputError:
        print("Text equivalent of the telemetry trace (no figure: matplotlib is not installed):")
        print(text)
        raise
    out = _out_dir(args, source)
    paths = save_figure(telemetry_figure(view, shown), out, f"telemetry-{args.run}", args.format)
    _print_paths("telemetry trace (every poll, every update at its window, phases shaded)", paths)
    print("\nText equivalent of the telemetry trace:")
    print(text)
    return EXIT_OK


def cmd_plot(args: argparse.Namespace) -> int:
    """Dispatch on the input: an evaluation.json file, or a runs folder with ``--run``."""
    from reports.plots import require_matplotlib

    source = Path(args.input)
    telemetry = bool(getattr(args, "telemetry", False))
    if not source.exists():
        raise InputError(f"{source}: no such file or folder")
    if source.is_dir():
        if not args.run:
            raise InputError(f"{source}: a runs folder needs --run ID (a run in its ledger.jsonl); "
                            "for the forest plot give the evaluation.json itself")
        if telemetry:  # the text equivalent is printed even without matplotlib
            return _plot_telemetry(args, source)
        require_matplotlib()
        return _plot_runs(args, source)
    if telemetry:
        raise InputError(f"--telemetry needs a runs folder and --run ID (RUNS --run ID --telemetry), not the file "
                         f"{source}")
    if args.run:
        raise InputError(f"--run needs a runs folder (the one holding ledger.jsonl), not the file {source}")
    require_matplotlib()
    return _plot_evaluation(args, source)
