"""``--help`` of a console script loads argparse, the shared kit and the script's own module: no library module
of the toolkit (those load inside the command that runs), so ``--help`` costs little more than ``python -c pass``."""

from __future__ import annotations

import subprocess
import sys

import pytest

TOOLKIT = ("prereg", "collect", "estimators", "gates", "reports", "prereg_toolkit_cli")
#: what every script's --help may load: the kit, the exit codes and exception base it re-exports, the version
ALLOWED = {
    "prereg_toolkit_cli",
    "prereg_toolkit_cli.kit",
    "prereg",  # the package of prereg.errors (its names load lazily)
    "prereg._version",
    "prereg.errors",
    "estimators",  # the package of estimators.lazy, the lazy loader prereg's __init__ uses
    "estimators.lazy",
}
OWN_PARTS = {
    "collect": {"prereg_toolkit_cli.collect_try", "prereg_toolkit_cli.collect_trackers"}
}  # a script's subcommand kept in a module of its own


@pytest.mark.subprocess(quick=True)
@pytest.mark.parametrize("script", ["prereg", "collect", "gates", "reports"])
def test_help_loads_no_library_module(script: str) -> None:
    code = (
        "import contextlib, io, sys\n"
        f"from prereg_toolkit_cli.{script} import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    try:\n        main(['--help'])\n    except SystemExit:\n        pass\n"
        f"print(' '.join(sorted(m for m in sys.modules if m.split('.')[0] in {TOOLKIT!r})))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    loaded = set(out.stdout.split())
    assert f"prereg_toolkit_cli.{script}" in loaded  # the probe saw the script's own import
    extra = loaded - ALLOWED - OWN_PARTS.get(script, set()) - {f"prereg_toolkit_cli.{script}"}
    assert extra == set(), f"{script} --help loads {sorted(extra)}"
