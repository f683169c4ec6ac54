"""The lock's seal: one SHA-256 per plan version over the freeze and the amendment chain (part of ``prereg.lock``).

More in ``docs/internals.md``.
"""

from __future__ import annotations

import re
from typing import Any

from prereg.jsoncodec import canonical_bytes
from prereg.plan import sha256_hex

SEAL_FORMAT = "prereg/seal/v1"
_SEAL = re.compile(r"^[0-9a-f]{64}$")


def version_count(lock: dict[str, Any]) -> int:
    """How many plan versions the lock has (1 as first frozen, +1 per amendment)."""
    return len(lock.get("amendments") or []) + 1


def plan_hash_of(lock: dict[str, Any], version: int) -> Any:
    """The plan hash of ``version`` (1 = as first frozen) from the amendment chain."""
    amendments = lock.get("amendments") or []
    if version == 1:
        return amendments[0].get("parent_plan_sha256") if amendments else lock.get("plan_sha256")
    return amendments[version - 2].get("plan_sha256")


def _genesis(lock: dict[str, Any]) -> dict[str, Any]:
    amendments = lock.get("amendments") or []
    first = amendments[0] if amendments else None
    return {
        "format": lock.get("format"),
        "plan_sha256": first.get("parent_plan_sha256") if first else lock.get("plan_sha256"),
        "yaml_sha256": first.get("parent_yaml_sha256") if first else lock.get("yaml_sha256"),
        "frozen_at": lock.get("frozen_at"),
        "toolkit_version": lock.get("toolkit_version"),
        "environment": lock.get("environment"),
    }


def lock_seal(lock: dict[str, Any], version: int | None = None) -> str:
    """The seal of plan ``version`` (default: the current one); ``ValueError`` for a version it lacks."""
    count = version_count(lock)
    version = count if version is None else version
    if not 1 <= version <= count:
        raise ValueError(f"plan version {version} does not exist: this lock has versions 1 to {count}")
    amendments = list(lock.get("amendments") or [])[: version - 1]
    return sha256_hex(canonical_bytes({"seal": SEAL_FORMAT, "genesis": _genesis(lock), "amendments": amendments}))


def seals(lock: dict[str, Any]) -> dict[int, str]:
    """Version -> its seal, for every version of the lock."""
    return {v: lock_seal(lock, v) for v in range(1, version_count(lock) + 1)}


def seals_by_plan(lock: dict[str, Any]) -> dict[str, dict[int, str]]:
    """Plan hash -> {version: seal} of the versions with that plan (a plan can recur in a chain)."""
    out: dict[str, dict[int, str]] = {}
    for version, seal in seals(lock).items():
        out.setdefault(str(plan_hash_of(lock, version)), {})[version] = seal
    return out


def parse_seal(published: str) -> str:
    """A published seal as 64 lower-case hex digits; ``ValueError`` (bad input) for anything else."""
    text = published.strip().lower()
    if not _SEAL.match(text):
        raise ValueError(f"--published {published!r}: a seal is 64 hexadecimal digits (as 'prereg freeze' prints it)")
    return text


def check_published(lock: dict[str, Any], published: str, up_to: int | None = None) -> tuple[int | None, str]:
    """``(version, sentence)``: which version (at most ``up_to``) has the published seal, or ``(None,
    why not)``. A malformed seal is a ``ValueError`` (bad input)."""
    text = parse_seal(published)
    last = version_count(lock) if up_to is None else up_to
    for version, seal in seals(lock).items():
        if version <= last and seal == text:
            later = (
                f"; versions {version + 1} to {last} came after it and are not covered by it" if version < last else ""
            )
            return version, (
                f"the lock matches the published seal {text[:12]} (version {version}, frozen at "
                f"{lock.get('frozen_at')}){later}"
            )
    return None, (
        f"the lock does not match the published seal {text[:12]}: none of its versions 1 to {last} has "
        "that seal, so its freeze time or amendment chain is not the one published (the lock was "
        "resealed or re-frozen)"
    )
