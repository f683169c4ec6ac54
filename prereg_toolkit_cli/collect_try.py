"""``collect try``: one cell of a plan (or lock) run into a scratch folder, before the freeze.

More in ``docs/internals.md``.
"""

from __future__ import annotations

import argparse
import sys

TYPE_CHECKING = False  # typing stays unloaded at --help (mypy treats this name as true)
if TYPE_CHECKING:
    from typing import Any

from prereg_toolkit_cli.kit import EXIT_OK, emit_json, safe

EXIT_ARM_FAILED = 1


def _say(text: str, **kwargs: Any) -> None:
    """``print`` with terminal control characters escaped (names, values and stderr lines the user's program wrote)."""
    print(safe(text), **kwargs)


def _value(value: Any) -> str:
    return f"{value:.6g}" if isinstance(value, float) else str(value)


def cmd_try(args: argparse.Namespace) -> int:
    """Run one cell (``collect.engine.trial.try_cell``) and report each arm: ok with its metrics, or failed with why."""
    from collect.engine.trial import parse_assignments, parse_value, try_cell  # lazy: pydantic

    selector = parse_assignments(args.stratum or [], "--stratum")
    sets = {k: parse_value(v) for k, v in parse_assignments(args.set or [], "--set").items()}
    talk = not args.json
    if talk:
        _say(f"collect try: checking {args.target} and running one cell ...", file=sys.stderr, flush=True)
    result = try_cell(args.target, selector, args.out, sets)
    if args.json:
        emit_json(result.to_json())
        return EXIT_OK if result.ok else EXIT_ARM_FAILED
    cell = ", ".join(f"{k}={_value(v)}" for k, v in result.stratum.items())
    frozen = "a lock" if result.source == "lock" else "a plan, not frozen"
    _say(
        f"tried {args.target} ({frozen}; plan sha256 {result.plan_sha256[:12]}): stratum {cell}, replicate 0, "
        f"{len(result.arms)} arm(s)"
    )
    _say(
        f"scratch folder {result.folder} (a try folder: never a study's runs folder; its records carry the try "
        f"hash {result.try_sha256[:12]}, not the plan's)"
    )
    if result.sets:
        _say(
            "set for this try only (over the plan's values): "
            + ", ".join(f"{k}={_value(v)}" for k, v in result.sets.items())
        )
    for arm in result.arms:
        took = f" in {arm.seconds:.1f} s" if arm.seconds is not None else ""
        if arm.status == "complete":
            metrics = ", ".join(f"{k}={_value(v)}" for k, v in arm.metrics.items()) or "no metrics"
            _say(f"arm {arm.arm}: ok{took}: {metrics}")
        else:
            _say(f"arm {arm.arm}: FAILED{took}: {arm.error}")
            for line in arm.stderr_tail:
                _say(f"  stderr | {line}")
    ok = sum(a.status == "complete" for a in result.arms)
    _say(
        f"{ok} of {len(result.arms)} arm(s) ok"
        + ("" if result.ok else f"; fix the harness and try again (--out {result.folder} keeps the tries together)")
    )
    return EXIT_OK if result.ok else EXIT_ARM_FAILED


def add_try_parser(subparsers: Any) -> None:
    """Add ``collect try`` to the ``collect`` parser's subcommands."""
    p = subparsers.add_parser(
        "try",
        help="run one cell of a plan (every arm, replicate 0) into a scratch folder, before the freeze",
        description="A smoke run: one stratum (the first, or the one --stratum selects), every arm, replicate 0, "
        "with the plan's collector, into a scratch folder that can never become the study's runs folder (it is "
        "marked, and its records carry a try hash instead of the plan's). Takes a plan YAML (not yet frozen) or "
        "a lock. Exit codes: 0 every arm ok, 1 an arm failed, 2 bad input, 3 a lock that does not verify.",
    )
    p.add_argument("target", metavar="LOCK_OR_PLAN", help="the plan (YAML) or its lock (*.lock.json)")
    p.add_argument(
        "--stratum",
        action="append",
        metavar="FACTOR=LEVEL",
        help="select the cell (repeatable; default: the first stratum)",
    )
    p.add_argument(
        "--set",
        action="append",
        metavar="KEY=VALUE",
        help="override a program parameter for this try only, e.g. --set steps=20 (numbers, true, false and "
        "null as such; anything else as text); printed with the result",
    )
    p.add_argument(
        "--out",
        metavar="SCRATCH",
        help="the scratch folder: a new path or an earlier try's folder (default: a fresh temporary folder, printed)",
    )
    p.add_argument("--json", action="store_true", help="machine-readable result on stdout")
    p.set_defaults(handler=cmd_try)
