"""``collect import SOURCE`` when SOURCE names an experiment tracker, and ``collect plan --tracker``.

Argparse options + one call of :func:`collect.api.import_tracker` + printing (docs/trackers.md).
"""

from __future__ import annotations

import argparse
import sys
import textwrap
import warnings

from prereg_toolkit_cli.kit import EXIT_OK, UserError, emit_json, safe

TRACKER_PREFIXES = ("mlflow:", "tensorboard:", "wandb:", "raytune:")


def is_tracker_source(text: str) -> bool:
    """Whether ``collect import``'s SOURCE names a tracker rather than a table file."""
    return text.startswith(TRACKER_PREFIXES)


def add_tracker_options(p: argparse.ArgumentParser) -> None:
    """``collect import``'s options for a tracker source."""
    p.add_argument("--experiment", help="mlflow: the experiment (name or id) to read (default: every experiment)")
    p.add_argument(
        "--filter",
        metavar="EXPR",
        help="mlflow: MLflow's search expression narrowing the runs read, e.g. \"params.dataset = 'owt'\"",
    )
    p.add_argument(
        "--match",
        action="append",
        metavar="COLUMN=FIELD",
        help="for runs made before the plan (no prereg.run_id tag): where each run's arm, stratum levels and "
        "replicate or seed are, e.g. --match seed=params.seed --match arm=tags.arm (FIELD: params.NAME, "
        "tags.NAME, name, run_id); repeatable",
    )


def cmd_import_tracker(args: argparse.Namespace) -> int:
    """Import a tracker's runs (``collect.api.import_tracker``) and say what was imported and left out."""
    from collect.api import import_tracker, ledger_head  # lazy: pydantic
    from collect.importing.time_order import EarlyRunsWarning  # lazy: pydantic

    if args.telemetry is not None or args.telemetry_format is not None:
        raise UserError("--telemetry: the power logs go with a table of runs, not a tracker source")
    from pathlib import Path  # lazy: startup

    runs = Path(args.out)
    skipped: list[str] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", EarlyRunsWarning)
        done = import_tracker(
            args.lock, args.file, runs, skipped, experiment=args.experiment, filter=args.filter, match=args.match
        )
    for warning in caught:
        if issubclass(warning.category, EarlyRunsWarning):
            print(safe(textwrap.fill(f"collect import: warning: {warning.message}", 100)), file=sys.stderr)
        else:
            warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno)
    head = done.records[-1].record_sha256 if done.records else ledger_head(runs)
    left = [r.label() for r in done.unmatched]
    if args.json:
        emit_json(
            {
                "ok": True,
                "source": args.file,
                "read": done.read,
                "imported": len(done.records),
                "already_present": len(skipped),
                "not_matched": left,
                "ledger": str(runs / "ledger.jsonl"),
                "ledger_head_sha256": head,
                "run_ids": [r.run_id for r in done.records],
            }
        )
        return EXIT_OK
    already = f" ({len(skipped)} already in the ledger, skipped)" if skipped else ""
    print(
        safe(
            f"read {done.read} runs from {args.file}; imported {len(done.records)} into {runs / 'ledger.jsonl'}{already}"
        )
    )
    if left:
        shown = ", ".join(left[:5]) + (f" and {len(left) - 5} more" if len(left) > 5 else "")
        print(safe(f"not imported (no prereg.run_id tag, or no --match field): {len(left)} runs: {shown}"))
    print(f"ledger head sha256 {head}")
    return EXIT_OK


def print_tracker_snippets(lock: str, tracker: str) -> int:
    """``collect plan LOCK --tracker NAME``: per planned run, its tags and the line that sets them."""
    from collect.importing.planned import tracker_snippets  # lazy: pydantic
    from prereg.api import load_lock  # lazy: pydantic

    verified = load_lock(lock)
    sys.stdout.write(tracker_snippets(verified.plan, verified.plan_sha256, tracker))
    return EXIT_OK


__all__ = ["add_tracker_options", "cmd_import_tracker", "is_tracker_source", "print_tracker_snippets"]
