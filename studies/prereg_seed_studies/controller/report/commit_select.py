"""Which controller runs ``reports plot`` draws together: a block's arms (``--commits [--arms A,B]``) or
the challenger's and chosen comparator's runs of an evaluation's family block (``--family F``).

The evaluation's ``comparator`` is read defensively, so an artifact without it gets one clear message.
Every problem is one ``InputError`` (exit 2). No pydantic at import: the ledger is read lazily.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from collect.ledger.cells import standing
from prereg.errors import InputError
from reports.data.timeline import find_run, open_runs_ledger

if TYPE_CHECKING:
    from collect.ledger.store import RunRecord


def block_run_ids(runs_folder: str | Path, run_id: str, arms: list[str] | None = None) -> list[str]:
    """The run ids of ``run_id``'s block (same plan, stratum, replicate): every arm sorted by name, or
    only ``arms`` in that order (``InputError`` naming the block's arms when one is not there)."""
    ledger, target = find_run(runs_folder, run_id)
    latest: dict[str, RunRecord] = {  # one run per arm, by the ledger's duplicate rule (collect.ledger.cells)
        r.arm: r
        for r in standing(
            r
            for r in ledger.records
            if (r.prereg_sha256, r.stratum, r.replicate) == (target.prereg_sha256, target.stratum, target.replicate)
        ).values()
    }
    if not arms:
        return [latest[a].run_id for a in sorted(latest)]
    missing = [a for a in arms if a not in latest]
    if missing:
        raise InputError(
            f"--arms: no run of arm {', '.join(missing)} in the block of run {run_id} (its arms: "
            f"{', '.join(sorted(latest))})"
        )
    return [latest[a].run_id for a in arms]


def _field(obj: Any, name: str) -> Any:
    return obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)


def family_block_runs(
    ev: Any, family: str, runs_folder: str | Path | None = None, evaluation_path: str | Path | None = None
) -> tuple[Path, list[str]]:
    """The runs folder and the challenger's and comparator's runs of the first block of ``family``.

    ``ev`` is an evaluation (``gates.artifact.Evaluation``) or anything with its fields:
    ``comparator`` (``arm``, ``challenger``, ``family_factor``), ``blocks`` (``stratum``,
    ``replicate``), ``ledger.path`` and ``prereg_sha256``. The runs folder is ``runs_folder``, else the
    evaluated ledger's folder, else (a relative ledger path written from another working folder) the
    folder of ``evaluation_path`` when it holds a ledger. Every problem is one ``InputError`` (exit 2)."""
    comp = getattr(ev, "comparator", None) if not isinstance(ev, dict) else ev.get("comparator")
    if comp is None:
        raise InputError(
            "--family: the evaluation has no comparator (an evaluation of a plan without "
            "comparator selection); use RUNS --run ID --commits --arms A,B instead"
        )
    challenger, arm, factor = _field(comp, "challenger"), _field(comp, "arm"), _field(comp, "family_factor")
    if not challenger or not factor:
        raise InputError("--family: the evaluation's comparator names no challenger arm or no family factor")
    if arm is None:
        raise InputError(
            f"--family: the comparator could not be chosen (the evaluation chose none to face "
            f"{challenger}), so there is no comparator run to plot"
        )
    blocks = list(_field(ev, "blocks") or [])
    block = next((b for b in blocks if str((_field(b, "stratum") or {}).get(factor)) == str(family)), None)
    if block is None:
        known = sorted({str((_field(b, "stratum") or {}).get(factor)) for b in blocks} - {"None"})
        raise InputError(
            f"--family: no block with {factor}={family} in the evaluation (its families: {', '.join(known) or 'none'})"
        )
    stratum, replicate = dict(_field(block, "stratum")), _field(block, "replicate")
    folder = (
        Path(runs_folder)
        if runs_folder is not None
        else Path(str(_field(_field(ev, "ledger"), "path") or "ledger.jsonl")).parent
    )
    beside = Path(evaluation_path).parent if evaluation_path is not None else None
    if (
        runs_folder is None
        and not (folder / "ledger.jsonl").is_file()
        and beside is not None
        and (beside / "ledger.jsonl").is_file()
    ):
        folder = beside
    ledger = open_runs_ledger(folder)
    plan = _field(ev, "prereg_sha256")
    matches = [
        r for r in ledger.records if r.stratum == stratum and r.replicate == replicate and r.arm in (challenger, arm)
    ]
    stand = list(standing(matches).values())  # the ledger's duplicate rule (collect.ledger.cells)
    found: dict[str, RunRecord] = {r.arm: r for r in stand}  # an arm's record under any plan ...
    found.update({r.arm: r for r in stand if r.prereg_sha256 == plan})  # ... under the evaluated plan if any
    where = ", ".join(f"{k}={v}" for k, v in stratum.items())
    for name in (challenger, arm):
        if name not in found:
            raise InputError(
                f"--family: no run of arm {name} for stratum {where}, replicate {replicate} in {ledger.path}"
            )
    return folder, [found[challenger].run_id, found[arm].run_id]
