"""Shared fixtures: the repository root and the shared example plans."""

from __future__ import annotations

import os
import tempfile
import types
from pathlib import Path

import pytest

from tests.helpers.prefetch import Prefetcher

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


@pytest.fixture(scope="session")
def prefetched(request: pytest.FixtureRequest) -> Prefetcher:
    """The session's prefetched jobs (tests/helpers/prefetch.py): ``prefetched.result(NAME)`` for a test
    marked ``@pytest.mark.prefetch(NAME)``, done in the background since collection, else here."""
    found = request.config.stash.get(PREFETCHER, None)
    if found is None:  # no runner was started (e.g. a plugin collected the items): every job in the foreground
        found = request.config.stash[PREFETCHER] = Prefetcher(_prefetch_base(request.config))
    return found


@pytest.fixture
def equal_work_bytes() -> bytes:
    """The shared equal-work plan, as raw bytes."""
    return shared_example_path("equal-work.yaml").read_bytes()


@pytest.fixture
def cadence_bytes() -> bytes:
    """The shared cadence-energy plan, as raw bytes."""
    return shared_example_path("cadence-energy.yaml").read_bytes()


# -- tiers -------------------------------------------------------------------------------------------------
# A test is marked `subprocess` when its code, its fixtures' code or the tests' own helpers they call (followed
# through tests.* functions and modules) reach the subprocess module: a console script or a python child.
# Such a test is also `slow` (each child pays an interpreter and the numpy/scipy imports, 0.3-0.6 s), except
# the smoke tests marked `@pytest.mark.subprocess(quick=True)`: a few per console script stay in the quick tier.


def _launches(code: types.CodeType, namespace: dict, seen: set[int]) -> bool:
    """Whether ``code`` (with its nested functions) names ``subprocess`` or a tests.* helper that does."""
    if id(code) in seen:
        return False
    seen.add(id(code))
    names = set(code.co_names)
    for value in [namespace.get(name) for name in names]:
        if isinstance(value, types.ModuleType):
            if value.__name__ == "subprocess":
                return True
            if value.__name__.startswith("tests."):  # `helpers.run(...)`: the attributes it names
                for attr in names & set(vars(value)):
                    if _reaches(getattr(value, attr), seen):
                        return True
        elif _reaches(value, seen):
            return True
    return any(isinstance(c, types.CodeType) and _launches(c, namespace, seen) for c in code.co_consts)


def _reaches(value: object, seen: set[int]) -> bool:
    """Whether ``value`` is a subprocess function or a tests.* function (or class) whose code launches one."""
    module = getattr(value, "__module__", None) or ""
    if module == "subprocess":
        return True
    if not module.startswith("tests"):
        return False
    if isinstance(value, type):
        return any(_reaches(v, seen) for v in vars(value).values())
    func = getattr(value, "__func__", value)
    code = getattr(func, "__code__", None)
    return code is not None and _launches(code, func.__globals__, seen)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test that launches a child process ``subprocess``, and ``slow`` unless it is a quick one."""
    for item in items:
        func = getattr(item, "function", None)
        marker = item.get_closest_marker("subprocess")
        if marker is None and func is not None:
            seen: set[int] = set()
            fixtures = [defs[-1].func for defs in item._fixtureinfo.name2fixturedefs.values()]  # type: ignore[attr-defined]
            if any(_reaches(f, seen) for f in [func, *fixtures]):
                item.add_marker(pytest.mark.subprocess)
                marker = item.get_closest_marker("subprocess")
        if marker is not None and not marker.kwargs.get("quick") and not item.get_closest_marker("slow"):
            item.add_marker(pytest.mark.slow)


# -- prefetch ------------------------------------------------------------------------------------------
# Long self-contained jobs (a docs page's blocks, the energy studies, the torch demo, mypy) start in one
# background runner once the session's tests are known, on the core the one-at-a-time tests leave idle;
# the tests marked `@pytest.mark.prefetch(NAME)` read their outcome (tests/helpers/prefetch.py).
PREFETCHER = pytest.StashKey[Prefetcher]()


def _prefetch_base(config: pytest.Config) -> Path:
    factory = getattr(config, "_tmp_path_factory", None)  # the tmp_path factory of the tmpdir plugin
    return factory.mktemp("prefetch") if factory is not None else Path(tempfile.mkdtemp(prefix="pytest-prefetch-"))


def _skipped(item: pytest.Item) -> bool:
    """Whether a ``skipif`` with a plain boolean condition skips ``item`` (string conditions: not skipped)."""
    for marker in item.iter_markers("skipif"):
        condition = marker.args[0] if marker.args else marker.kwargs.get("condition")
        if condition is True:
            return True
    return any(True for _ in item.iter_markers("skip"))


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "prefetch(name): the test reads job NAME of tests/helpers/prefetch.py, "
        "started in the background when the session's tests are collected",
    )


def pytest_collection_finish(session: pytest.Session) -> None:
    """Start the background runner on the jobs the selected, not skipped tests will read, in their order."""
    if session.config.option.collectonly or not session.items or os.environ.get("TESTS_PREFETCH") == "0":
        return  # TESTS_PREFETCH=0: every job in the foreground, when its test asks (to compare, or to debug one)
    names = [m.args[0] for item in session.items if not _skipped(item) for m in item.iter_markers("prefetch")]
    prefetcher = Prefetcher(_prefetch_base(session.config))
    prefetcher.start(names)
    session.config.stash[PREFETCHER] = prefetcher


def pytest_sessionfinish(session: pytest.Session) -> None:
    """No runner outlives the session (one still going, after an interrupted run or -x, is stopped)."""
    prefetcher = session.config.stash.get(PREFETCHER, None)
    if prefetcher is not None:
        prefetcher.stop()
