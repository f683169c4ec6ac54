"""Code identity: the runs of one study were made by the same code.

More in ``docs/internals.md``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final

from collect.ledger.columns import Record
from gates.artifact import CodeDifference, CodeIdentity
from prereg.schema import CodePart, Plan

NOT_RECORDED: Final = "not recorded"
_ABSENT: Final = object()


def _get(code: dict[str, Any], *path: str) -> Any:
    value: Any = code
    for key in path:
        if not isinstance(value, dict) or key not in value:
            return _ABSENT
        value = value[key]
    return value


#: part -> how to read it from a record's ``code`` (``_ABSENT`` when the record lacks it)
READERS: Final[dict[CodePart, Callable[[dict[str, Any]], Any]]] = {
    "files": lambda c: _get(c, "command", "files_sha256"),
    "files_git": lambda c: _get(c, "command", "files_git"),
    "python": lambda c: _get(c, "command", "python", "version"),
    "packages": lambda c: _get(c, "command", "packages"),
    "toolkit": lambda c: _get(c, "toolkit_version"),
    "git": lambda c: _get(c, "git"),
}
#: the record field each part reads (the refusal names it)
FIELDS: Final[dict[CodePart, str]] = {
    "files": "code.command.files_sha256",
    "files_git": "code.command.files_git",
    "python": "code.command.python.version",
    "packages": "code.command.packages",
    "toolkit": "code.toolkit_version",
    "git": "code.git",
}


def has_identity(record: Record) -> bool:
    """Whether a record carries a code identity to compare (not imported, not empty)."""
    return bool(record.code) and not record.code.get("imported")


def _words(value: Any, other: Any = _ABSENT) -> str:
    """A part's value in words; packages show only the names whose versions differ from ``other``'s."""
    if value is _ABSENT or value is None:
        return NOT_RECORDED
    if isinstance(value, dict) and "commit" in value:
        commit = str(value.get("commit"))[:12]
        dirty = value.get("dirty")
        return f"commit {commit}" + (" (dirty)" if dirty else " (clean)" if dirty is False else "")
    if isinstance(value, dict):  # packages: name -> version (None: not installed)
        theirs = other if isinstance(other, dict) else {}
        names = sorted(k for k in set(value) | set(theirs) if value.get(k, _ABSENT) != theirs.get(k, _ABSENT))
        return ", ".join(f"{k} {_version(value, k)}" for k in names or sorted(value)) or "none"
    text = str(value)
    return text[:12] if len(text) == 64 and all(ch in "0123456789abcdef" for ch in text) else text


def _version(packages: dict[str, Any], name: str) -> str:
    if name not in packages:
        return NOT_RECORDED
    return "not installed" if packages[name] is None else str(packages[name])


def _comparable(value: Any) -> Any:
    return None if value is _ABSENT else value


def check_code_identity(plan: Plan, records: Sequence[Record]) -> CodeIdentity:
    """Compare every part of the code identity across ``records`` (the matched runs); see the module doc."""
    declaration = plan.code_identity
    declared: list[CodePart] = list(declaration.may_differ) if declaration is not None else []
    reason = declaration.reason if declaration is not None else None
    with_identity = [r for r in records if has_identity(r)]
    without = len(records) - len(with_identity)
    if not with_identity:
        notes = (
            [
                f"none of the {without} matched run(s) carries a code identity (imported: made elsewhere), so "
                "that they were made by the same code cannot be shown"
            ]
            if without
            else []
        )
        return CodeIdentity(
            status="not_recorded", declared=declared, reason=reason, without_identity=without, notes=notes
        )
    compared: list[CodePart] = []
    examples: list[CodeDifference] = []
    for part, read in READERS.items():
        values = [read(r.code) for r in with_identity]
        if all(v is _ABSENT or v is None for v in values):
            continue
        compared.append(part)
        first = _comparable(values[0])
        for record, value in zip(with_identity[1:], values[1:], strict=True):
            if _comparable(value) != first:
                examples.append(
                    CodeDifference(
                        part=part,
                        record_field=FIELDS[part],
                        runs=[with_identity[0].run_id, record.run_id],
                        values=[_words(values[0], value), _words(value, values[0])],
                        declared=part in declared,
                    )
                )
                break
    parts = [e.part for e in examples]
    status = "same" if not examples else "differs" if any(not e.declared for e in examples) else "differs_declared"
    notes = []
    if without:
        notes.append(
            f"{without} of the {len(records)} matched run(s) carry no code identity (imported: made "
            f"elsewhere); only the other {len(with_identity)} were compared"
        )
    dirty = [
        r.run_id
        for r in with_identity
        if any(isinstance(v, dict) and v.get("dirty") for v in (READERS["git"](r.code), READERS["files_git"](r.code)))
    ]
    if dirty:
        notes.append(
            f"{len(dirty)} run(s) were made in a git working tree with uncommitted changes to tracked "
            f"files (e.g. {dirty[0]}): the commit does not pin their code"
            + (" (the code file hashes do)" if "files" in compared else "")
        )
    source = python_source_note(with_identity)
    if source:
        notes.append(source)
    return CodeIdentity(
        status=status,
        parts=parts,
        compared=compared,
        declared=declared,
        reason=reason,
        examples=examples,
        runs=len(with_identity),
        without_identity=without,
        notes=notes,
    )


ASKED = "asked the program's interpreter"  # collect.collectors.command.identity.ASKED (gates reads no collector)


def python_source_note(records: Sequence[Record]) -> str | None:
    """One sentence on whose Python and packages the ``command`` runs among ``records`` recorded
    (module doc), or None when none says (``code.command.source`` absent)."""
    sources = [
        (r.run_id, source, _get(r.code, "command", "interpreter"))
        for r in records
        if isinstance(source := _get(r.code, "command", "source"), str)
    ]
    if not sources:
        return None
    asked = sorted({str(i) for _, s, i in sources if s == ASKED})
    collectors = [(rid, s) for rid, s, _ in sources if s != ASKED]
    parts = []
    if asked:
        parts.append(
            f"{len(sources) - len(collectors)} run(s) record the Python and packages of the program's own "
            f"interpreter, asked ({', '.join(asked[:3])}{' ...' if len(asked) > 3 else ''})"
        )
    if collectors:
        run_id, why = collectors[0]
        parts.append(
            f"{len(collectors)} run(s) record the collector's Python and packages, which need not be the "
            f"program's (e.g. {run_id}: {why})"
        )
    return "; ".join(parts)


def code_identity_refusal(check: CodeIdentity) -> str | None:
    """The decision-level refusal when a part the plan does not declare differs, or None."""
    undeclared = [e for e in check.examples if not e.declared]
    if not undeclared:
        return None
    names = ", ".join(e.part for e in undeclared)
    return (
        "code identity differs between runs: "
        + "; ".join(e.words() for e in undeclared)
        + "; the study's runs were not made by the same code (if the plan meant them to differ it must say "
        f"so before collection: 'code_identity: {{may_differ: [{names}], reason: ...}}')"
    )


__all__ = ["check_code_identity", "code_identity_refusal", "has_identity"]
