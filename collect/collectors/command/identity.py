"""Code identity of a ``command`` run: what program, at which version, with which packages.

Every record's ``code`` carries (``RunResult.info``):

* ``files``: path (relative to ``workdir``, POSIX separators) -> SHA-256 of each file the ``code``
  globs match, hashed when the run starts, and ``files_sha256``: the SHA-256 of that mapping's
  canonical JSON (one value to compare across records);
* ``files_git``: the git commit and dirty flag (tracked files changed; untracked files are not
  counted -- their hashes are above) of the repository holding ``workdir``, or null outside one;
* ``python`` (version and implementation) and ``packages``: name -> installed version (or null)
  of each distribution in the ``packages`` parameter, read from its metadata
  (``importlib.metadata``), so torch is never imported to learn its version.
"""

from __future__ import annotations

import hashlib
import platform
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from prereg.jsoncodec import canonical_bytes
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


def code_identity(files: list[Path], workdir: Path, packages: list[str], git: Any = ...) -> dict[str, Any]:
    """The run's code identity (see the module doc); ``git``: the ``files_git`` the driver learnt, for a
    run on a private copy of the code files (Ray), else read here."""
    root = workdir.resolve()
    hashes = {p.relative_to(root).as_posix(): file_sha256(p) for p in files}
    return {
        "files": hashes,
        "files_sha256": hashlib.sha256(canonical_bytes(hashes)).hexdigest(),
        "files_git": git_identity(root) if git is ... else git,
        "python": {"version": platform.python_version(), "implementation": platform.python_implementation()},
        "packages": package_versions(packages),
    }
