"""Property tests: no input, however broken, produces a traceback or an internal error."""

from __future__ import annotations

import copy
import tempfile
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from prereg.plan import PlanError, parse_plan
from prereg_toolkit_cli.prereg import main
from tests.conftest import shared_example_path

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=20),
)
json_like = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=20,
)


def accepts_or_refuses(raw: bytes) -> None:
    try:
        parse_plan(raw, "fuzz.yaml")
    except PlanError as err:
        assert err.problems and all(p.message for p in err.problems)
        assert err.render()


@FUZZ
@given(st.binary(max_size=400))
def test_random_bytes(raw):
    accepts_or_refuses(raw)


@pytest.mark.slow  # many generated cases or a reference library: the slow tier
@FUZZ
@given(json_like)
def test_random_yaml_documents(doc):
    accepts_or_refuses(yaml.safe_dump(doc).encode())


@FUZZ
@given(st.text(max_size=300))
def test_random_text(text):
    accepts_or_refuses(text.encode())


def _paths(value, prefix=()):
    yield prefix
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _paths(v, (*prefix, i))


def mutate_one_field(data, document, actions: list[str]) -> None:
    """Replace, delete or add (one of ``actions``) a field at a random path of ``document``."""
    path = data.draw(st.sampled_from([p for p in _paths(document) if p]))
    parent = document
    for part in path[:-1]:
        parent = parent[part]
    action = data.draw(st.sampled_from(actions))
    if action == "replace":
        parent[path[-1]] = data.draw(json_like)
    elif action == "delete":
        del parent[path[-1]]
    elif isinstance(parent, dict):
        parent[data.draw(st.text(max_size=8))] = data.draw(json_like)
    else:
        parent.append(data.draw(json_like))


BASE = None


def base_plan() -> dict:
    global BASE
    if BASE is None:
        BASE = yaml.safe_load(shared_example_path("cadence-energy.yaml").read_bytes())
    return copy.deepcopy(BASE)


@pytest.mark.slow
@FUZZ
@given(st.data())
def test_mutated_plans(data):
    """Replace, delete or add one field anywhere in a valid plan: accepted or refused, never a crash."""
    plan = base_plan()
    mutate_one_field(data, plan, ["replace", "delete", "add"])
    accepts_or_refuses(yaml.safe_dump(plan).encode())


@pytest.mark.slow  # many generated cases or a reference library: the slow tier
@settings(max_examples=60, deadline=None)
@given(st.binary(max_size=300))
def test_cli_validate_never_crashes(raw):
    with tempfile.TemporaryDirectory() as folder:
        target = Path(folder) / "plan.yaml"
        target.write_bytes(raw)
        assert main(["validate", str(target)]) in (0, 2)
        assert main(["verify", str(target)]) in (0, 2, 3)


@pytest.mark.parametrize("argv", [["validate", "/"], ["verify", "/"], ["show", "/nonexistent"], ["freeze", "/"]])
def test_cli_paths_that_are_not_files(argv, capsys):
    assert main(argv) == 2
    assert "Traceback" not in capsys.readouterr().err


LOCKS: dict = {}


def amended_lock() -> dict:
    """A lock with one amendment, built once through the library."""
    if not LOCKS:
        from prereg.lock import amend_lock, build_lock, lock_hash

        raw = shared_example_path("equal-work.yaml").read_bytes()
        first = parse_plan(raw, "equal-work.yaml")
        second = parse_plan(raw.replace(b"upper < 0.02", b"upper < 0.03"), "equal-work.yaml")
        lock = amend_lock(build_lock(first, "equal-work.yaml"), second, "equal-work.yaml", "pilot", None)
        lock["lock_sha256"] = lock_hash(lock)
        LOCKS["lock"] = lock
    return copy.deepcopy(LOCKS["lock"])


@pytest.mark.slow
@settings(max_examples=120, deadline=None)
@given(st.data())
def test_tampered_locks_never_crash_verify_or_show(data):
    """Any one-field tampering of a lock: verify and show exit 3 (or 0 if harmless), never 4."""
    import json

    lock = amended_lock()
    mutate_one_field(data, lock, ["replace", "delete"])
    with tempfile.TemporaryDirectory() as folder:
        target = Path(folder) / "x.lock.json"
        target.write_text(json.dumps(lock))
        for argv in (["verify", str(target)], ["show", str(target)], ["show", "--json", str(target)]):
            assert main(argv) in (0, 2, 3), argv
