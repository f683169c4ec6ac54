"""Before an evaluation is shown: is it what its lock and runs give? (``reports show`` and ``reports html``.)

More in ``docs/internals.md``.
"""

from __future__ import annotations

from pathlib import Path

from gates.artifact import Evaluation
from gates.verify import find_lock, verify_evaluation
from prereg.errors import IntegrityError


def reverify(ev: Evaluation, evaluation_path: Path, runs: Path | None, lock: Path | None = None) -> str:
    """What to say about ``evaluation_path`` (re-verified, or why it could not be); ``IntegrityError`` for a forged,
    unsealed or stale artifact, or a lock or ledger that does not verify."""
    if runs is None:
        if lock is not None:
            raise IntegrityError(f"--lock needs the runs folder: {evaluation_path.parent} holds no ledger.jsonl")
        return (
            "could not be re-verified: no runs folder beside it (its seal and consistency "
            "were checked; 'gates verify EVALUATION LOCK RUNS' re-evaluates it)"
        )
    found = lock if lock is not None else find_lock(ev, runs)
    if found is None:
        return (
            f"could not be re-verified: no lock of plan {ev.prereg_sha256[:12]} found where it "
            f"was recorded or beside {runs} (give --lock LOCK, or run 'gates verify EVALUATION LOCK RUNS')"
        )
    result = verify_evaluation(ev, found, runs)
    if not result.ok:
        raise IntegrityError(
            f"{evaluation_path}: FORGED OR STALE evaluation artifact: it {result.sentence()}\n"
            f"refusing to show it (re-run 'gates evaluate {found} {runs}' if the runs changed since)",
            details=result.differences,
        )
    return result.sentence()
