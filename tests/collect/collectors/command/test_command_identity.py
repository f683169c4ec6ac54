"""Whose Python a ``command`` run records (the program's interpreter, asked, or the collector's, said
plainly), and the thread counts a run is given from its CPUs."""

from __future__ import annotations

import json
import os
import platform
import sys
from pathlib import Path

import pytest

from collect.collectors.command import identity
from collect.collectors.command.identity import ASKED, package_versions, program_identity, python_interpreter
from collect.collectors.command.threads import THREAD_VARIABLES, inherited_threads, run_threads, thread_env

FAKE_ANSWER = {
    "executable": "/opt/fake/bin/python3",
    "version": "3.9.1",
    "implementation": "CPython",
    "packages": {"numpy": "1.21.0", "torch": None},
}


def _executable(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


def _fake_python(bin_dir: Path, answer: dict | None, count: Path) -> Path:
    """A 'python3' that counts its calls in ``count`` and prints ``answer`` as the identity snippet would
    (None: fails as an old Python without importlib.metadata would)."""
    marker = identity.ANSWER_MARKER
    body = (
        "echo 'ModuleNotFoundError: importlib.metadata' >&2; exit 1"
        if answer is None
        else f"echo 'a banner a sitecustomize printed'; echo '{marker}{json.dumps(answer)}'"
    )
    return _executable(bin_dir / "python3", f"#!/bin/sh\necho asked >> '{count}'\n{body}\n")


@pytest.fixture(autouse=True)
def fresh_cache():
    identity.forget_answers()
    yield
    identity.forget_answers()


def test_thread_env_gives_each_library_the_runs_cpus_unless_the_user_set_it():
    assert thread_env(4, {}) == {name: "4" for name in THREAD_VARIABLES}
    assert set(THREAD_VARIABLES) == {
        "OMP_NUM_THREADS",
        "MKL_NUM_THREADS",
        "OPENBLAS_NUM_THREADS",
        "NUMEXPR_NUM_THREADS",
        "VECLIB_MAXIMUM_THREADS",
    }
    assert [run_threads(x) for x in (0, 0.5, 1, 2.9, 16)] == [1, 1, 1, 2, 16]  # an integer, at least 1
    user = {"OMP_NUM_THREADS": "8", "MKL_NUM_THREADS": "", "PATH": "/bin"}
    added = thread_env(2, user)
    assert "OMP_NUM_THREADS" not in added and added["MKL_NUM_THREADS"] == "2"  # empty counts as unset
    assert set(added) == set(THREAD_VARIABLES) - {"OMP_NUM_THREADS"}
    assert user == {"OMP_NUM_THREADS": "8", "MKL_NUM_THREADS": "", "PATH": "/bin"}  # not changed
    assert inherited_threads(user) == {"OMP_NUM_THREADS": "8"}
    with pytest.raises(ValueError):
        run_threads(float("nan"))


def test_a_program_that_is_not_python_records_the_collectors_python_and_says_why(tmp_path):
    script = _executable(tmp_path / "run.sh", "#!/bin/sh\necho hi\n")
    got = program_identity(["./run.sh"], tmp_path, {"PATH": "/usr/bin:/bin"}, ["numpy"])
    assert got["python"] == {"version": platform.python_version(), "implementation": platform.python_implementation()}
    assert got["packages"] == package_versions(["numpy"]) and got["interpreter"] is None
    assert got["source"] == (
        f"the collector's Python (the program's interpreter was not asked: {script} is not a "
        "Python interpreter or a Python script (its #! line names /bin/sh))"
    )
    missing = program_identity(["no-such-program"], tmp_path, {"PATH": str(tmp_path / "empty")}, [])
    assert "'no-such-program' is not an executable found in" in missing["source"]
    assert missing["source"].startswith("the collector's Python (the program's interpreter was not asked: ")


def test_the_interpreter_is_found_on_the_runs_path_and_through_a_scripts_shebang(tmp_path):
    bin_dir = tmp_path / "venv" / "bin"
    python = _executable(bin_dir / "python3.11", "#!/bin/sh\n")
    env = {"PATH": f"{tmp_path / 'empty'}:{bin_dir}"}
    assert python_interpreter("python3.11", tmp_path, env) == python  # a bare name: the run's PATH
    assert python_interpreter(str(python), tmp_path, {}) == python
    _executable(tmp_path / "train.py", f"#!{python}\nprint(1)\n")
    assert python_interpreter("./train.py", tmp_path, {}) == python  # relative to workdir
    _executable(bin_dir / "torchrun", "#!/usr/bin/env -S python3.11 -u\nimport sys\n")
    assert python_interpreter("torchrun", tmp_path, env) == python  # a console script via env


@pytest.mark.subprocess
def test_the_programs_interpreter_is_asked_once_per_process(tmp_path):
    count = tmp_path / "asked.txt"
    bin_dir = tmp_path / "bin"
    fake = _fake_python(bin_dir, FAKE_ANSWER, count)
    env = {"PATH": str(bin_dir)}
    got = program_identity(["python3", "train.py"], tmp_path, env, ["numpy", "torch"])
    assert got == {
        "interpreter": "/opt/fake/bin/python3",
        "python": {"version": "3.9.1", "implementation": "CPython"},
        "packages": {"numpy": "1.21.0", "torch": None},
        "source": ASKED,
    }
    for _ in range(3):
        assert program_identity(["python3", "other.py"], tmp_path, env, ["numpy", "torch"]) == got
    assert count.read_text().split() == ["asked"]  # one question for many runs
    assert program_identity(["python3"], tmp_path, env, ["numpy"])["packages"] == {"numpy": "1.21.0"}
    assert len(count.read_text().split()) == 2  # other packages: asked again
    os.utime(fake, ns=(1, 1))  # the interpreter replaced (its mtime): asked again
    program_identity(["python3"], tmp_path, env, ["numpy"])
    assert len(count.read_text().split()) == 3


@pytest.mark.subprocess
def test_an_interpreter_that_cannot_answer_leaves_the_collectors_python_said_plainly(tmp_path):
    bin_dir = tmp_path / "bin"
    _fake_python(bin_dir, None, tmp_path / "asked.txt")
    got = program_identity(["python3", "train.py"], tmp_path, {"PATH": str(bin_dir)}, ["numpy"])
    assert got["python"]["version"] == platform.python_version() and got["interpreter"] is None
    assert got["source"] == (
        f"the collector's Python (the program's interpreter was not asked: {bin_dir / 'python3'} "
        "could not say (exit status 1: ModuleNotFoundError: importlib.metadata))"
    )


@pytest.mark.subprocess
def test_a_real_interpreter_is_asked_for_its_version_and_packages(tmp_path):
    """This venv's Python, asked for real: what it answers is what this process knows of itself."""
    env = {**os.environ, "PATH": str(Path(sys.executable).parent)}
    got = program_identity([Path(sys.executable).name, "train.py"], tmp_path, env, ["numpy", "no-such-dist-xyz"])
    assert got["source"] == ASKED
    assert got["python"] == {"version": platform.python_version(), "implementation": platform.python_implementation()}
    assert got["packages"] == {"numpy": package_versions(["numpy"])["numpy"], "no-such-dist-xyz": None}
    assert Path(got["interpreter"]).parent == Path(sys.executable).parent
