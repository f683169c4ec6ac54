"""The ``prereg`` console script: init, validate, freeze, verify, amend, show, power, schema.

More in ``docs/internals.md``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

TYPE_CHECKING = False  # typing stays unloaded at --help (mypy treats this name as true)
if TYPE_CHECKING:
    from typing import Any

from prereg._version import __version__
from prereg.errors import InputError
from prereg_toolkit_cli.kit import EXIT_INTEGRITY, EXIT_OK, ArgumentParser, UserError, emit_json, run_main, safe


def _load(path: str) -> Any:
    """The loaded plan; a collector it names that is not installed here is refused (``PluginError``, exit 2)."""
    from collect.plugins import COLLECTORS  # lazy: startup
    from prereg.plan import load_plan  # lazy: pydantic

    loaded = load_plan(path)
    experiment = loaded.plan.experiment
    if experiment is not None:
        COLLECTORS.check_findable(experiment.collector)  # no import: a torch collector stays unloaded
    return loaded


def _warnings(loaded: Any) -> list[str]:
    """Each warning as 'file:line:col: field: message' (printed on stderr; the plan is accepted)."""
    out = []
    for w in loaded.warnings:
        where = loaded.source + (f":{w.line}:{w.column}" if w.line is not None else "")
        out.append(f"warning: {where}: {w.field}: {w.message}")
    return out


def _collector_check(loaded: Any, doing: str) -> list[str]:
    """The collector's own checks of the plan (``collect.engine.precheck.plan_problems``), before anything is
    locked: every problem refuses the plan at once (``InputError``, exit 2, ``details`` listing them);
    the machine-dependent ones (a sensor this machine cannot open) are printed as warnings on stderr and
    returned."""
    from collect.engine.precheck import plan_problems  # lazy: pydantic (and the collector's modules)

    check = plan_problems(loaded.plan)
    name = loaded.plan.experiment.collector if loaded.plan.experiment is not None else ""
    warned = [f"warning: {loaded.source}: experiment: {w}" for w in check.warnings]
    for line in warned:
        print(safe(line), file=sys.stderr)
    if check.errors:
        n = len(check.errors)
        raise InputError(
            f"{loaded.source}: experiment: collector {name} would refuse this plan at collect run "
            f"({n} problem{'s' if n != 1 else ''}; {doing}):\n" + "\n".join(f"- {e}" for e in check.errors),
            details=[{"field": "experiment", "line": None, "column": None, "message": e} for e in check.errors],
        )
    return check.warnings


def _summary(loaded: Any) -> str:
    plan = loaded.plan
    n_strata = len(plan.strata.enumerate())
    primary = sum(g.role == "primary" for g in plan.gates)
    return (
        f"{plan.study}: {len(plan.arms)} arms, {n_strata} strata x {plan.strata.replicates} replicate(s), "
        f"{len(plan.metrics)} metrics, {len(plan.gates)} gates ({primary} primary), "
        f"{len(plan.invalidators)} invalidators"
    )


def cmd_init(args: argparse.Namespace) -> int:
    """Write the commented starter plan."""
    target = Path(args.path)
    if target.exists() or target.is_symlink():
        raise UserError(f"{target}: already exists; choose another path (nothing was overwritten)")
    if not target.parent.is_dir():
        raise UserError(f"{target.parent}: no such folder")
    from importlib.resources import files  # lazy: startup

    from prereg.fileio import write_output  # lazy: startup

    text = files("prereg").joinpath("templates/starter.yaml").read_bytes()
    write_output(target, text)  # the output rule: created new (link(2)), never over what appeared meanwhile
    if args.json:
        emit_json({"ok": True, "path": str(target)})
    else:
        print(f"wrote {target}: edit it, then 'prereg validate {target}' and 'prereg freeze {target}'")
    return EXIT_OK


def cmd_validate(args: argparse.Namespace) -> int:
    """Validate a plan and print a one-line summary."""
    from gates.meter_plan import meter_lines  # lazy: pydantic

    loaded = _load(args.file)
    for line in _warnings(loaded):
        print(line, file=sys.stderr)
    collector_warnings = _collector_check(loaded, "the plan is not valid")
    meters = meter_lines(loaded.plan)
    if args.json:
        emit_json(
            {
                "ok": True,
                "file": args.file,
                "study": loaded.plan.study,
                "plan_sha256": loaded.plan_sha256,
                "summary": _summary(loaded),
                "warnings": [w.to_json() for w in loaded.warnings],
                "collector_warnings": collector_warnings,
                "meter": meters,
            }
        )
    else:
        print(f"{args.file}: valid prereg/v1 plan. {_summary(loaded)}")
        for line in meters:
            print(line)
    return EXIT_OK


def cmd_freeze(args: argparse.Namespace) -> int:
    """Validate, canonicalise, hash and lock a plan (``prereg.api.freeze``: a changed plan is refused)."""
    from prereg.api import freeze  # lazy: pydantic
    from prereg.lock import default_lock_path  # lazy: pydantic

    loaded = _load(args.file)
    for line in _warnings(loaded):
        print(line, file=sys.stderr)
    collector_warnings = _collector_check(loaded, "nothing was frozen")
    existed = (Path(args.output) if args.output else default_lock_path(args.file)).exists()
    lock = freeze(args.file, args.output, loaded=loaded)
    status = "already frozen (unchanged)" if existed else "frozen"
    if args.json:
        emit_json(
            {
                "ok": True,
                "status": status,
                "lock": str(lock.path),
                "plan_sha256": loaded.plan_sha256,
                "yaml_sha256": loaded.yaml_sha256,
                "frozen_at": lock.frozen_at,
                "seal": lock.seal,
                "collector_warnings": collector_warnings,
            }
        )
    else:
        print(f"{status}: {lock.path}")
        print(f"plan sha256 {loaded.plan_sha256}")
        print(f"seal {lock.seal} (publish it now: it pins this freeze in time)")
    return EXIT_OK


def cmd_verify(args: argparse.Namespace) -> int:
    """Check a lock's hashes and chain, and that its YAML (given or beside it) still matches."""
    from prereg.api import verify  # lazy: pydantic

    report = verify(args.lock, args.yaml or None, args.published)
    if args.json:
        emit_json({**report.to_json(), "lock": args.lock})
    elif report.ok:
        extra = f" and {report.yaml_checked} matches it" if report.yaml_checked else " (no YAML beside it to check)"
        print(f"{args.lock}: intact{extra}; plan sha256 {report.plan_sha256}")
        if report.genesis_plan_sha256 != report.plan_sha256:
            print(f"first frozen as {report.genesis_plan_sha256} (compare with the hash you published)")
        print(
            f"seal {report.seal}"
            + ("" if args.published else " (compare with the seal published at freeze: --published SEAL)")
        )
        for note in report.notes:
            print(f"note: {safe(note)}")
    else:
        print(f"{args.lock}: INTEGRITY FAILURE", file=sys.stderr)
        for diff in report.differences:
            print(f"- {safe(diff)}", file=sys.stderr)
    return EXIT_OK if report.ok else EXIT_INTEGRITY


def cmd_amend(args: argparse.Namespace) -> int:
    """Record a changed plan as a new version of its lock (``prereg.api.amend``: a broken lock is refused)."""
    from prereg.api import amend  # lazy: pydantic

    lock = amend(args.file, args.lock, args.reason, args.runs)
    entry = lock.data["amendments"][-1]
    if args.json:
        emit_json(
            {
                "ok": True,
                "lock": str(lock.path),
                **{
                    k: entry[k]
                    for k in (
                        "version",
                        "parent_plan_sha256",
                        "plan_sha256",
                        "post_data",
                        "runs_checked",
                        "changed",
                        "amended_at",
                    )
                },
                "seal": lock.seal,
            }
        )
    else:
        flag = " POST-DATA" if entry["post_data"] else ""
        print(f"amended{flag}: {lock.path} is now version {entry['version']}")
        print(f"plan sha256 {entry['parent_plan_sha256'][:12]} -> {entry['plan_sha256']}")
        print(f"seal {lock.seal} (publish it now: it pins this amendment in time)")
        print(f"changed: {safe(', '.join(entry['changed']))}")
        if not entry["runs_checked"]:
            print("note: no --runs folder given, so whether data already existed was not checked")
    return EXIT_OK


def cmd_show(args: argparse.Namespace) -> int:
    """Render a lock for a reviewer (or print it as JSON)."""
    from prereg.lock import read_lock, renderable, verify_lock  # lazy: pydantic

    lock = read_lock(args.lock)
    report = verify_lock(lock)
    if not renderable(lock):
        if args.json:
            emit_json({"lock": lock, "verification": report.to_json(), "sentences": None})
        else:
            print(f"{args.lock}: INTEGRITY FAILURE; the plan is too damaged to show", file=sys.stderr)
            for diff in report.differences:
                print(f"- {safe(diff)}", file=sys.stderr)
        return EXIT_INTEGRITY
    from prereg.plan import canonical_plan, plan_from_canonical  # lazy: pydantic

    # Display the plan as the schema reads it (unset optional fields dropped), never raw JSON.
    display = {**lock, "plan": canonical_plan(plan_from_canonical(lock["plan"]))}
    if args.json:
        from reports.terminal.plan import plan_sentences  # lazy: rich

        emit_json({"lock": lock, "verification": report.to_json(), "sentences": plan_sentences(display)})
        return EXIT_OK if report.ok else EXIT_INTEGRITY
    from reports.terminal.console import make_console  # lazy: rich
    from reports.terminal.plan import render_lock  # lazy: rich

    make_console().print(render_lock(display, report))
    return EXIT_OK if report.ok else EXIT_INTEGRITY


def cmd_schema(args: argparse.Namespace) -> int:
    """Print the JSON Schema of prereg/v1."""
    from prereg.schema import Plan  # lazy: pydantic

    schema = Plan.model_json_schema(by_alias=True)
    schema = {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": "prereg/v1", **schema}
    emit_json(schema)
    return EXIT_OK


def _assumptions(items: list[str]) -> dict[str, float]:
    """``GATE=VALUE`` pairs (reported scale: a ratio for ratio contrasts)."""
    out: dict[str, float] = {}
    for item in items:
        gate, sep, value = item.partition("=")
        try:
            out[gate.strip()] = float(value) if sep else float("nan")
        except ValueError:
            raise UserError(f"--assume {item!r}: expected GATE=NUMBER (e.g. --assume g1=0.0)") from None
        if not sep or not gate.strip() or out[gate.strip()] != out[gate.strip()]:
            raise UserError(f"--assume {item!r}: expected GATE=NUMBER (e.g. --assume g1=0.0)")
    return out


def cmd_power(args: argparse.Namespace) -> int:
    """Blocks needed per gate from a pilot's paired contrasts (``gates.power.plan_power``)."""
    from gates.power import plan_power  # lazy: numpy

    report = plan_power(
        args.file,
        args.pilot,
        target_power=args.power,
        assume=_assumptions(args.assume or []),
        sims=args.sims,
        seed=args.seed,
    )
    if args.json:
        emit_json(report.to_json())
        return EXIT_OK
    from reports.terminal.console import make_console  # lazy: rich
    from reports.terminal.power import render_power  # lazy: rich

    make_console().print(render_power(report))
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    """The ``prereg`` argument parser."""
    parser = ArgumentParser(
        prog="prereg",
        description="Freeze a preregistration before any run: validate, canonicalise, hash, lock, amend.",
        epilog="exit codes: 0 ok, 2 bad input or usage, 3 integrity failure, 4 internal error",
    )

    parser.add_argument("--version", action="version", version=f"prereg {__version__}")
    sub = parser.add_subparsers(title="subcommands", metavar="COMMAND")

    def add(name: str, handler: Any, help_text: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_text, description=help_text)
        p.add_argument("--json", action="store_true", help="machine-readable output on stdout")
        p.set_defaults(handler=handler)
        return p

    p = add("init", cmd_init, "write a commented starter plan that validates")
    p.add_argument("path", nargs="?", default="study.yaml", help="where to write it (default: study.yaml)")
    p = add("validate", cmd_validate, "check a plan; one-line summary, or every problem with its line")
    p.add_argument("file", help="the plan (YAML)")
    p = add("freeze", cmd_freeze, "lock a plan: canonical form, SHA-256, read-only <stem>.lock.json")
    p.add_argument("file", help="the plan (YAML)")
    p.add_argument("-o", "--output", metavar="LOCK", help="lock path (default: <stem>.lock.json beside the YAML)")
    p = add("verify", cmd_verify, "check a lock's hashes and amendment chain, and its YAML if present")
    p.add_argument("lock", help="the lock file")
    p.add_argument("--yaml", metavar="FILE", help="the plan YAML to compare (default: <stem>.yaml beside the lock)")
    p.add_argument(
        "--published",
        metavar="SEAL",
        help="the seal published at freeze (or amendment): the lock must have it (exit 3 if not)",
    )
    p = add("amend", cmd_amend, "record a changed plan as a new lock version with its reason")
    p.add_argument("file", help="the changed plan (YAML)")
    p.add_argument("--reason", required=True, metavar="TEXT", help="why the plan changes")
    p.add_argument("--runs", metavar="DIR", help="the runs folder: records whether data already existed")
    p.add_argument("--lock", metavar="LOCK", help="the lock to amend (default: <stem>.lock.json beside the YAML)")
    p = add("show", cmd_show, "render a lock for a reviewer: gates as sentences, invalidators, amendments")
    p.add_argument("lock", help="the lock file")
    p = add("power", cmd_power, "blocks each gate needs for a target power, planned from a pilot's paired contrasts")
    p.add_argument("file", help="the plan being designed (YAML, or its lock)")
    p.add_argument(
        "--pilot", required=True, metavar="RUNS", help="the pilot's runs folder (collected under its own plan)"
    )
    p.add_argument("--power", type=float, default=0.8, help="target power (default 0.8)")
    p.add_argument(
        "--assume",
        action="append",
        metavar="GATE=VALUE",
        help="the true effect to plan for (reported scale; default: no difference when the rule allows it)",
    )
    p.add_argument(
        "--sims", type=int, default=1000, help="simulated studies for exact/bootstrap methods (default 1000)"
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the simulations (default 0)")
    p = add("schema", cmd_schema, "print the JSON Schema of prereg/v1 (for editors' YAML language servers)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``prereg``."""
    return run_main("prereg", build_parser, argv)


if __name__ == "__main__":
    raise SystemExit(main())
