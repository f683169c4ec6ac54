"""Project-level contracts: the README's commands, CI, and console scripts that start light."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from tests.conftest import REPO

HEAVY = ("torch", "statsmodels", "pandas", "scipy", "numpy", "pydantic", "yaml", "rich")


def readme_commands() -> list[str]:
    text = (REPO / "README.md").read_text()
    return re.findall(r"```\n(python3 -m venv[^\n]*)\n```", text)


def test_readme_has_exactly_two_setup_commands_near_the_top():
    commands = readme_commands()
    assert len(commands) == 2
    head = (REPO / "README.md").read_text()[:1500]
    assert all(c in head for c in commands)
    assert "pytest" in commands[1] and "prereg freeze" in commands[0]


def test_ci_runs_the_readme_test_command_verbatim():
    ci = (REPO / ".ci" / "run").read_text()
    assert readme_commands()[1] in ci.splitlines()


def test_torch_cpu_build_installed_before_the_torch_extra():
    command = readme_commands()[1]
    assert command.index("pip install torch==2.13.0") < command.index(".[dev,torch,ray,plot]")


@pytest.mark.subprocess(quick=True)
def test_console_scripts_start_without_heavy_imports():
    """`--help` of every console script imports none of the heavy libraries."""
    for module in (
        "prereg_toolkit_cli.prereg",
        "prereg_toolkit_cli.collect",
        "prereg_toolkit_cli.gates",
        "prereg_toolkit_cli.reports",
    ):
        code = (
            "import sys, contextlib, io\n"
            f"from {module} import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    try:\n        main(['--help'])\n    except SystemExit:\n        pass\n"
            f"print(' '.join(m for m in {HEAVY!r} if m in sys.modules))\n"
        )
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        assert out.stdout.strip() == "", f"{module} --help imported {out.stdout.strip()}"
