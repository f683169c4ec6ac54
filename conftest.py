"""Repository-wide pytest hooks."""


def pytest_sessionfinish(session, exitstatus):  # type: ignore[no-untyped-def]
    """A run that collected no tests is a failure, not a silent pass (pytest's exit 5 -> 1)."""
    if exitstatus == 5:
        session.exitstatus = 1
