"""``collect try``: one cell of a plan, run into a scratch folder that can never become a study's ledger.

A smoke run before the freeze (or before a long collection): one stratum (the first, or the one
selected), every arm, replicate 0, with the plan's collector and the engine's own pieces
(:func:`collect.engine.runner.run_plan` with ``only`` the cell's runs), so a broken harness, a typo
in ``argv`` or a program that writes no metrics is found in minutes, not after the freeze. It takes
a plan YAML (not yet frozen) or a lock. Program parameters may be overridden for the try
(``sets``: ``{"steps": 20}`` for a short run); the overrides win over the plan's defaults and its
arms' settings, and are reported with the result.

The scratch folder (a fresh temporary folder by default) is marked: it holds the try marker
(:mod:`collect.ledger.try_marker`), and its ledger's records carry a *try hash* (``prereg_sha256``: the
SHA-256 of the plan's hash, the overrides and a fresh nonce) that is no plan's hash, and no lock seal.
So ``collect run`` refuses to add a study's runs to it (one plan per runs folder), ``gates evaluate``
finds none of the plan's runs there, and ``refuse_try_folder`` (for callers that look for the marker)
refuses it outright (``TryFolder``, exit 3). Each try gets its own run ids (the nonce), so trying again
into the same folder runs the cell again; nothing of an earlier try is overwritten. Seeds are the
study's: a cell's runs get the seed its runs will get in the study (derived from the stratum and
replicate).
"""

from __future__ import annotations

import json
import math
import os
import re
import secrets
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from collect.engine.precheck import plan_problems, sensor_refusals
from collect.engine.runner import expand_plan, run_plan
from collect.ledger.failed_runs import failure_words
from collect.ledger.store import read_ledger
from collect.ledger.try_marker import TRY_MARKER, TryFolder, is_try_folder, refuse_try_folder
from prereg.api import load_lock
from prereg.errors import InputError
from prereg.jsoncodec import canonical_bytes
from prereg.plan import load_plan, sha256_hex
from prereg.schema import Plan

MARKER_FORMAT = "collect/try/v1"
STDERR_LINES = 5  # the last lines of a failed run's stderr reported
_INTEGER = re.compile(r"^-?[0-9]{1,18}$")
_NUMBER = re.compile(r"^-?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?$")
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


@dataclass(frozen=True)
class ArmOutcome:
    """One arm's run in a try: its status, metrics (complete) or reason and stderr's last lines (failed)."""

    arm: str
    run_id: str
    status: str  # complete | failed
    metrics: dict[str, Any] = field(default_factory=dict)
    error: str | None = (
        None  # the reason in words (collect.ledger.failed_runs.failure_words); the ledger keeps it whole
    )
    stderr_tail: list[str] = field(default_factory=list)
    seconds: float | None = None

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready description."""
        return {
            "arm": self.arm,
            "run_id": self.run_id,
            "status": self.status,
            "metrics": self.metrics,
            "error": self.error,
            "stderr_tail": self.stderr_tail,
            "seconds": self.seconds,
        }


@dataclass(frozen=True)
class TryResult:
    """What a try did: where, which cell, with which overrides, and each arm's outcome."""

    folder: Path
    source: str  # "plan" (a YAML, not frozen) or "lock"
    plan_sha256: str
    try_sha256: str  # the hash its records carry instead of the plan's
    stratum: dict[str, Any]
    sets: dict[str, Any]
    arms: list[ArmOutcome]

    @property
    def ok(self) -> bool:
        """Every arm of the cell completed."""
        return bool(self.arms) and all(a.status == "complete" for a in self.arms)

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready description."""
        return {
            "ok": self.ok,
            "folder": str(self.folder),
            "source": self.source,
            "plan_sha256": self.plan_sha256,
            "try_sha256": self.try_sha256,
            "stratum": self.stratum,
            "replicate": 0,
            "set": self.sets,
            "arms": [a.to_json() for a in self.arms],
        }


def load_target(path: str | os.PathLike[str]) -> tuple[Plan, str, str]:
    """``(plan, plan hash, "lock" | "plan")`` of a lock (``*.json``, verified: exit 3 if it does not) or a
    plan YAML (validated: exit 2 with every problem)."""
    if str(path).endswith(".json"):
        verified = load_lock(path)
        return verified.plan, verified.plan_sha256, "lock"
    loaded = load_plan(path)
    return loaded.plan, loaded.plan_sha256, "plan"


def _level_text(level: Any) -> str:
    """A factor level as written on the command line: a string as it is, anything else as JSON."""
    return level if isinstance(level, str) else json.dumps(level)


def select_stratum(plan: Plan, selector: Mapping[str, str]) -> dict[str, Any]:
    """The first stratum whose levels match ``selector`` (factor -> level as text; empty: the first
    stratum); ``InputError`` naming the factors or levels for anything else."""
    factors = plan.strata.factors
    for name, text in selector.items():
        if name not in factors:
            raise InputError(f"--stratum {name}={text}: no factor {name!r}; factors: {', '.join(factors)}")
        if not any(_level_text(level) == text for level in factors[name]):
            levels = ", ".join(_level_text(level) for level in factors[name])
            raise InputError(f"--stratum {name}={text}: {text!r} is not a level of {name}; levels: {levels}")
    for stratum in plan.strata.enumerate():
        if all(_level_text(stratum[name]) == text for name, text in selector.items()):
            return stratum
    raise InputError(f"no stratum has {', '.join(f'{k}={v}' for k, v in selector.items())}")  # pragma: no cover


def parse_assignments(items: list[str], option: str) -> dict[str, str]:
    """``KEY=VALUE`` items as a mapping (``InputError`` naming ``option`` for a malformed or repeated one)."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key.isidentifier():
            raise InputError(f"{option} {item!r}: expected KEY=VALUE (e.g. {option} steps=20)")
        if key in out:
            raise InputError(f"{option} {key}: given twice")
        out[key] = value
    return out


def parse_value(text: str) -> Any:
    """A ``--set`` value: ``true``, ``false``, ``null``, an integer or a finite number as such (``20``,
    ``0.5``, ``1e-3``), anything else as the text it is."""
    words = {"true": True, "false": False, "null": None}
    if text in words:
        return words[text]
    if _INTEGER.match(text):
        return int(text)
    try:
        number = float(text)
    except ValueError:
        return text
    return number if math.isfinite(number) and _NUMBER.match(text) else text


def with_sets(plan: Plan, sets: Mapping[str, Any]) -> Plan:
    """``plan`` with program parameters overridden for a try: in ``experiment.params`` and in every arm
    that sets them (a stratum factor is refused: choose the cell with the stratum instead)."""
    if not sets:
        return plan
    assert plan.experiment is not None
    factors = [k for k in sets if k in plan.strata.factors]
    if factors:
        raise InputError(f"--set {factors[0]}: is a stratum factor; choose the cell with --stratum {factors[0]}=LEVEL")
    params = {**plan.experiment.params, **sets}
    arms = {arm: {k: (sets[k] if k in sets else v) for k, v in settings.items()} for arm, settings in plan.arms.items()}
    experiment = plan.experiment.model_copy(update={"params": params})
    return plan.model_copy(update={"experiment": experiment, "arms": arms})


def prepare_folder(out: str | os.PathLike[str] | None, plan_sha256: str) -> Path:
    """The try's scratch folder, marked: a fresh temporary folder (``out`` None), a new folder ``out``,
    or ``out`` an earlier try folder; anything else existing (a study's runs folder above all) is refused."""
    if out is None:
        folder = Path(tempfile.mkdtemp(prefix="collect-try-"))
    else:
        folder = Path(out)
        if os.path.lexists(folder):
            if folder.is_dir() and not folder.is_symlink() and is_try_folder(folder):
                return folder
            raise InputError(
                f"--out {folder}: exists and is not a 'collect try' folder; a try writes only into a "
                "new folder or an earlier try's (never into a study's runs folder): give a new path"
            )
        if os.path.lexists(folder.parent) and not folder.parent.is_dir():
            raise InputError(f"--out {folder}: {folder.parent} is not a folder")
        folder.mkdir(parents=True)  # like collect run's --out, its parent folders are made
    marker = {
        "format": MARKER_FORMAT,
        "plan_sha256": plan_sha256,
        "note": "a 'collect try' scratch folder: a smoke run of one cell, never a study's runs folder",
    }
    fd = os.open(folder / TRY_MARKER, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o444)
    try:
        os.write(fd, json.dumps(marker, indent=1).encode() + b"\n")
    finally:
        os.close(fd)
    return folder


def try_hash(plan_sha256: str, sets: Mapping[str, Any]) -> str:
    """The hash a try's records carry: of the plan's hash, the overrides and a fresh nonce (no plan's hash)."""
    return sha256_hex(canonical_bytes({"collect_try": plan_sha256, "set": dict(sets), "nonce": secrets.token_hex(16)}))


def try_cell(
    target: str | os.PathLike[str],
    stratum: Mapping[str, str] | None = None,
    out: str | os.PathLike[str] | None = None,
    sets: Mapping[str, Any] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> TryResult:
    """Run one cell of the plan or lock at ``target`` (see the module doc) and report each arm.

    ``stratum``: factor -> level (as text) selecting the cell (default: the first stratum); ``out``:
    the scratch folder (default: a fresh temporary one); ``sets``: program parameters overridden for
    the try. Bad input (a plan the collector refuses, listing every problem; a sensor this machine
    cannot open) raises ``InputError`` (exit 2) before anything runs; a lock that does not verify
    ``IntegrityError`` (exit 3)."""
    plan, plan_sha256, source = load_target(target)
    if plan.experiment is None:
        raise InputError(
            f"{target}: the plan has no 'experiment' section: its runs are imported, there is nothing to try"
        )
    collector_name = plan.experiment.collector
    overrides = dict(sets or {})
    plan = with_sets(plan, overrides)
    check = plan_problems(plan)
    if check.errors:
        raise InputError(
            f"{target}: collector {collector_name} refuses this plan "
            f"({len(check.errors)} problem(s); nothing was run):\n" + "\n".join(f"- {e}" for e in check.errors),
            details=check.errors,
        )
    cell = select_stratum(plan, stratum or {})
    tried = try_hash(plan_sha256, overrides)
    collector, planned = expand_plan(plan, tried)
    runs = [p for p in planned if p.replicate == 0 and p.stratum == cell]
    refused = sensor_refusals(collector, [(p.arm, p.stratum, p.params) for p in runs])
    if refused:
        raise InputError(
            f"{target}: the sensor cannot be opened on this machine (nothing was run): " + "; ".join(refused)
        )
    folder = prepare_folder(out, plan_sha256)
    run_plan(plan, tried, folder, progress=progress, only=[p.run_id for p in runs])
    records = {r.run_id: r for r in read_ledger(folder).records if r.prereg_sha256 == tried}
    arms = []
    for p in runs:
        record = records.get(p.run_id)
        if record is None:  # pragma: no cover - the engine records every run it starts
            arms.append(ArmOutcome(p.arm, p.run_id, "failed", error="no record was written"))
            continue
        seconds = record.env.get("seconds")
        if record.status == "complete":
            arms.append(ArmOutcome(p.arm, p.run_id, "complete", dict(record.metrics), seconds=seconds))
        else:
            reason, tail = failure_words(record.error, STDERR_LINES)  # as collect run lists a failed run
            arms.append(ArmOutcome(p.arm, p.run_id, "failed", error=reason, stderr_tail=tail, seconds=seconds))
    return TryResult(folder, source, plan_sha256, tried, dict(cell), overrides, arms)


__all__ = [
    "TRY_MARKER",
    "ArmOutcome",
    "TryFolder",
    "TryResult",
    "is_try_folder",
    "parse_assignments",
    "parse_value",
    "refuse_try_folder",
    "select_stratum",
    "try_cell",
    "with_sets",
]
