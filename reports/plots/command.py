"""``reports plot``: write the figures of an evaluation or of one block of runs, and their text equivalents.

* ``reports plot EVALUATION_JSON`` writes ``forest.png`` / ``forest.svg``; its text equivalent is the
  gates table (with the text forest bars) that ``reports show`` prints, printed again here.
* ``reports plot RUNS --run ID`` writes ``timeline-<ID>.png|svg`` (every arm of ID's stratum and
  replicate on one time axis) and, when the runs left ``trajectory.csv`` files,
  ``nll-<ID>.png|svg``; their text equivalents are a per-arm event list (seconds) and a table of
  tick vs held-out NLL per arm. For ``command`` runs (their event trace holds ``attempt`` spans) the
  timeline shows each run's attempts, faults ("fault at step N") and restarts ("restart k") above its
  phase marks (``reports.plots.attempts``), and, when the runs left ``progress.csv`` files,
  ``progress-<ID>.png|svg`` draws step over time (attempts distinguished) and training loss over
  steps; their text equivalents list every attempt, fault and restart, each attempt's reports, and a
  table of step vs loss per arm (``reports.data.attempts``). Only traces the runs' records list are
  drawn, each after it matches the SHA-256 its record holds (else exit 3, naming the file); a file no
  record lists is never drawn.
* ``reports plot RUNS --run ID --telemetry`` writes ``telemetry-<ID>.png|svg``: the run's kept raw
  telemetry trace (every poll, every update at its window, phases shaded; ``reports.plots.telemetry``).
  Its text equivalent gives per phase the intervals, total duration, updates inside and energy with
  bounds, and the effective update period. It is printed even without matplotlib (then exit 2 with
  the install hint). A run without a kept telemetry trace (simulator and imported runs) exits 2; a
  trace that does not match the SHA-256 in its record is never drawn (exit 3, naming the file).
* ``reports plot RUNS --run ID --commits [--arms A,B]`` writes ``commits-<ID>.png|svg``: the
  optimizer-commit ledgers (``traces/<run_id>.commits.jsonl``) of ID's stratum and replicate --
  every arm, or only ``--arms`` in that order -- on one modeled wall-time axis: the WAN conditions
  the runs saw, each commit's cycle coloured by mode with abstentions marked, membership per site,
  rejoins, and held-out NLL per commit (``reports.data.commits``, ``reports.plots.commits``). Its
  text equivalent (per arm: mode segments, every abstention with its reason, membership changes,
  partitions and outages, rejoin transfers, the stress episodes, final NLL and completion time) is
  printed even without matplotlib (then exit 2). Only controller runs (``sim.controller``,
  ``torch.controller``) have a commit ledger: any other run exits 2; a commit ledger that does not
  match its SHA-256 is never drawn (exit 3, naming the file).
* ``reports plot EVALUATION_JSON --family F`` draws the same figure for the challenger's and the
  chosen comparator's runs (the evaluation's ``comparator``) of the first block whose family factor
  is F, from the evaluated ledger's runs folder (``reports.data.commit_select``); exit 2 when the
  evaluation has no comparator, no such family, or no comparator could be chosen. The files are
  ``commits-<the challenger's run id>.png|svg``.

Files go to ``--out`` (created if needed; default: beside the evaluation, or into RUNS), written
atomically. Every path is printed, then each plot's text equivalent, so nothing is only a picture.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from prereg.errors import EXIT_OK, InputError
from reports.data.attempts import has_attempts, has_loss, loss_text, progress_runs, progress_text
from reports.data.commit_select import block_run_ids, family_block_runs
from reports.data.commits import load_commit_timeline
from reports.data.commits import timeline_text as commit_timeline_text
from reports.data.telemetry import drawn, load_telemetry
from reports.data.timeline import has_trajectories, load_block, nll_text, seconds_format, timeline_text
from reports.plots.attempts import attempt_timeline_figure, progress_figure
from reports.plots.commits import commit_figure
from reports.plots.figures import forest_figure, nll_figure, require_matplotlib, save_figure, timeline_figure
from reports.plots.telemetry import telemetry_figure, telemetry_text
from reports.words import evaluation as et
from reports.words.safe_text import clean, clean_model


def _out_dir(args: argparse.Namespace, default: Path) -> Path:
    out = Path(args.out) if args.out else default
    if out.exists() and not out.is_dir():
        raise InputError(f"{out}: not a folder (--out names the folder the plots go to)")
    out.mkdir(parents=True, exist_ok=True)
    return out


def _print_paths(title: str, paths: list[Path]) -> None:
    print(f"{title}: " + ", ".join(str(p) for p in paths))


def _plot_evaluation(args: argparse.Namespace, source: Path) -> int:
    from gates.api import read_evaluation  # lazy: pydantic
    from reports.terminal.console import make_console  # lazy: rich
    from reports.terminal.evaluation import BAR_WIDTH, diagnostics_section, forest_section, gate_table  # lazy: pydantic

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
    block = load_block(source, args.run)  # every trace checked against its record's SHA-256 first
    for stray in block.unlisted:
        print(
            f"reports: warning: {clean(stray, True)} is not listed in its run's record, so it cannot be checked "
            "against the ledger; not drawn",
            file=sys.stderr,
        )
    out = _out_dir(args, source)
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
            _print_paths(title, paths)
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
    out = _out_dir(args, source)
    paths = save_figure(telemetry_figure(view, shown), out, f"telemetry-{args.run}", args.format)
    _print_paths("telemetry trace (every poll, every update at its window, phases shaded)", paths)
    print("\nText equivalent of the telemetry trace:")
    print(text)
    return EXIT_OK


def _draw_commits(args: argparse.Namespace, runs: Path, run_ids: list[str], asked: str, out_default: Path) -> int:
    """The commit timeline of ``run_ids``, named after ``asked``: text first if matplotlib is missing."""
    timeline = load_commit_timeline(runs, run_ids, asked)  # refuses runs without, or with a changed, commit ledger
    text = clean("\n".join(commit_timeline_text(timeline)))
    try:
        require_matplotlib()
    except InputError:
        print("Text equivalent of the commit timeline (no figure: matplotlib is not installed):")
        print(text)
        raise

    out = _out_dir(args, out_default)
    paths = save_figure(commit_figure(timeline), out, f"commits-{asked}", args.format)
    _print_paths("commit timeline (modes, abstentions, membership, WAN and held-out NLL on one time axis)", paths)
    print("\nText equivalent of the commit timeline:")
    print(text)
    return EXIT_OK


def _arms(args: argparse.Namespace) -> list[str] | None:
    if getattr(args, "arms", None) is None:
        return None
    arms = [a.strip() for a in args.arms.split(",")]
    if not all(arms) or len(set(arms)) != len(arms):
        raise InputError(f"--arms {args.arms!r}: give distinct arm names separated by commas (--arms A,B)")
    return arms


def _plot_family(args: argparse.Namespace, source: Path) -> int:
    from gates.api import read_evaluation  # lazy: pydantic

    runs, run_ids = family_block_runs(read_evaluation(source), args.family, evaluation_path=source)
    return _draw_commits(args, runs, run_ids, run_ids[0], source.parent)


def cmd_plot(args: argparse.Namespace) -> int:
    """Dispatch on the input: an evaluation.json file, or a runs folder with ``--run``."""
    source = Path(args.input)
    telemetry = bool(getattr(args, "telemetry", False))
    commits, family = bool(getattr(args, "commits", False)), getattr(args, "family", None)
    if not source.exists():
        raise InputError(f"{source}: no such file or folder")
    if telemetry and commits:
        raise InputError("--telemetry and --commits draw different figures: give one of them")
    if getattr(args, "arms", None) is not None and not commits:
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
        if telemetry:  # the text equivalent is printed even without matplotlib
            return _plot_telemetry(args, source)
        if commits:
            return _draw_commits(args, source, block_run_ids(source, args.run, _arms(args)), args.run, source)
        require_matplotlib()
        return _plot_runs(args, source)
    if telemetry or commits:
        flag = "--telemetry" if telemetry else "--commits"
        raise InputError(f"{flag} needs a runs folder and --run ID (RUNS --run ID {flag}), not the file {source}")
    if family is not None:
        if args.run:
            raise InputError(
                "--family reads the runs from the evaluation: give EVALUATION_JSON --family F without --run"
            )
        return _plot_family(args, source)
    if args.run:
        raise InputError(f"--run needs a runs folder (the one holding ledger.jsonl), not the file {source}")
    require_matplotlib()
    return _plot_evaluation(args, source)
