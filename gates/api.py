"""Evaluating a frozen plan from Python: the library path of ``gates evaluate``.

More in ``docs/internals.md``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union

from collect.ledger.columns import read_ledger_columns
from collect.ledger.looks import append_look, read_looks
from collect.ledger.store import LEDGER_NAME, ledger_path
from collect.ledger.try_marker import refuse_try_folder
from gates.artifact import read_evaluation as read
from gates.artifact import sealed, sealed_bytes
from gates.integrity import check_looks
from gates.looks import look_fields
from gates.provenance import lock_as_of
from gates.seals import check_published_seal
from prereg.api import Lock, load_lock
from prereg.errors import InputError, ToolkitError
from prereg.fileio import OutputRefused, check_output, file_head, output_kind, write_output
from prereg.lock import genesis_hash
from prereg.plan import plan_from_canonical

if TYPE_CHECKING:
    from gates.artifact import Evaluation

PathLike = Union[str, "os.PathLike[str]"]
LockLike = Union[Lock, str, "os.PathLike[str]"]
TABLE_SUFFIXES = (".csv", ".csv.gz", ".jsonl", ".ndjson", ".parquet")


def check_runs_folder(runs: PathLike, lock_label: str) -> Path:
    """``runs`` as a folder holding ledger.jsonl; anything else gets a message saying what is expected."""
    folder = Path(runs)
    lock = lock_label
    if folder.is_file() and folder.name == LEDGER_NAME:
        raise InputError(
            f"{folder}: gates evaluate expects the runs folder, not the ledger file: "
            f"gates evaluate {lock} {folder.parent}"
        )
    if folder.is_file() and folder.name.lower().endswith(TABLE_SUFFIXES):
        raise InputError(
            f"{folder}: is a table of runs, but gates evaluate expects a runs folder holding "
            f"ledger.jsonl; import the table first: collect import {folder} --lock {lock} --out RUNS, "
            f"then gates evaluate {lock} RUNS"
        )
    if folder.is_file():
        raise InputError(
            f"{folder}: is a file; gates evaluate expects a runs folder holding ledger.jsonl "
            "(written by 'collect run' or 'collect import')"
        )
    if not folder.is_dir():
        raise InputError(f"{folder}: no such runs folder")
    if not ledger_path(folder).is_file():
        raise InputError(f"{folder}: holds no ledger.jsonl (run 'collect run' or 'collect import' first)")
    refuse_try_folder(folder, "gates")
    return folder


def evaluate(
    lock: LockLike,
    runs: PathLike,
    *,
    plan_version: int | None = None,
    out: PathLike | None = None,
    force: bool = False,
    also_writes: Sequence[tuple[PathLike, Callable[[Path], bool]]] = (),
    published: str | None = None,
) -> Evaluation:
    """Every gate of a verified lock evaluated on a runs folder: verdicts, invalidators, the decision.

    Returns the sealed :class:`~gates.artifact.Evaluation`; with ``out`` it is also written there
    (atomically; see the module's rules for what is never replaced). ``also_writes`` names files
    the caller will write afterwards (path, "is this our kind of file?"), checked with ``out``.
    ``published``: the seal published at freeze (or an amendment); the lock version evaluated, or
    one before it, must have it (``IntegrityError`` otherwise, ``gates.seals.check_published_seal``).
    """
    label, verified, data, plan = _lock_version(lock, plan_version)
    if published is not None:
        check_published_seal(data, published)
    folder = check_runs_folder(runs, label)
    if out is not None:  # before anything is computed or written
        check_output(out, force, _same_study_evaluation(out, verified.data))
    for path, ours in also_writes:
        check_output(path, force, ours)
    built = _evaluate_folder(data, plan, folder, verified.path, record=True)
    if out is None:
        return sealed(built)
    evaluation, encoded = sealed_bytes(built)  # sealed and encoded from one dump
    write_output(out, encoded, force, _same_study_evaluation(out, verified.data))  # the bytes write_evaluation writes
    return evaluation


_HASH_FIELD = re.compile(rb'"(?:genesis_plan_sha256|prereg_sha256)":\s*"([0-9a-f]{64})"')


def _same_study_evaluation(out: PathLike, lock_data: dict[str, Any]) -> Callable[[Path], bool]:
    """``ours`` for ``out`` under this lock: :func:`same_study_evaluation` of its lineage's plan hashes."""
    hashes = {lock_data.get("plan_sha256")}
    hashes |= {
        a.get(k)
        for a in lock_data.get("amendments") or []
        if isinstance(a, dict)
        for k in ("parent_plan_sha256", "plan_sha256")
    }
    return same_study_evaluation(genesis_hash(lock_data), {h for h in hashes if isinstance(h, str)})


def same_study_evaluation(genesis: str, plan_hashes: set[str]) -> Callable[[Path], bool]:
    """``ours`` for an evaluation's output: whether a file there is an evaluation of the same study (its
    genesis plan hash; for an artifact in a retired format, one of ``plan_hashes`` or the genesis in its
    head); raises ``OutputRefused`` naming the other study when it holds an evaluation of another one."""
    hashes = {genesis, *plan_hashes}

    def ours(path: Path) -> bool:
        if output_kind(path) != "an evaluation":
            return False
        try:
            ev = read(path)
        except ToolkitError:  # a retired format: its plan hash, from its head
            found = {m.decode() for m in _HASH_FIELD.findall(file_head(path))}
            if found & hashes:
                return True
            raise OutputRefused(
                17,
                "is an evaluation this toolkit cannot read, not recognisably of this study; "
                "never written over (choose another --out)",
                str(path),
            ) from None
        if ev.genesis_plan_sha256 == genesis:
            return True
        raise OutputRefused(
            17,
            f"is the evaluation of another study (study {ev.study!r}, first frozen as plan "
            f"{ev.genesis_plan_sha256[:12]}; this lock's is {genesis[:12]}); an evaluation is "
            "replaced only by one of the same study (its lock or an amendment of it), never "
            "written over by this one (choose another --out)",
            str(path),
        )

    return ours


def _lock_version(lock: LockLike, plan_version: int | None) -> tuple[str, Any, dict[str, Any], Any]:
    """``(label, verified lock, lock data, plan)`` of ``lock``, as of ``plan_version`` when given."""
    label = str(lock.path) if isinstance(lock, Lock) else os.fspath(lock)
    verified = load_lock(lock)
    data, plan = verified.data, verified.plan
    if plan_version is not None:
        try:
            data = lock_as_of(data, plan_version)
        except ValueError as err:
            raise InputError(f"{label}: {err}") from None
        plan = plan_from_canonical(data["plan"])
    return label, verified, data, plan


def reevaluate_look(lock: LockLike, runs: PathLike, sequence: int, plan_version: int | None = None) -> Evaluation:
    """A monitored plan's look ``sequence`` (its look ledger record number) evaluated again, recording
    nothing (``gates.verify``): with the looks recorded before it, on the runs folder as it is. The
    caller checks first that the run ledger is still the one that look saw: evaluating a grown ledger
    would be a look nobody recorded."""
    label, verified, data, plan = _lock_version(lock, plan_version)
    folder = check_runs_folder(runs, label)
    return sealed(_evaluate_folder(data, plan, folder, verified.path, record=False, sequence=sequence))


def _evaluate_folder(
    data: dict[str, Any], plan: Any, folder: Path, lock_path: Path, *, record: bool, sequence: int | None = None
) -> Evaluation:
    """The evaluation of ``folder``, not yet sealed (the caller seals it). A monitored plan's look ledger is checked, its earlier
    records passed on and (``record``) this look appended; ``sequence``: re-evaluate the look of that
    record number (``gates.verify``, which records nothing)."""
    from gates.assemble import build_evaluation  # lazy: numpy

    ledger = read_ledger_columns(folder)  # the ledger as columns
    if plan.monitoring is None:
        return build_evaluation(data, plan, ledger, lock_path)
    looks = read_looks(folder)
    check_looks(looks, ledger)
    history = looks.records if sequence is None else looks.records[: sequence - 1]
    evaluation = build_evaluation(data, plan, ledger, lock_path, history)
    if record:
        assert evaluation.monitoring is not None
        fields = look_fields(
            evaluation.monitoring,
            evaluation.gates,
            evaluation.decision,
            ledger,
            data["plan_sha256"],
            evaluation.lock.seal if evaluation.lock else None,
            evaluation.evaluated_at,
        )
        written = append_look(folder, fields)
        if written.seq != evaluation.monitoring.sequence:
            raise InputError(
                f"{looks.path}: another evaluation was recorded while this one ran (look record "
                f"{written.seq}, expected {evaluation.monitoring.sequence}); evaluate again"
            )
    return evaluation


def write_evaluation(path: PathLike, evaluation: Evaluation, force: bool = False) -> None:
    """Write the artifact atomically, sealed, under the output rule (``prereg.fileio.write_output``): an
    existing evaluation only of the same study, a foreign file outside a runs folder only with ``force``."""
    _, encoded = sealed_bytes(evaluation)
    write_output(
        path, encoded, force, same_study_evaluation(evaluation.genesis_plan_sha256, {evaluation.prereg_sha256})
    )


def read_evaluation(path: PathLike) -> Evaluation:
    """Read and validate an ``evaluation.json`` (``EvaluationError``, exit 2, if it is not one)."""
    return read(path)
