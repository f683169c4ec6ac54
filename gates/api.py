"""Evaluating a frozen plan from Python: the library path of ``gates evaluate``.

What a notebook calls (re-exported lazily by ``import gates``)::

    ev = gates.evaluate("study.lock.json", "runs/")        # -> gates.artifact.Evaluation
    ev.decision, ev.gates[0].verdict
    ev.to_frame()                                           # one row per gate (pandas)
    gates.write_evaluation("runs/evaluation.json", ev)      # or evaluate(..., out=...)

Rules (the ``gates`` CLI only prints what these return):

* the lock must verify (``prereg.load_lock``: ``IntegrityError``, exit 3); ``plan_version`` picks
  an earlier version from its amendment chain (the artifact says it was superseded);
* ``runs`` is the folder holding ``ledger.jsonl``; anything else is refused with what is expected;
* a ledger whose hash chain does not verify refuses the evaluation (``LedgerTampered``, exit 3);
  runs whose lock seal is not the lock's (``gates.seals``) refuse the decision;
* a monitored plan (``monitoring:``): the runs folder's look ledger must verify with the ledger
  (``LooksTampered``, exit 3), and every evaluation appends its look record there
  (``collect.ledger.looks``; ``gates.looks``: a planned look's decision or an interim reading);
* nothing else is written unless ``out`` is given; ``out`` is checked before anything is computed and
  never replaces a ledger, lock, plan, trace, link or a file the toolkit did not write (unless
  ``force``, and then only a regular file).

Imports no ``*.cli`` module and draws nothing.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union

from collect.ledger.columns import read_ledger_columns
from collect.ledger.looks import append_look, read_looks
from collect.ledger.store import LEDGER_NAME, ledger_path
from gates.artifact import is_evaluation_file, sealed, sealed_bytes, write_encoded
from gates.artifact import read_evaluation as read
from gates.artifact import write_evaluation as write
from gates.integrity import check_looks
from gates.looks import look_fields
from gates.provenance import lock_as_of
from gates.seals import check_published_seal
from prereg.api import Lock, load_lock
from prereg.errors import InputError
from prereg.fileio import check_output
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
        raise InputError(f"{folder}: gates evaluate expects the runs folder, not the ledger file: "
                         f"gates evaluate {lock} {folder.parent}")
    if folder.is_file() and folder.name.lower().endswith(TABLE_SUFFIXES):
        raise InputError(f"{folder}: is a table of runs, but gates evaluate expects a runs folder holding "
                         f"ledger.jsonl; import the table first: collect import {folder} --lock {lock} --out RUNS, "
                         f"then gates evaluate {lock} RUNS")
    if folder.is_file():
        raise InputError(f"{folder}: is a file; gates evaluate expects a runs folder holding ledger.jsonl "
                         "(written by 'collect run' or 'collect import')")
    if not folder.is_dir():
        raise InputError(f"{folder}: no such runs folder")
    if not ledger_path(folder).is_file():
        raise InputError(f"{folder}: holds no ledger.jsonl (run 'collect run' or 'collect import' first)")
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
    if out is not None:
        check_output(out, force, is_evaluation_file)  # before anything is computed or written
    for path, ours in also_writes:
        check_output(path, force, ours)
    built = _evaluate_folder(data, plan, folder, verified.path, record=True)
    if out is None:
        return sealed(built)
    evaluation, encoded = sealed_bytes(built)  # sealed and encoded from one dump
    write_encoded(out, encoded)  # the bytes write_evaluation writes
    return evaluation


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


def _evaluate_folder(data: dict[str, Any], plan: Any, folder: Path, lock_path: Path, *, record: bool,
                     sequence: int | None = None) -> Evaluation:
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
        fields = look_fields(evaluation.monitoring, evaluation.gates, evaluation.decision, ledger,
                             data["plan_sha256"], evaluation.lock.seal if evaluation.lock else None,
                             evaluation.evaluated_at)
        written = append_look(folder, fields)
        if written.seq != evaluation.monitoring.sequence:
            raise InputError(f"{looks.path}: another evaluation was recorded while this one ran (look record "
                             f"{written.seq}, expected {evaluation.monitoring.sequence}); evaluate again")
    return evaluation


def write_evaluation(path: PathLike, evaluation: Evaluation) -> None:
    """Write the artifact atomically, sealed (``gates.artifact.write_evaluation``)."""
    write(path, evaluation)


def read_evaluation(path: PathLike) -> Evaluation:
    """Read and validate an ``evaluation.json`` (``EvaluationError``, exit 2, if it is not one)."""
    return read(path)
