"""One owner per on-disk format, checked on the source with ``ast``.

* A JSON parser is called in one module only, the codec ``prereg/jsoncodec.py`` (``json.loads``,
  ``json.load``, ``from json import loads``).
* The codec's reader (``prereg.jsoncodec.loads``) is imported only by the owner of a format, each
  named below with the format it reads.
* A format's version string (``collect/run/v2``, ``gates/evaluation/v...``, ...) is spelled, as a
  string in code, only by its owner: everybody else uses the owner's constant.
* A run id's ``run-``/``imp-`` hash is made by ``collect.ledger.records.run_id`` alone.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("estimators", "prereg", "collect", "gates", "reports", "prereg_toolkit_cli", "studies/prereg_seed_studies")
CODEC = "prereg/jsoncodec.py"
#: module -> the format whose bytes it parses with the codec
READERS = {
    "collect/importing/trackers/wandb_offline.py": "W&B's reader's JSON-lines output (wandb leet inspect --json)",
    "collect/importing/trackers/raytune_dir.py": "a Ray Tune experiment's experiment_state-*.json, params.json and result.json",
    "prereg/lock.py": "the lock (<stem>.lock.json)",
    "collect/ledger/reading.py": "the ledger (ledger.jsonl)",
    "collect/ledger/journal.py": "the ledger's batch journal (.ledger.pending)",
    "collect/ledger/looks.py": "the look ledger of a monitored plan (looks.jsonl)",
    "collect/ledger/runlock.py": "the runs folder's writer lock (.collect.lock)",
    "collect/traces/lines.py": "the JSON-lines traces (events, commits) and JSON-lines Zeus logs",
    "collect/traces/telemetry.py": "the telemetry trace's meta file",
    "studies/prereg_seed_studies/torch/warmstart.py": "the warm start's sidecar",
    "collect/importing/importer.py": "a user's JSON-lines table of runs",
    "collect/collectors/command/outputs.py": "a command run's metrics file (metrics.json)",
    "collect/collectors/command/identity.py": "the program interpreter's answer (its Python and packages)",
    "gates/artifact.py": "the evaluation (evaluation.json)",
}
#: format family -> the modules that may spell its version string
VERSIONS = {
    "prereg/lock/v": {"prereg/lock.py", "prereg/lock_schema.py"},
    "collect/run/v": {"collect/ledger/records.py"},
    "collect/looks/v": {"collect/ledger/looks.py"},
    "collect/trace/v": {"collect/traces/telemetry.py"},
    "gates/evaluation/v": {"gates/artifact.py"},
}
VERSION_STRING = re.compile(r"^(prereg/lock|collect/run|collect/looks|collect/trace|gates/evaluation)/v\d+$")


@cache
def _parsed() -> tuple[tuple[str, ast.Module], ...]:
    return tuple(
        (path.relative_to(ROOT).as_posix(), ast.parse(path.read_text(), str(path)))
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
    )


def modules() -> Iterator[tuple[str, ast.Module]]:
    """(path relative to the root, its syntax tree) of every module of the packages, parsed once."""
    yield from _parsed()


def docstrings(tree: ast.Module) -> set[int]:
    """ids of the docstring constants (their text may name a format)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    return out


def test_json_is_parsed_only_by_the_codec():
    calls = []
    for rel, tree in modules():
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and node.attr in ("loads", "load")
                and isinstance(node.value, ast.Name)
                and node.value.id == "json"
            ):
                calls.append(f"{rel}:{node.lineno}: json.{node.attr}")
            if isinstance(node, ast.ImportFrom) and node.module == "json":
                calls += [
                    f"{rel}:{node.lineno}: from json import {a.name}" for a in node.names if a.name in ("loads", "load")
                ]
    assert calls and all(c.startswith(CODEC) for c in calls), [c for c in calls if not c.startswith(CODEC)]


def test_the_codecs_reader_is_used_only_by_the_owner_of_a_format():
    users = {}
    for rel, tree in modules():
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == "prereg.jsoncodec":
                if any(a.name == "loads" for a in node.names):
                    users[rel] = node.lineno
            if (
                isinstance(node, ast.Attribute)
                and node.attr == "loads"
                and isinstance(node.value, ast.Name)
                and node.value.id == "jsoncodec"
            ):
                users[rel] = node.lineno
    assert set(users) == set(READERS), {
        "not an owner": sorted(set(users) - set(READERS)),
        "owner no longer reading": sorted(set(READERS) - set(users)),
    }


def test_a_format_version_is_spelled_only_by_its_owner():
    found: dict[str, set[str]] = {family: set() for family in VERSIONS}
    for rel, tree in modules():
        skip = docstrings(tree)
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and id(node) not in skip
                and VERSION_STRING.match(node.value)
            ):
                family = node.value[: node.value.rindex("/v") + 2]
                found[family].add(rel)
    for family, owners in VERSIONS.items():
        assert found[family] and found[family] <= owners, (family, sorted(found[family] - owners))


def test_run_ids_are_made_in_one_place():
    makers = []
    for rel, tree in modules():
        skip = docstrings(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and node.value in ("run-", "imp-") and id(node) not in skip:
                makers.append(rel)
    assert sorted(set(makers)) == ["collect/ledger/records.py"], makers
