"""Code identity of a ``command`` run: what program, at which version, with which packages.

More in ``docs/internals.md``.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import threading
from collections.abc import Mapping
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, Final

from prereg.errors import ToolkitError
from prereg.jsoncodec import canonical_bytes, loads
from prereg.lock import environment_info


def file_sha256(path: Path) -> str:
    """SHA-256 of a file's bytes (read in 1 MiB chunks)."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def package_versions(names: list[str]) -> dict[str, str | None]:
    """Installed version of each distribution (None when it is not installed), never importing it."""
    out: dict[str, str | None] = {}
    for name in names:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = None
    return out


def git_identity(workdir: Path) -> Any:
    """The git commit and dirty flag of the repository holding ``workdir`` (None outside one)."""
    return environment_info(workdir.resolve())["git"]


def file_hashes(files: list[Path], workdir: Path) -> dict[str, str]:
    """Path (relative to ``workdir``, POSIX separators) -> SHA-256 of each file: how a run's code files are hashed."""
    root = workdir.resolve()
    return {p.relative_to(root).as_posix(): file_sha256(p) for p in files}


def code_identity(files: list[Path], workdir: Path, git: Any = ...) -> dict[str, Any]:
    """The run's code files and their repository (see the module doc; its Python and packages come from
    :func:`program_identity`); ``git``: the ``files_git`` the driver learnt, for a run on a private copy
    of the code files (Ray), else read here."""
    hashes = file_hashes(files, workdir)
    return {
        "files": hashes,
        "files_sha256": hashlib.sha256(canonical_bytes(hashes)).hexdigest(),
        "files_git": git_identity(workdir.resolve()) if git is ... else git,
    }


ASK_TIMEOUT_S: Final = 20.0  # the program's interpreter's time to answer (s)
ASKED: Final = "asked the program's interpreter"
COLLECTORS: Final = "the collector's Python (the program's interpreter was not asked: {why})"
_PYTHON_NAME: Final = re.compile(r"^(python|pypy)(\d+(\.\d+)*)?[a-z]?(\.exe)?$")
ANSWER_MARKER: Final = "PREREG-PROGRAM-IDENTITY "
#: run by the program's interpreter: its executable, version and the versions of argv[1]'s names (JSON)
_SNIPPET: Final = (
    "import json, platform, sys\n"
    "from importlib.metadata import PackageNotFoundError, version\n"
    "def v(n):\n"
    "    try:\n"
    "        return version(n)\n"
    "    except PackageNotFoundError:\n"
    "        return None\n"
    "print(" + repr(ANSWER_MARKER) + " + json.dumps({'executable': sys.executable, "
    "'version': platform.python_version(), 'implementation': platform.python_implementation(), "
    "'packages': {n: v(n) for n in json.loads(sys.argv[1])}}))\n"
)
_cache: dict[tuple[Any, ...], dict[str, Any]] = {}
_cache_lock = threading.Lock()


class NotAsked(ToolkitError):
    """Why the program's interpreter was not (or could not be) asked, in words (never leaves
    :func:`program_identity`, which records the collector's Python with it)."""


def resolve_program(argv0: str, workdir: Path, env: Mapping[str, str]) -> Path | None:
    """The file ``argv0`` runs as the program is started (in ``workdir`` with ``env``): a name holding a
    ``/`` relative to ``workdir``, a bare name looked up on ``env``'s ``PATH`` (``os.defpath`` without
    one); None when nothing executable is found."""
    if "/" in argv0:
        path = Path(argv0) if Path(argv0).is_absolute() else workdir / argv0
        return path if path.is_file() and os.access(path, os.X_OK) else None
    found = shutil.which(argv0, path=env.get("PATH", os.defpath))
    if found is None:
        return None
    return Path(found)


def _shebang(path: Path) -> list[str]:
    """The words of ``path``'s ``#!`` line (empty when it has none, or it cannot be read)."""
    try:
        with open(path, "rb") as f:
            head = f.read(256)
    except OSError:
        return []
    if not head.startswith(b"#!"):
        return []
    return head[2:].split(b"\n", 1)[0].decode("utf-8", "replace").split()


def python_interpreter(argv0: str, workdir: Path, env: Mapping[str, str]) -> Path:
    """The Python interpreter that runs the program ``argv0`` names (module doc); ``NotAsked`` with
    the reason when it is not a Python program."""
    path = resolve_program(argv0, workdir, env)
    if path is None:
        raise NotAsked(f"{argv0!r} is not an executable found in {workdir} or on the run's PATH")
    if _PYTHON_NAME.match(path.name):
        return path
    words = _shebang(path)
    if words and Path(words[0]).name == "env":  # '#!/usr/bin/env python3' (options such as -S skipped)
        words = [w for w in words[1:] if not w.startswith("-") and "=" not in w][:1]
        interpreter = resolve_program(words[0], workdir, env) if words else None
    else:
        interpreter = Path(words[0]) if words else None
    if interpreter is not None and _PYTHON_NAME.match(interpreter.name):
        return interpreter
    shown = f" (its #! line names {' '.join(words)})" if words else ""
    raise NotAsked(f"{path} is not a Python interpreter or a Python script{shown}")


def _ask(interpreter: Path, workdir: Path, env: Mapping[str, str], packages: list[str]) -> dict[str, Any]:
    """The interpreter's answer to :data:`_SNIPPET`; ``NotAsked`` when it fails or times out."""
    try:
        proc = subprocess.run(
            [str(interpreter), "-c", _SNIPPET, json.dumps(packages)],
            cwd=workdir,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=ASK_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise NotAsked(f"{interpreter} did not answer within {ASK_TIMEOUT_S:g} s") from None
    except OSError as err:
        raise NotAsked(f"{interpreter} could not be started ({err.strerror or err})") from None
    lines = [ln for ln in proc.stdout.decode("utf-8", "replace").splitlines() if ln.startswith(ANSWER_MARKER)]
    if proc.returncode != 0 or not lines:
        tail = proc.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or ["nothing on stderr"]
        raise NotAsked(f"{interpreter} could not say (exit status {proc.returncode}: {tail[0][:200]})")
    try:
        answer = loads(lines[-1][len(ANSWER_MARKER) :])
        packages_found = {str(k): (None if v is None else str(v)) for k, v in answer["packages"].items()}
        return {
            "interpreter": str(answer["executable"] or interpreter),
            "python": {"version": str(answer["version"]), "implementation": str(answer["implementation"])},
            "packages": {name: packages_found.get(name) for name in packages},
            "source": ASKED,
        }
    except (ToolkitError, ValueError, KeyError, TypeError, AttributeError):
        raise NotAsked(f"{interpreter} answered something other than its identity") from None


def collector_identity(packages: list[str], why: str) -> dict[str, Any]:
    """The collector's own Python and packages, with ``source`` saying why the program's were not asked."""
    return {
        "interpreter": None,
        "python": {"version": platform.python_version(), "implementation": platform.python_implementation()},
        "packages": package_versions(packages),
        "source": COLLECTORS.format(why=why),
    }


def forget_answers() -> None:
    """Forget every interpreter's cached answer (the next run asks again)."""
    with _cache_lock:
        _cache.clear()


def program_identity(argv: list[str], workdir: Path, env: Mapping[str, str], packages: list[str]) -> dict[str, Any]:
    """``{"interpreter", "python": {"version", "implementation"}, "packages", "source"}`` of the program
    ``argv`` starts in ``workdir`` with ``env`` (module doc): its interpreter's when it is Python, else
    the collector's, ``source`` saying which. Cached per interpreter for the process; never raises."""
    try:
        interpreter = python_interpreter(argv[0], workdir, env)
    except NotAsked as why:
        return collector_identity(packages, str(why))
    try:
        mtime = interpreter.stat().st_mtime_ns
    except OSError as err:
        return collector_identity(packages, f"{interpreter} cannot be read ({err.strerror or err})")
    key = (str(interpreter), mtime, tuple(packages), str(workdir), env.get("PYTHONPATH"), env.get("PYTHONHOME"))
    with _cache_lock:  # threads of one process ask once
        if key not in _cache:
            try:
                _cache[key] = _ask(interpreter, workdir, env, packages)
            except NotAsked as why:
                _cache[key] = collector_identity(packages, str(why))
        return copy.deepcopy(_cache[key])
