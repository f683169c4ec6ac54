"""The commit ledger ``traces/<run_id>.commits.jsonl``: its writer and its reader (the format's owner).

Model, rules and assumptions: docs/seed-studies.md (prereg_seed_studies.controller.commits).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from collect.traces.lines import finite, parsed_rows
from prereg.errors import InputError
from prereg.fileio import atomic_write

SUFFIX = "commits.jsonl"


def write_commits(path: Path, rows: list[dict[str, Any]]) -> None:
    """Write the commit rows (finite numbers only), one JSON object per line, atomically."""
    text = "".join(json.dumps(row, sort_keys=True, allow_nan=False) + "\n" for row in rows)
    atomic_write(path, text.encode("utf-8"))


def _sites(value: Any, what: str) -> list[int]:
    if not isinstance(value, list) or any(isinstance(s, bool) or not isinstance(s, int) for s in value):
        raise ValueError(f"'{what}' is not a list of site numbers")
    return value


def _row(row: dict[str, Any]) -> dict[str, Any]:
    if isinstance(row.get("commit"), bool) or not isinstance(row.get("commit"), int):
        raise ValueError("'commit' is not an integer")
    for key in ("wall_start_ms", "wall_tick_ms"):
        row[key] = finite(row.get(key), f"'{key}'")
    if row["wall_tick_ms"] < row["wall_start_ms"]:
        raise ValueError("'wall_tick_ms' is before 'wall_start_ms'")
    for key in ("mode", "action"):
        if not isinstance(row.get(key), str):
            raise ValueError(f"'{key}' is not a string")
    row["reason"] = str(row.get("reason") or "")
    for key in ("members", "up_sites", "reachable_sites"):
        row[key] = _sites(row.get(key, []), key)
    nll = row.get("heldout_nll")
    row["heldout_nll"] = float(nll) if isinstance(nll, (int, float)) and not isinstance(nll, bool) else math.nan
    for key in ("wan_bytes", "wan_ms"):
        raw = row.get(key) or {}
        if not isinstance(raw, dict):
            raise ValueError(f"'{key}' is not an object")
        row[key] = {str(k): finite(v, f"'{key}.{k}'") for k, v in raw.items()}
    row["stall_ms"] = finite(row.get("stall_ms", 0.0), "'stall_ms'")
    return row


def read_commits(path: Path, data: bytes | None = None) -> list[dict[str, Any]]:
    """The rows of one commit ledger (``data``: its bytes, already read and checked), fields checked,
    sorted by commit; ``InputError`` for a malformed line or a ledger with no rows."""
    rows = parsed_rows(path, data, "a commit ledger is JSON lines", "commit row", _row)
    if not rows:
        raise InputError(f"{path}: the commit ledger holds no rows; nothing to draw")
    return sorted(rows, key=lambda r: r["commit"])


__all__ = ["SUFFIX", "read_commits", "write_commits"]
