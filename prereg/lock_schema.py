"""The structure of a ``prereg/lock/v1`` file as pydantic models (used by :mod:`prereg.lock`).

Only the shape is checked here; hashes, the plan itself and the amendment chain are verified in
``prereg.lock.verify_chain``.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, StringConstraints

Sha256 = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class GitIdentity(_Strict):
    """The commit of the YAML's repository and whether its tracked files had changes."""

    commit: str
    dirty: bool | None


class Environment(_Strict):
    """Where a lock version was written."""

    python: str
    implementation: str
    platform: str
    machine: str
    git: GitIdentity | None


class RunsInfo(_Strict):
    """What the runs folder named at amendment time held."""

    dir: str
    ledger_sha256: Sha256 | None
    ledger_lines: int


class Amendment(_Strict):
    """One link of the amendment chain."""

    version: int
    parent_plan_sha256: Sha256
    parent_yaml_sha256: Sha256
    parent_plan: dict[str, Any]
    plan_sha256: Sha256
    yaml_sha256: Sha256
    reason: str
    amended_at: str
    post_data: bool
    runs_checked: bool
    runs: RunsInfo | None
    changed: list[str]
    toolkit_version: str
    environment: Environment
    parent_entry_sha256: Sha256 | None
    entry_sha256: Sha256


class LockFile(_Strict):
    """The structure of a ``prereg/lock/v1`` file (hashes are checked separately)."""

    format: Literal["prereg/lock/v1"]
    plan: dict[str, Any]
    plan_sha256: Sha256
    yaml_sha256: Sha256
    yaml_file: str
    frozen_at: str
    toolkit_version: str
    environment: Environment
    amendments: list[Amendment]
    run_order: list[dict[str, Any]] | None = None  # monitored plans only (prereg.monitoring.run_order)
    lock_sha256: Sha256
