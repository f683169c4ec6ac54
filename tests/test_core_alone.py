"""The core installs and works without the seed studies: a user study end to end, and a plugin-named plan refused.

A fresh virtual environment gets the core distribution (built from a copy of this checkout's core packages,
no network, no build isolation) and the dev environment's third-party packages through a ``.pth`` path
entry that leaves out ``prereg_seed_studies`` and every toolkit install. There a plan of the ``command``
collector is frozen, collected, evaluated (SUPPORTED) and rendered as HTML, and ``collect run`` of a plan naming
``sim.multisite`` (frozen where the studies are installed) is refused with exit 2 naming it.
"""

from __future__ import annotations

import fnmatch
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.helpers import run

pytestmark = pytest.mark.slow

HANG_S = 300  # catches a hang only

PROGRAM = """\
import json, os
run = json.load(open(os.environ["PREREG_RUN"]))
seed, level = run["seed"], run["params"]["level"]
loss = 2.0 + (seed % 7) / 10 - level * (1.0 + (seed % 13) / 200)
json.dump({"loss": loss}, open(os.environ["PREREG_METRICS"], "w"))
"""

PLAN = """\
schema: prereg/v1
study: core-alone
title: Does the better arm lower the loss?
hypothesis: The better arm lowers a stand-in loss by about one nat in every stratum.
experiment:
  collector: command
  params:
    argv: [python, prog.py]
    code: [prog.py]
    timeout_s: 120
    packages: []
arms:
  base: {level: 0}
  better: {level: 1}
strata:
  factors:
    site: [0, 1, 2, 3, 4, 5]
  replicates: 1
metrics:
  loss: {unit: nats, better: lower, evidence: measured}
gates:
  - id: lower_loss
    metric: loss
    contrast: better - base
    method: t
    confidence: 0.90
    pass_if: upper < 0
decision:
  claim: The better arm lowers the loss.
  require: all
  multiplicity: none
"""


def _core_packages() -> list[str]:
    """The top-level packages the core distribution ships (its ``packages.find`` include patterns)."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    include = project["tool"]["setuptools"]["packages"]["find"]["include"]
    return sorted(
        p.name
        for p in REPO.iterdir()
        if (p / "__init__.py").is_file() and any(fnmatch.fnmatch(p.name, pattern) for pattern in include)
    )


def _is_toolkit_entry(name: str, core: list[str]) -> bool:
    """Whether a site-packages entry belongs to an install of the toolkit or of its seed studies."""
    stem = name.split("-")[0].split(".")[0]
    return (
        stem in core
        or name.startswith(("prereg_toolkit", "prereg_seed_studies", "__editable__"))
        or name.endswith(".pth")
    )


class CoreVenv:
    """A virtual environment holding the core distribution alone, and how to run its console scripts."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.bin = folder / "venv" / "bin"
        self.env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")}
        self.env.update(PATH=f"{self.bin}{os.pathsep}{os.defpath}", NO_COLOR="1", PIP_DISABLE_PIP_VERSION_CHECK="1")

    def run(self, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            [str(self.bin / args[0]), *args[1:]], cwd=cwd, env=self.env, capture_output=True, text=True, timeout=HANG_S
        )
        assert "Traceback" not in proc.stderr + proc.stdout, proc.stderr
        return proc


@pytest.fixture(scope="module")
def core(tmp_path_factory: pytest.TempPathFactory) -> CoreVenv:
    folder = tmp_path_factory.mktemp("core-alone")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder / "venv")], check=True, timeout=HANG_S)
    venv = CoreVenv(folder)
    core = _core_packages()
    deps = folder / "deps"  # the dev environment's third-party packages, without any toolkit install
    deps.mkdir()
    for entry in Path(sysconfig.get_paths()["purelib"]).iterdir():
        if not _is_toolkit_entry(entry.name, core) and entry.name != "__pycache__":
            (deps / entry.name).symlink_to(entry)
    site = subprocess.run(
        [str(venv.bin / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        env=venv.env,
        capture_output=True,
        text=True,
        check=True,
        timeout=HANG_S,
    ).stdout.strip()
    Path(site, "dev-deps.pth").write_text(f"{deps}\n")
    # a copy of the core's sources: building in the checkout itself would leave build/ and egg-info there
    source = folder / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, source / name)
    for package in core:
        shutil.copytree(REPO / package, source / package, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    pip = ["python", "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--no-index", "--no-cache-dir"]
    venv.run(*pip, str(source), cwd=folder).check_returncode()
    return venv


def test_the_core_alone_has_no_seed_study(core: CoreVenv) -> None:
    probe = (
        "import importlib.util, collect, importlib.metadata as m; "
        "print(importlib.util.find_spec('prereg_seed_studies') is None, collect.__file__, "
        "sorted(e.name for e in m.entry_points(group='prereg_toolkit.collectors')))"
    )
    proc = core.run("python", "-c", probe, cwd=core.folder)
    absent, where, names = proc.stdout.split(" ", 2)
    assert proc.returncode == 0 and absent == "True", proc.stderr
    assert Path(where).is_relative_to(core.folder / "venv")  # the installed core, not this checkout
    assert names.strip() == "['command']"


def test_a_user_study_runs_end_to_end_on_the_core_alone(core: CoreVenv, tmp_path: Path) -> None:
    (tmp_path / "prog.py").write_text(PROGRAM)
    (tmp_path / "study.yaml").write_text(PLAN)
    frozen = core.run("prereg", "freeze", "study.yaml", "-o", "study.lock.json", cwd=tmp_path)
    assert frozen.returncode == 0, frozen.stderr
    collected = core.run("collect", "run", "study.lock.json", "--out", "runs", cwd=tmp_path)
    assert collected.returncode == 0, collected.stderr
    records = (tmp_path / "runs" / "ledger.jsonl").read_text().splitlines()
    assert len(records) == 12 and all(json.loads(r)["status"] == "complete" for r in records)
    evaluated = core.run("gates", "evaluate", "study.lock.json", "runs", cwd=tmp_path)
    assert evaluated.returncode == 0, evaluated.stderr  # 0: supported
    evaluation = json.loads((tmp_path / "runs" / "evaluation.json").read_text())
    assert evaluation["decision"] == "supported"
    assert [(g["id"], g["verdict"]) for g in evaluation["gates"]] == [("lower_loss", "pass")]
    page = core.run("reports", "html", "runs", "-o", "report.html", cwd=tmp_path)  # no study's section to load
    assert page.returncode == 0 and "lower_loss" in (tmp_path / "report.html").read_text(), page.stderr


def test_a_plan_naming_a_study_collector_is_refused_without_it(core: CoreVenv, tmp_path: Path) -> None:
    shutil.copy2(REPO / "examples" / "multisite-recovery.yaml", tmp_path / "study.yaml")
    # frozen where the seed studies are installed (this dev environment), run where they are not
    frozen = run("prereg", "freeze", "study.yaml", "-o", "study.lock.json", cwd=tmp_path)
    assert frozen.returncode == 0, frozen.stderr
    refused = core.run("collect", "run", "study.lock.json", "--out", "runs", cwd=tmp_path)
    assert refused.returncode == 2, refused.stderr
    assert "unknown collector 'sim.multisite'" in refused.stderr and "installed: command" in refused.stderr
    assert not (tmp_path / "runs" / "ledger.jsonl").exists()
