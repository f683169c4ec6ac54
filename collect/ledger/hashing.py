"""The ledger's record hash, computed from one serialisation (part of ``collect.ledger.store``'s format).

More in ``docs/internals.md``.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Iterator
from json.encoder import encode_basestring
from typing import Any

from prereg.jsoncodec import canonical_bytes, canonical_text

FIELD = "record_sha256"
PREV = "prev_sha256"
_STORED_ITEM = re.compile(rb'"record_sha256":"([0-9a-f]{64})"')


def canonical_items(data: dict[str, Any]) -> bytes:
    """The canonical JSON of the object ``data`` without its braces: its items, joined (b"" for {})."""
    return canonical_text(data)[1:-1].encode()


def record_hash(data: dict[str, Any]) -> str:
    """SHA-256 of a record's canonical JSON without its ``record_sha256`` field."""
    return hashlib.sha256(canonical_bytes({k: v for k, v in data.items() if k != FIELD})).hexdigest()


def _join(left: bytes, right: bytes) -> bytes:
    return left + b"," + right if left and right else left or right


def seal(before: bytes, after: bytes) -> tuple[bytes, str]:
    """``(stored line, record_sha256)`` of a record whose canonical items sorting before
    ``record_sha256`` are ``before`` and after it ``after`` (each joined, without braces)."""
    digest = hashlib.sha256(b"{" + _join(before, after) + b"}").hexdigest()
    item = b'"record_sha256":"' + digest.encode() + b'"'
    return b"{" + _join(_join(before, item), after) + b"}", digest


def sealed_line(data: dict[str, Any]) -> tuple[bytes, str]:
    """``(canonical JSON of data with record_sha256 set, that hash)``; ``data`` must not hold the field.

    One serialisation instead of two (the hashed form and the written form).
    """
    before = canonical_items({k: v for k, v in data.items() if k < FIELD})
    return seal(before, canonical_items({k: v for k, v in data.items() if k > FIELD}))


def chain_parts(data: dict[str, Any]) -> tuple[bytes, bytes, bytes]:
    """A record without its chain fields as three runs of canonical items: the keys before
    ``prev_sha256``, those between it and ``record_sha256``, those after (``chained`` seals them)."""
    low = canonical_items({k: v for k, v in data.items() if k < PREV})
    mid = canonical_items({k: v for k, v in data.items() if PREV < k < FIELD})
    return low, mid, canonical_items({k: v for k, v in data.items() if k > FIELD})


def chained(parts: tuple[bytes, bytes, bytes], prev: str) -> tuple[bytes, str]:
    """``sealed_line`` of the record ``chain_parts`` split, with ``prev_sha256`` = ``prev``."""
    low, mid, high = parts
    return seal(_join(_join(low, b'"prev_sha256":' + encode_basestring(prev).encode()), mid), high)


def chain_runs(records: Iterable[tuple[bytes, bytes, bytes]], head: str) -> Iterator[tuple[bytes, str]]:
    """``chained`` of each record in turn (``chain_parts`` runs), each one's ``prev_sha256`` the hash
    of the one before, the first's ``head``: the same bytes, with the joins of the usual case inlined."""
    for low, mid, high in records:
        if low and mid and high:
            before = b"".join((low, b',"prev_sha256":', encode_basestring(head).encode(), b",", mid))
            digest = hashlib.sha256(b"".join((b"{", before, b",", high, b"}"))).hexdigest()
            line = b"".join((b"{", before, b',"record_sha256":"', digest.encode(), b'",', high, b"}"))
        else:
            line, digest = chained((low, mid, high), head)
        yield line, digest
        head = digest


def _cut(line: bytes, start: int, end: int) -> bytes:
    """``line`` without the item at ``[start, end)`` and the comma that joins it to a neighbour."""
    if line[end : end + 1] == b",":
        return line[:start] + line[end + 1 :]
    if line[start - 1 : start] == b",":
        return line[: start - 1] + line[end:]
    return line[:start] + line[end:]


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
