"""Repository-wide pytest hooks."""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest


def pytest_configure(config: pytest.Config) -> None:
    """Where the environment says not to write bytecode (``PYTHONDONTWRITEBYTECODE``), the console scripts and
    Python programs the tests launch would compile the project's modules again in every child; they share
    one bytecode cache instead, in a temporary folder removed at the end (``PYTHONPYCACHEPREFIX``), so
    nothing is written into the checkout. Set once, by the main process, before pytest-xdist starts its
    workers (they and every child inherit it)."""
    if os.environ.get("PYTEST_XDIST_WORKER") or os.environ.get("PYTHONPYCACHEPREFIX"):
        return
    if not os.environ.get("PYTHONDONTWRITEBYTECODE"):
        return
    prefix = tempfile.mkdtemp(prefix="prereg-tests-pycache-")
    os.environ["PYTHONPYCACHEPREFIX"] = prefix
    del os.environ["PYTHONDONTWRITEBYTECODE"]
    config.add_cleanup(lambda: shutil.rmtree(prefix, ignore_errors=True))


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """A run that collected no tests is a failure, not a silent pass (pytest's exit 5 -> 1)."""
    if exitstatus == 5:
        session.exitstatus = 1
