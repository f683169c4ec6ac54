"""Shared fixtures (the repository root, the shared example plans) and the suite's tiers and the tests
kept one at a time under pytest-xdist (docs/performance.md#the-test-suite)."""

from __future__ import annotations

import fcntl
import os
import types
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# Byte-for-byte copies of the shared example plans (the v1 plans the tool must accept as written), kept in
# the repository so a clone anywhere runs every test; tests/test_fixtures.py pins their hashes.
SHARED_EXAMPLES = REPO / "tests" / "fixtures" / "shared_examples"
OWN_EXAMPLES = REPO / "examples"


def shared_example_path(name: str) -> Path:
    """Path of the repository's copy of the shared example plan ``<name>``."""
    path = SHARED_EXAMPLES / name
    assert path.is_file(), f"missing fixture {path}"
    return path


@pytest.fixture(scope="session")
def torch() -> types.ModuleType:
    """torch, imported by the first test that asks for it (collection never does); skips where it is missing."""
    return pytest.importorskip("torch")  # lazy: seconds of import


@pytest.fixture
def equal_work_bytes() -> bytes:
    """The shared equal-work plan, as raw bytes."""
    return shared_example_path("equal-work.yaml").read_bytes()


@pytest.fixture
def cadence_bytes() -> bytes:
    """The shared cadence-energy plan, as raw bytes."""
    return shared_example_path("cadence-energy.yaml").read_bytes()


# -- tiers and scheduling ------------------------------------------------------------------------------
# A test that launches a console script or a python child process says so: `@pytest.mark.subprocess` (or a
# module's `pytestmark`); it is then `slow` too (each child pays an interpreter and the numpy/scipy imports),
# except the smoke tests marked `@pytest.mark.subprocess(quick=True)`, a few per console script.
# pytest-xdist hands whole groups of tests to workers (`--dist loadgroup`, the groups below): a module's
# tests go together (its fixtures are made once), and the modules marked `ray_instance` (they start Ray) form
# one group, run in turn by one worker while the others go on. The tests that use a GPU, and the Ray modules
# wherever the groups are not honoured (`-p no:xdist`, a pytest whose node ids xdist cannot tag: pytest-xdist
# issue 1386), run one at a time through locks. A module that names Ray's executor without starting Ray says
# why in a `# starts no Ray instance:` comment (tests/test_test_layout.py checks).


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto`: one worker more than the CPUs this process may use. Several modules wait more than they
    compute (Ray's start-ups and its agents' exits, kill -9 recoveries, the Ray lock below), and the extra
    worker keeps the cores busy meanwhile."""
    return len(os.sched_getaffinity(0)) + 1 if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1) + 1


RAY_GROUP = "ray_instance"  # the marker of the modules that start Ray, and their xdist group


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects, and before pytest-xdist reads the groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """``slow`` on every ``subprocess`` test but the quick ones; each test's ``xdist_group``: the Ray
    modules' one group, else its module."""
    for item in items:
        marker = item.get_closest_marker("subprocess")
        if marker is not None and not marker.kwargs.get("quick") and item.get_closest_marker("slow") is None:
            item.add_marker(pytest.mark.slow)
        ray = item.get_closest_marker(RAY_GROUP) is not None
        item.add_marker(pytest.mark.xdist_group(RAY_GROUP if ray else item.nodeid.split("::")[0]))


def _held(tmp_path_factory: pytest.TempPathFactory, group: str) -> Iterator[None]:
    """An exclusive lock named ``group``, shared by the session's workers (their common temporary folder),
    held while the caller's tests run; a run without workers has nothing to share it with."""
    if "PYTEST_XDIST_WORKER" not in os.environ:
        yield
        return
    fd = os.open(tmp_path_factory.getbasetemp().parent / f"{group}.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # waits while another worker holds it
        yield
    finally:
        os.close(fd)  # releases the lock


@pytest.fixture(scope="module", autouse=True)
def _ray_one_module_at_a_time(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    """A module that starts Ray (clusters, the session folder under /tmp/ray) has Ray to itself, module
    fixtures included (autouse fixtures come first in their scope). A local ``ray.init`` sets
    RAY_AUTH_MODE=token in this process for good (Ray keeps its configuration): a test that starts a head of
    its own says which authentication it has."""
    if request.node.get_closest_marker(RAY_GROUP) is not None:
        yield from _held(tmp_path_factory, "ray")
    else:
        yield


@pytest.fixture(autouse=True)
def _gpu_one_test_at_a_time(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    """A test that uses a GPU has it to itself."""
    if request.node.get_closest_marker("gpu") is not None:
        yield from _held(tmp_path_factory, "gpu")
    else:
        yield
