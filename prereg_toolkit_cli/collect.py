"""The ``collect`` console script: bring runs into a ledger under a frozen plan.

Subcommands: ``run`` (execute a frozen plan), ``plan`` (list its planned runs, ids and seeds, for
work done elsewhere), ``import`` (runs made elsewhere), ``telemetry`` (a power log another tool
wrote, as a trace), ``probe`` (what a telemetry sensor can resolve).
Argparse + one call of :mod:`collect.api` (or the probe module) + printing; every error
is a ``prereg.errors.ToolkitError`` mapped once by ``run_main``.
Exit codes: 0 ok, 1 some runs failed (recorded as failed in the ledger) or the Ray control plane was lost
mid-sweep (the finished runs kept), 2 bad input or usage,
3 the lock does not verify.
"""

from __future__ import annotations

import argparse
import sys
import textwrap
import warnings
from collections.abc import Sequence
from pathlib import Path

from prereg_toolkit_cli.collect_trackers import (
    add_tracker_options,
    cmd_import_tracker,
    is_tracker_source,
    print_tracker_snippets,
)
from prereg_toolkit_cli.collect_try import add_try_parser
from prereg_toolkit_cli.kit import EXIT_OK, ArgumentParser, UserError, emit_json, run_main, safe

TYPE_CHECKING = False  # typing stays unloaded at --help (mypy treats this name as true)
if TYPE_CHECKING:
    from typing import Any

    from collect.ledger.failed_runs import FailedRun

EXIT_RUNS_FAILED = 1  # collect run: some runs raised and were recorded as failed
EXIT_INTERRUPTED = 130  # collect run: Ctrl-C (128 + SIGINT); the ledger keeps every finished run
MAX_POLLS = 1_000_000  # collect probe: polls in one probe


def _say(text: str, **kwargs: Any) -> None:
    """``print`` with terminal control characters escaped: these lines echo paths and names the user gave."""
    print(safe(text), **kwargs)


def cmd_import(args: argparse.Namespace) -> int:
    """Validate a table of runs against the plan and append it to RUNS/ledger.jsonl (``collect.api.import_table``)."""
    from collect.api import import_table, ledger_head  # lazy: pydantic
    from collect.importing.time_order import EarlyRunsWarning  # lazy: pydantic
    from prereg.api import load_lock  # lazy: pydantic

    if is_tracker_source(args.file):
        return cmd_import_tracker(args)
    narrowing = [f"--{d}" for d in ("experiment", "filter", "match") if getattr(args, d) is not None]
    if narrowing:
        raise UserError(f"{', '.join(narrowing)}: options of a tracker source (mlflow:URI, tensorboard:DIR, ...)")
    given = [f"--{d.replace('_', '-')}" for d in args.log_options if getattr(args, d) is not None]
    if given and args.telemetry is None:
        raise UserError(f"{', '.join(given)}: options of the power logs; they need --telemetry DIR")
    # the options travel only when given (import_table takes them as telemetry_options); refused before the lock is read
    extra: dict[str, Any] = {"telemetry_options": _log_options(args)} if given else {}
    note_type: type[Warning] | None = None  # the power logs' notes, with --telemetry
    if args.telemetry is not None:
        from collect.importing.logs import LogNote  # lazy: numpy

        note_type = LogNote
    lock = load_lock(args.lock)
    runs = Path(args.out)
    skipped: list[str] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", EarlyRunsWarning)
        if note_type is not None:
            warnings.simplefilter("always", note_type)
        records = import_table(
            lock, args.file, runs, skipped, args.telemetry, args.telemetry_format, keep=False, **extra
        )
    notes = [str(w.message) for w in caught if w.category is note_type]
    for warning in caught:
        if issubclass(warning.category, EarlyRunsWarning):
            _say(textwrap.fill(f"collect import: warning: {warning.message}", 100), file=sys.stderr)
        elif warning.category is note_type:
            _say(f"collect import: note: {warning.message}", file=sys.stderr)
        else:
            warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno)
    head = records[-1].record_sha256 if records else ledger_head(runs)  # the appended batch's last hash
    if args.json:
        emit_json(
            {
                "ok": True,
                "imported": len(records),
                "already_present": len(skipped),
                "ledger": str(runs / "ledger.jsonl"),
                "ledger_head_sha256": head,
                "prereg_sha256": lock.plan_sha256,
                "run_ids": [r.run_id for r in records],
                "notes": notes,
            }
        )
    else:
        already = f" ({len(skipped)} rows already in the ledger, skipped)" if skipped else ""
        _say(
            f"imported {len(records)} runs into {runs / 'ledger.jsonl'} under plan {lock.plan_sha256[:12]}"
            f"{already}\nledger head sha256 {head}"
        )
    return EXIT_OK


def cmd_plan(args: argparse.Namespace) -> int:
    """List every planned run on stdout (``collect.api.plan_listing``) or into ``-o FILE``
    (``collect.importing.outputs.write_plan_listing``: the output rule checked before the lock is read)."""
    from collect.api import plan_listing  # lazy: pydantic
    from collect.importing.outputs import write_plan_listing  # lazy: startup

    if args.tracker is not None:
        if args.output or args.format != "csv":
            raise UserError("--tracker prints each planned run's tags and snippet to the terminal; no -o or --format")
        return print_tracker_snippets(args.lock, args.tracker)
    if args.output:
        write_plan_listing(args.lock, args.output, args.format, args.force)
        _say(f"wrote the plan's runs to {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(plan_listing(args.lock, args.format))
    return EXIT_OK


def cmd_run(args: argparse.Namespace) -> int:
    """Execute every run of a frozen plan not yet complete in RUNS (``collect.api.run_plan``).

    Says what it is doing from the start (on stderr, unless ``--json``); on Ctrl-C it says how many
    runs the ledger kept and the command that finishes the rest, and exits 130.
    """
    from collect.api import run_plan  # lazy: pydantic
    from collect.engine.ray_executor import RayStartCostWarning  # lazy: pydantic

    runs = Path(args.out)
    talk = not args.json
    if talk:
        _say(
            f"collect run: verifying {args.lock} and checking the parameters of every planned run ...",
            file=sys.stderr,
            flush=True,
        )
    if _monitored(args.lock):
        return _run_monitored(args, runs, talk)
    progress, finish = _progress(sys.stderr.isatty() and talk, talk, args.jobs, args.executor)
    try:
        with warnings.catch_warnings(record=True) as caught:
            notes = (RayStartCostWarning,)
            warnings.simplefilter("always", RayStartCostWarning)
            summary = run_plan(args.lock, runs, args.jobs, args.executor, progress, address=args.address)
        for warning in caught:  # the engine's note on Ray's start cost
            if issubclass(warning.category, notes):
                _say(textwrap.fill(f"collect run: warning: {warning.message}", 100), file=sys.stderr)
            else:
                warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno)
    except KeyboardInterrupt:
        finish()
        _say(
            f"collect: interrupted; {_kept_runs(args.lock, runs)}\n"
            f"finish the remaining runs with: collect run {args.lock} --out {runs} --resume",
            file=sys.stderr,
        )
        return EXIT_INTERRUPTED
    finally:
        finish()
    head, failed, kept, undeclared = _sweep(runs, summary.completed + summary.failed)
    if args.json:
        emit_json(
            {
                "ok": summary.failed == 0,
                "planned": summary.planned,
                "skipped": summary.skipped,
                "completed": summary.completed,
                "failed": summary.failed,
                "ledger": str(runs / "ledger.jsonl"),
                "ledger_head_sha256": head,
                "failed_runs": [f.to_json() for f in failed],
                "undeclared_metrics": kept,
                "warnings": undeclared,
            }
        )
    else:
        _say(
            f"{summary.completed} runs completed, {summary.failed} failed, {summary.skipped} already complete "
            f"(of {summary.planned} planned); ledger {runs / 'ledger.jsonl'}\nledger head sha256 {head}"
        )
    _say_sweep(failed, undeclared, args.json)
    return EXIT_OK if summary.failed == 0 else EXIT_RUNS_FAILED


def _sweep(runs: Path, appended: int) -> tuple[str | None, list[FailedRun], dict[str, Any], list[str]]:
    """Of the ``appended`` records this sweep wrote (the ledger's last: one writer holds the folder):
    the ledger's head, the failed runs in words, run id -> the undeclared metrics it kept
    (``collect.ledger.failed_runs``), and the warnings naming them."""
    from collect.api import read_ledger  # lazy: pydantic
    from collect.ledger.failed_runs import failed_runs, undeclared_metrics, undeclared_words  # lazy: startup
    from collect.ledger.store import verify_chain  # lazy: pydantic

    if not (runs / "ledger.jsonl").exists():
        return None, [], {}, []
    ledger = read_ledger(runs)
    mine = ledger.records[max(0, len(ledger.records) - appended) :] if appended > 0 else []
    kept = {r.run_id: values for r in mine if (values := undeclared_metrics(r))}
    return verify_chain(ledger, check_traces=False).head, failed_runs(mine), kept, undeclared_words(mine)


def _say_sweep(failed: list[FailedRun], undeclared: list[str], as_json: bool) -> None:
    """After the summary: each failed run (why, its stderr's last lines; not with --json, which lists
    them), then on stderr each undeclared-metrics warning."""
    from collect.ledger.failed_runs import failed_run_lines  # lazy: startup

    if failed and not as_json:
        _say(
            f"failed run{'s' if len(failed) != 1 else ''} (the ledger keeps each whole error; a re-run with "
            "--resume retries them):"
        )
        for line in failed_run_lines(failed, more="the ledger and 'gates evaluate' list every one"):
            _say(f"  {line}")
    for warning in undeclared:
        _say(textwrap.fill(f"collect run: warning: {warning}", 100), file=sys.stderr)


def _monitored(lock_path: str) -> bool:
    from prereg.api import load_lock  # lazy: pydantic

    return load_lock(lock_path).plan.monitoring is not None


def _run_monitored(args: argparse.Namespace, runs: Path, talk: bool) -> int:
    """A plan with ``monitoring:``: look by look, evaluating and recording each look (``gates.monitor``)."""
    from gates.monitor import run_monitored  # lazy: pydantic

    def say(line: str) -> None:
        if talk:
            _say(f"collect run: {line}", file=sys.stderr, flush=True)

    say("a monitored plan: running the strata in their frozen order, evaluating and recording each planned look")
    try:
        result = run_monitored(args.lock, runs, args.jobs, args.executor, None, say, address=args.address)
    except KeyboardInterrupt:
        _say(
            f"collect: interrupted; {_kept_runs(args.lock, runs)}; every look decided so far is recorded in "
            f"{runs / 'looks.jsonl'}\ncontinue with: collect run {args.lock} --out {runs} --resume",
            file=sys.stderr,
        )
        return EXIT_INTERRUPTED
    head, failed, kept, undeclared = _sweep(runs, result.completed + result.failed)
    if args.json:
        emit_json(
            {
                "ok": result.failed == 0,
                "planned": result.planned,
                "completed": result.completed,
                "failed": result.failed,
                "ledger": str(runs / "ledger.jsonl"),
                "ledger_head_sha256": head,
                "monitoring": result.to_json(),
                "failed_runs": [f.to_json() for f in failed],
                "undeclared_metrics": kept,
                "warnings": undeclared,
            }
        )
    else:
        _say(
            f"{result.sentence()}\n{result.completed} runs completed, {result.failed} failed; ledger "
            f"{runs / 'ledger.jsonl'}, looks {runs / 'looks.jsonl'}\nledger head sha256 {head}"
        )
    _say_sweep(failed, undeclared, args.json)
    return EXIT_OK if result.failed == 0 else EXIT_RUNS_FAILED


def _kept_runs(lock_path: str, runs: Path) -> str:
    """How many complete runs of this plan the ledger holds after an interruption, in words."""
    from collect.api import read_ledger  # lazy: pydantic
    from prereg.api import load_lock  # lazy: pydantic

    try:
        plan_sha256 = load_lock(lock_path).plan_sha256
        ledger = read_ledger(runs)
    except Exception as err:  # noqa: BLE001 - a second interrupt or damage: say so, never a traceback
        return f"the ledger could not be read back ({type(err).__name__}); nothing written was removed"
    kept = sum(1 for r in ledger.records if r.status == "complete" and r.prereg_sha256 == plan_sha256)
    return (
        f"{kept} complete run{'s' if kept != 1 else ''} of this plan are kept in {runs / 'ledger.jsonl'} "
        "(runs in flight were not recorded and will run again)"
    )


def _progress(on_tty: bool, talk: bool, jobs: int, executor: str) -> tuple[Any, Any]:
    """What ``collect run`` shows while it works: (update(done, total), finish()).

    The engine calls ``update(already_complete, planned)`` once before any run starts, then after
    each run. The first call prints what is planned (when ``talk``); on a TTY a rich progress bar
    follows, otherwise nothing more until the summary. A plan refused before any run leaves no bar.
    """
    bar: Any = None
    task: Any = None
    started: list[bool] = []

    def update(done: int, total: int) -> None:
        nonlocal bar, task
        if not started:
            started.append(True)
            if talk:
                left = total - done
                _say(
                    f"collect run: {total} runs planned, {done} already complete; running {left} "
                    f"with {jobs} job{'s' if jobs != 1 else ''} ({executor} executor)",
                    file=sys.stderr,
                    flush=True,
                )
            if on_tty:
                from rich.progress import (  # lazy: rich
                    BarColumn,
                    MofNCompleteColumn,
                    Progress,
                    TextColumn,
                    TimeElapsedColumn,
                    TimeRemainingColumn,
                )

                bar = Progress(
                    TextColumn("runs"),
                    BarColumn(),
                    MofNCompleteColumn(),
                    TimeElapsedColumn(),
                    TimeRemainingColumn(),
                    transient=True,
                )
                task = bar.add_task("runs", total=total, completed=done)
                bar.start()
            return
        if bar is not None:
            bar.update(task, completed=done, total=total)

    def finish() -> None:
        nonlocal bar
        if bar is not None:
            bar.stop()
            bar = None

    return (update if talk else None), finish


def cmd_probe(args: argparse.Namespace) -> int:
    """Poll a sensor and say, per signal, what it can resolve."""
    from collect.telemetry.recording.probe import (  # lazy: numpy
        probe_json,
        probe_recorded,
        probe_sensor,
        probe_sentence,
        recorded_sentence,
    )

    for name, value, low, high in (
        ("--poll-ms", args.poll_ms, 0.1, 60_000.0),
        ("--seconds", args.seconds, 0.01, 3600.0),
        ("--window-s", args.window_s, 0.001, 3600.0),
    ):
        if not low <= value <= high:  # also refuses nan and inf
            raise UserError(f"{name} must be a number from {low:g} to {high:g}, not {value:g}")
    if args.seconds * 1000 / args.poll_ms > MAX_POLLS:
        raise UserError(f"--seconds / --poll-ms asks for more than {MAX_POLLS:,} polls; poll less often or less long")
    if args.sensor.startswith("replay:"):  # a kept trace: re-analysed as recorded, not re-polled
        probes, recorded, note = probe_recorded(args.sensor.partition(":")[2], args.window_s, args.signal)
        if note:
            _say(f"collect: note: {note}", file=sys.stderr)
        if args.json:
            emit_json(probe_json(probes, args.sensor, None, recorded))
            return EXIT_OK
        _say(
            f"{args.sensor}: the kept trace re-analysed as recorded (no re-polling; --poll-ms and --seconds "
            "do not apply)"
        )
        for p in probes:
            print(probe_sentence(p))
        for signal, summary in recorded.items():
            print(recorded_sentence(signal, summary))
        return EXIT_OK
    probes = probe_sensor(args.sensor, args.poll_ms, args.seconds, args.window_s, args.signal)
    if args.json:
        emit_json(probe_json(probes, args.sensor, args.seconds))
    else:
        for p in probes:
            print(probe_sentence(p))
    return EXIT_OK


def _log_options(args: argparse.Namespace) -> Any:
    """The ``LogOptions`` the command line gives (``collect.telemetry.logs.options.options_from``:
    a ``LogError``, exit 2, for a value no log could be converted with, or ``--gpu`` with ``--gpus all``)."""
    from collect.telemetry.logs.options import options_from  # lazy: numpy

    return options_from({dest: getattr(args, dest) for dest in args.log_options})


def _gap_note(trace: Any) -> str | None:
    """The gaps of the trace's energy or power signal (``collect.telemetry.logs.gaps``), if any."""
    from collect.telemetry.logs.gaps import gap_note  # lazy: numpy

    signal = next(
        (s for s in ("energy_counter", "power_average", "power_usage", "power_instant") if s in trace.signals), None
    )
    return gap_note(trace, signal) if signal is not None else None


def cmd_telemetry(args: argparse.Namespace) -> int:
    """Convert a power log another tool wrote into a telemetry trace (``collect.telemetry.logs``)."""
    from collect.importing.outputs import check_trace_outputs  # lazy: startup
    from collect.telemetry.logs.formats import convert_to_trace, default_trace_base  # lazy: numpy
    from collect.telemetry.recording.probe import probe_trace, recorded_sentence, recorded_summaries  # lazy: numpy

    options = _log_options(args)
    check_trace_outputs(args.output if args.output else default_trace_base(Path(args.log)))  # before anything is read
    notes: list[str] = []
    trace, files = convert_to_trace(args.log, args.output, args.format, options, notes)
    gap = _gap_note(trace)
    if gap is not None:
        notes.append(f"{args.log} {gap}")
    for note in notes:
        _say(f"collect telemetry: note: {note}", file=sys.stderr)
    summaries = recorded_summaries(trace)
    if args.json:
        emit_json(
            {
                "ok": True,
                "sensor": trace.sensor,
                "trace": str(files[-1]),
                "files": [str(f) for f in files],
                "signals": {
                    p.signal: {"updates": p.updates, "effective_period_ms": p.effective_period_ms, "unit": p.unit}
                    for p in probe_trace(trace, {})
                },
                "recorded": summaries,
                "notes": notes,
            }
        )
        return EXIT_OK
    polls = int(trace.poll_ns.size)
    _say(f"{args.log}: {polls} polls of {', '.join(trace.signals)} ({trace.sensor}, measured) -> {files[-1]}")
    for signal, summary in summaries.items():
        print(recorded_sentence(signal, summary))
    _say(f"re-analyse it with: collect probe --sensor replay:{files[-1]}")
    return EXIT_OK


def _add_log_options(p: argparse.ArgumentParser) -> None:
    """The power-log options (``LogOptions``) on a subcommand, their dests in ``args.log_options``;
    each format takes only those it can use (``collect.telemetry.logs.formats.check_options``)."""
    g = p.add_argument_group(
        "power-log options (what a log does not say about itself; each format takes only the "
        "ones it can use, others are refused)"
    )
    dests: list[str] = []

    def add(*names: str, **kwargs: Any) -> None:
        dests.append(g.add_argument(*names, **kwargs).dest)

    add("--gpu", type=int, help="nvidia-smi, dcgm, zeus: the GPU of a multi-GPU log (default: the log must hold one)")
    add(
        "--gpus",
        choices=("all",),
        help="sum every GPU of a multi-GPU log into one device (a data-parallel run); "
        "--power-range-w is then per GPU. codecarbon: its log already sums them",
    )
    add(
        "--poll-ms",
        type=float,
        help="nvidia-smi, dcgm: the interval the logger was asked for, ms (default: the "
        "median interval between polls; dcgm: dmon's -d, default 1000, which also places its samples)",
    )
    add(
        "--power-window-ms",
        type=float,
        help="nvidia-smi, dcgm: averaging window of driver-averaged power "
        "(power.draw, DCGM POWER), ms (default 1000, NVML's 1 s average on Ampere and newer; 0 for older GPUs)",
    )
    add(
        "--power-model",
        choices=("average", "part-time"),
        help="nvidia-smi, dcgm: how driver-averaged power covers "
        "time: average (a true average over its window, NVML's documentation; default) or part-time (each average "
        "covers part of its period, Yang et al., SC24: energy bounded by the power range alone)",
    )
    add(
        "--power-range-w",
        metavar="MIN,MAX",
        help="the device's physical power range, W (default 0,2000); per GPU with --gpus all",
    )
    add(
        "--counter-period-ms",
        type=float,
        help="the energy counter's longest interval between updates, ms (e.g. as "
        "'collect probe' measured it on the same GPU model; default: per GPU generation)",
    )
    add(
        "--query-fields",
        metavar="A,B,C",
        help="nvidia-smi: the --query-gpu fields of a log written without a "
        "header (--format=csv,noheader[,nounits]), in order; a field may carry its unit in brackets ('energy [mJ]')",
    )
    add("--window", help="zeus: the one measurement-window name to convert")
    add(
        "--max-gap-ms",
        type=float,
        help="zeus: the largest gap between windows read as contiguous, ms (default 1; "
        "a longer gap's energy is unknown)",
    )
    p.set_defaults(log_options=tuple(dests))


def build_parser() -> argparse.ArgumentParser:
    """The ``collect`` argument parser."""
    parser = ArgumentParser(
        prog="collect",
        description="Produce runs for a frozen plan, or import runs made elsewhere, into an append-only ledger.",
        epilog="exit codes: 0 ok, 1 some runs failed (recorded as failed) or the Ray cluster was lost mid-sweep (finished runs kept; re-run with --resume), 2 bad input or usage, 3 the lock does not "
        "verify, 4 internal error, 130 interrupted (finished runs are kept; re-run with --resume)",
    )
    sub = parser.add_subparsers(title="subcommands", metavar="COMMAND")
    p = sub.add_parser(
        "import",
        help="bring runs made elsewhere into a ledger under a lock: a CSV / JSONL / Parquet table, or an "
        "experiment tracker's runs (mlflow:URI, tensorboard:DIR, wandb:DIR, raytune:DIR)",
    )
    p.add_argument(
        "file",
        metavar="SOURCE",
        help="the table (.csv, .csv.gz, .jsonl, .parquet), or a tracker: mlflow:URI (sqlite:///mlflow.db, an "
        "mlruns/ folder, http(s)://server), tensorboard:DIR, wandb:DIR (offline run folders), raytune:DIR",
    )
    p.add_argument("--lock", required=True, help="the frozen plan (*.lock.json)")
    p.add_argument("--out", required=True, metavar="RUNS", help="the runs folder (ledger.jsonl is appended there)")
    p.add_argument(
        "--telemetry",
        metavar="DIR",
        help="a folder of one power log per run (<run_id>.nvidia-smi.csv, "
        ".dcgm.txt, .zeus.csv, .emissions.csv): fills each row's telemetry columns, kept as its trace",
    )
    p.add_argument(
        "--telemetry-format",
        choices=("nvidia-smi", "dcgm", "zeus", "codecarbon"),
        help="the logs' format (default: recognised from each file's suffix)",
    )
    p.add_argument("--json", action="store_true", help="machine-readable output on stdout")
    _add_log_options(p)
    add_tracker_options(p)
    p.set_defaults(handler=cmd_import)
    p = sub.add_parser(
        "plan",
        help="list every planned run: run id, stratum, arm, replicate, seed, params",
        description="Every run of a frozen plan as 'collect run' would execute it: the run id it "
        "would record, the stratum's levels, the arm, the replicate, the seed it passes (derived from "
        "stratum and replicate, never the arm) and the merged parameters (JSON in CSV). For runs made "
        "elsewhere: 'collect import' checks a seed column against these seeds.",
    )
    p.add_argument("lock", help="the frozen plan (*.lock.json)")
    p.add_argument("--format", choices=("csv", "json"), default="csv", help="csv (default) or json")
    p.add_argument(
        "--tracker",
        choices=("mlflow", "wandb", "tensorboard", "raytune"),
        help="print, per planned run, the tags to set in that tracker and the line that sets them "
        "(mlflow.set_tags, wandb.config.update, a TensorBoard run folder, a Ray Tune trial's config)",
    )
    p.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        help="write the listing to FILE (default: stdout; never over "
        "a ledger, lock, plan, trace, evaluation, link or device, nor anything in a runs folder but an "
        "earlier listing)",
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="replace an existing -o FILE the toolkit did not write (outside a runs folder only)",
    )
    p.set_defaults(handler=cmd_plan)
    p = sub.add_parser("run", help="execute a frozen plan with its built-in collector into RUNS/ledger.jsonl")
    p.add_argument("lock", help="the frozen plan (*.lock.json)")
    p.add_argument("--out", required=True, metavar="RUNS", help="the runs folder (ledger.jsonl, traces/)")
    p.add_argument("--jobs", type=int, default=1, help="parallel runs (a local process pool; default 1)")
    p.add_argument(
        "--executor",
        choices=("local", "ray"),
        default="local",
        help="local (default) or ray (a cluster: --address or RAY_ADDRESS; else a local Ray instance)",
    )
    p.add_argument(
        "--address",
        metavar="ADDR",
        help="with --executor ray: the Ray cluster to join (host:port of "
        "its head, as 'ray start --head' prints; default RAY_ADDRESS); docs/cluster.md",
    )
    p.add_argument(
        "--resume",
        action="store_true",
        help="skip runs already complete (a plain re-run does the same; kept for clarity)",
    )
    p.add_argument("--json", action="store_true", help="machine-readable summary on stdout")
    p.set_defaults(handler=cmd_run)
    add_try_parser(sub)
    p = sub.add_parser(
        "telemetry",
        help="convert a power log (nvidia-smi, dcgmi dmon, Zeus, CodeCarbon) to a trace",
        description="Convert a power log another tool wrote into this toolkit's telemetry trace "
        "(TRACE.meta.json + polls), so 'collect probe --sensor replay:TRACE', the energy summaries "
        "and the phase energies work on it. Unavailable cells ([N/A]) stay unavailable, never 0; "
        "the update period and energy bounds are measured from the log.",
    )
    p.add_argument("log", help="the log file")
    p.add_argument(
        "--format",
        choices=("nvidia-smi", "dcgm", "zeus", "codecarbon"),
        help="the tool that wrote it (default: recognised from the file name)",
    )
    p.add_argument(
        "-o",
        "--output",
        metavar="TRACE",
        help="the trace's base name (default: beside the log, "
        "LOG's suffix replaced by .telemetry); an existing trace is never written over",
    )
    p.add_argument("--json", action="store_true", help="machine-readable output on stdout")
    _add_log_options(p)
    p.set_defaults(handler=cmd_telemetry)
    p = sub.add_parser("probe", help="poll a sensor: effective update period and the energy it can resolve")
    p.add_argument("--sensor", default="nvml", help="nvml[:index=N], sim:key=value,... or replay:PATH (default nvml)")
    p.add_argument("--poll-ms", type=float, default=20.0, help="requested poll interval, ms (default 20)")
    p.add_argument("--seconds", type=float, default=5.0, help="how long to poll (default 5)")
    p.add_argument("--window-s", type=float, default=1.0, help="window for the resolvable-energy figure (default 1)")
    p.add_argument("--signal", action="append", help="a signal to probe (repeatable; default: all)")
    p.add_argument("--json", action="store_true", help="machine-readable output on stdout")
    p.set_defaults(handler=cmd_probe)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``collect``."""
    return run_main("collect", build_parser, argv)


if __name__ == "__main__":
    raise SystemExit(main())
