"""Where the plan and its inputs come from: predecessors, the YAML beside the lock, runs of other plans.

More in ``docs/internals.md``.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from gates.artifact import MAX_ARTIFACT_BYTES, EvaluationError, PlanYamlCheck, PredecessorCheck, parse_evaluation
from prereg.fileio import read_regular_file
from prereg.lock import diff_paths, yaml_beside
from prereg.plan import PlanError, load_plan
from prereg.schema import Plan


def _recorded(data: bytes) -> dict[str, Any]:
    """The conclusion an evaluation artifact recorded (decision, claim, time), or a note why none."""
    try:
        ev = parse_evaluation(data, "the predecessor")
    except EvaluationError as err:  # another file, or an older format (the message says which)
        return {"recorded_note": f"{err}; no recorded conclusion"}
    return {"recorded_decision": ev.decision, "recorded_claim": ev.claim, "recorded_at": ev.evaluated_at}


def check_predecessors(plan: Plan, base: Path) -> list[PredecessorCheck]:
    """Each predecessor's status (verified | mismatch | missing) and its recorded conclusion."""
    out = []
    for pred in plan.predecessors:
        path = (base / pred.path) if not Path(pred.path).is_absolute() else Path(pred.path)
        extra: dict[str, Any] = {}
        try:  # a regular file of bounded size (never a FIFO or device), else missing
            data: bytes | None = read_regular_file(path, MAX_ARTIFACT_BYTES)
        except ValueError:
            data = None
        if data is None:
            status = "missing"
        else:
            actual = hashlib.sha256(data).hexdigest()
            status = "verified" if actual == pred.sha256 else "mismatch"
            extra = _recorded(data)
            if status == "mismatch":
                extra["actual_sha256"] = actual
        out.append(PredecessorCheck(path=pred.path, sha256=pred.sha256, changes=pred.changes, status=status, **extra))
    return out


def predecessor_refusal(checks: list[PredecessorCheck]) -> str | None:
    """The decision-level refusal for missing or mismatched predecessors, or None."""
    bad = [p for p in checks if p.status != "verified"]
    if not bad:
        return None
    words = {"missing": "is missing", "mismatch": "does not have the SHA-256 the plan states"}
    return "; ".join(f"predecessor {p.path} {words[p.status]}" for p in bad) + (
        " (the plan builds on an earlier result that cannot be shown to be the one it names)"
    )


def _same_bytes_as_frozen(path: Path, yaml_sha256: Any) -> bool:
    """Whether the file holds exactly the YAML the lock was frozen (or last amended) from: its SHA-256 is
    the lock's ``yaml_sha256`` (then it canonicalises to the locked plan, which the lock's verification
    re-hashed and re-validated)."""
    try:
        raw = read_regular_file(path, 16 << 20)
    except ValueError:
        return False
    return isinstance(yaml_sha256, str) and hashlib.sha256(raw).hexdigest() == yaml_sha256


def check_plan_yaml(lock: dict[str, Any], lock_path: Path) -> PlanYamlCheck | None:
    """Compare the YAML beside the lock with the locked plan (the notice ``prereg verify`` gives)."""

    path = yaml_beside(lock_path)
    if path is None:
        return None
    if _same_bytes_as_frozen(path, lock.get("yaml_sha256")):  # the very text frozen: nothing to parse
        return PlanYamlCheck(path=str(path), status="matches", notice=f"{path} matches the lock")
    try:
        loaded = load_plan(path)
    except PlanError as err:
        return PlanYamlCheck(
            path=str(path),
            status="invalid",
            notice=(f"{path} no longer validates as a plan ({err.render(limit=3)}); the locked plan was evaluated"),
        )
    if loaded.plan_sha256 != lock["plan_sha256"]:
        changed = diff_paths(lock["plan"], loaded.canonical)
        shown = ", ".join(changed[:12]) + (" ..." if len(changed) > 12 else "")
        return PlanYamlCheck(
            path=str(path),
            status="changed",
            changed=changed,
            notice=(
                f"{path} no longer matches the lock (plan hash {loaded.plan_sha256[:12]} vs locked "
                f"{lock['plan_sha256'][:12]}); changed: {shown}. The locked plan was evaluated, not the edited "
                "YAML; use 'prereg amend' to record a change"
            ),
        )
    if loaded.yaml_sha256 != lock.get("yaml_sha256"):
        return PlanYamlCheck(
            path=str(path),
            status="layout_changed",
            notice=(f"{path}: the text changed (comments or layout) but the plan is identical"),
        )
    return PlanYamlCheck(path=str(path), status="matches", notice=f"{path} matches the lock")


def lock_as_of(lock: dict[str, Any], version: int) -> dict[str, Any]:
    """The lock as it stood at plan ``version`` (1 = as first frozen), from its verified amendment chain.

    Runs collected before a post-data amendment can be evaluated under the plan they were collected
    for: the parent plan kept in the amendment entry, with the amendments made before it.
    """
    current = len(lock["amendments"]) + 1
    if not 1 <= version <= current:
        raise ValueError(f"plan version {version} does not exist: this lock has versions 1 to {current}")
    if version == current:
        return lock
    entry = lock["amendments"][version - 1]
    return {
        **lock,
        "plan": entry["parent_plan"],
        "plan_sha256": entry["parent_plan_sha256"],
        "yaml_sha256": entry["parent_yaml_sha256"],
        "amendments": lock["amendments"][: version - 1],
        "superseded_by": [
            f'v{a["version"]} {a["amended_at"]}: "{a["reason"]}"' for a in lock["amendments"][version - 1 :]
        ],
    }


def other_plan_note(lock: dict[str, Any], other_hashes: dict[str, int], lock_path: Path) -> str | None:
    """One message with the next step for runs recorded under other plan hashes, or None."""
    if not other_hashes:
        return None
    parents = {a["parent_plan_sha256"]: a for a in lock["amendments"]}
    parts = []
    for sha, count in other_hashes.items():
        amendment = parents.get(sha)
        if amendment is not None:
            flag = "a post-data amendment" if amendment.get("post_data") else "an amendment"
            parts.append(
                f"{count} run(s) were collected under plan {sha[:12]}, which {flag} (v{amendment['version']}, "
                f'{amendment["amended_at"]}: "{amendment["reason"]}") replaced; that plan is version '
                f"{amendment['version'] - 1} (--plan-version {amendment['version'] - 1})"
            )
        else:
            parts.append(f"{count} run(s) were recorded under plan {sha[:12]}, which is not this lock's plan")
    earlier = any(sha in parents for sha in other_hashes)
    where = (
        f"evaluate them under the plan they were collected for ('gates evaluate {lock_path} RUNS "
        "--plan-version N', N from the lock's amendment chain; the report then says that plan was "
        "superseded), or "
        if earlier
        else ""
    )
    unrelated = (
        ""
        if all(sha in parents for sha in other_hashes)
        else ("Runs of another plan are that plan's: evaluate them with its own lock. ")
    )
    return (
        "; ".join(parts) + f". They are not evidence for this plan version. {unrelated}Next step: {where}"
        "collect runs under this plan into a new folder "
        f"('collect run {lock_path} --out NEW_RUNS', or 'collect import ... --lock {lock_path} --out NEW_RUNS') "
        "and evaluate that. Each run is listed under 'other_plan' in the artifact (and with --verbose)"
    )
