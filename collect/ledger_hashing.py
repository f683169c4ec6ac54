"""The ledger's record hash, computed from one serialisation (part of ``collect.ledger``'s format).

A record's ``record_sha256`` is the SHA-256 of its canonical JSON (sorted keys, no whitespace,
UTF-8) *without* that field. The canonical JSON of an object is its sorted ``"key":value`` items
joined by commas, so the canonical bytes without the field are the line with the one item
``"record_sha256":"..."`` (and its comma) cut out. That lets the writer serialise a record once
(with a placeholder it then replaces) and the reader hash a stored line without re-serialising it.

Reading: the cut line's hash is used only when it *equals* the hash the line carries at its top
level; otherwise (an edited or reformatted line, an older ledger) the caller re-serialises
canonically as before. For every line a writer produced the two agree (tested on every kind of
edit). They can differ only for a non-canonical line whose carried hash was recomputed over its own
bytes -- a forger who can do that can as well write the canonical form and its hash, and either way
the next record's ``prev_sha256`` (or the published head) no longer matches.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

from prereg.plan import canonical_bytes

FIELD = "record_sha256"
_PLACEHOLDER = "p" * 64  # not hex: cannot be mistaken for a stored hash
_PLACEHOLDER_ITEM = f'"{FIELD}":"{_PLACEHOLDER}"'.encode()
_STORED_ITEM = re.compile(rb'"record_sha256":"([0-9a-f]{64})"')


def record_hash(data: dict[str, Any]) -> str:
    """SHA-256 of a record's canonical JSON without its ``record_sha256`` field."""
    return hashlib.sha256(canonical_bytes({k: v for k, v in data.items() if k != FIELD})).hexdigest()


def _cut(line: bytes, start: int, end: int) -> bytes:
    """``line`` without the item at ``[start, end)`` and the comma that joins it to a neighbour."""
    if line[end : end + 1] == b",":
        return line[:start] + line[end + 1 :]
    if line[start - 1 : start] == b",":
        return line[: start - 1] + line[end:]
    return line[:start] + line[end:]


def sealed_line(data: dict[str, Any]) -> tuple[bytes, str]:
    """``(canonical JSON of data with record_sha256 set, that hash)``; ``data`` must not hold the field.

    One serialisation instead of two (the hashed form and the written form).
    """
    line = canonical_bytes({**data, FIELD: _PLACEHOLDER})
    start = line.find(_PLACEHOLDER_ITEM)
    if start < 0 or line.find(_PLACEHOLDER_ITEM, start + 1) >= 0:  # a nested key spelled the same: the slow way
        digest = record_hash(data)
        return canonical_bytes({**data, FIELD: digest}), digest
    digest = hashlib.sha256(_cut(line, start, start + len(_PLACEHOLDER_ITEM))).hexdigest()
    return line.replace(_PLACEHOLDER.encode(), digest.encode(), 1), digest


def stored_line_hash(line: bytes) -> str | None:
    """The hash a stored line carries when the line is exactly the canonical form it was hashed
    over (its cut line hashes to it); ``None`` when that cannot be shown from the bytes alone (the
    caller then parses and re-serialises). The caller must check that the parsed record's top-level
    ``record_sha256`` is this value."""
    found = list(_STORED_ITEM.finditer(line))
    if len(found) != 1:
        return None
    start, end = found[0].span()
    stored = found[0].group(1).decode()
    return stored if hashlib.sha256(_cut(line, start, end)).hexdigest() == stored else None
