"""Heavy, self-contained test work started early, in one background process, on the core the tests leave idle.

Most of the suite runs one child process at a time, so on CI's two cores one core is mostly idle. A few
tests check the outcome of a long, self-contained job: a documentation page's runnable blocks (the 16
training runs of docs/byo.md), the two energy studies (48 torch runs each), the README's torch demo and
mypy. Such a test is marked ``@pytest.mark.prefetch(NAME)``; when the session's tests are collected,
``start`` launches one runner process (``python -m tests.helpers.prefetch BASE NAME ...``, in its own
session, at nice 10 so the tests in the foreground keep their core) that does the selected jobs in the
order the tests will need them, each in its own folder under ``BASE``, writing every step's exit code,
stdout and stderr there and a ``done`` file last. The test asks ``Prefetcher.result(NAME)``, which
waits for that job's ``done`` file and reads the steps back; it then asserts exactly what it asserted
when it ran the job itself. A job is a fixed list of commands or a page's blocks: nothing in it depends
on which test asks, on timing, or on the tests around it (the runner has the environment of the session
start, and explicit working folders).

Where the runner did not do a job (its test was not selected at start, the runner died, the job raised),
``result`` does it in the foreground, in a fresh folder, as the test used to: the background is only ever
a head start. ``stop`` (at the session's end) interrupts a runner still going (SIGINT to its process
group, then SIGKILL), so no process outlives the session.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import subprocess
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

from tests.helpers.docs import ROOT, Block, PageRun, marked_blocks, run_page

BIN = Path(sys.executable).parent
STEP_TIMEOUT_S = 1800  # only to catch a hang: the longest step (48 torch runs) takes well under a minute idle
WAIT_POLL_S = 0.2
STOP_GRACE_S = 20.0
NICE = 10


def _exe(name: str) -> str:
    """A console script of this interpreter's environment (as tests.helpers.run finds it), or ``name``."""
    if Path(name).is_absolute():
        return name
    if (BIN / name).exists():
        return str(BIN / name)
    return shutil.which(name) or name


def _save(results: Path, number: int, proc: subprocess.CompletedProcess) -> None:
    (results / f"{number:03d}.out").write_text(proc.stdout, encoding="utf-8")
    (results / f"{number:03d}.err").write_text(proc.stderr, encoding="utf-8")
    (results / f"{number:03d}.rc").write_text(str(proc.returncode), encoding="utf-8")


def _load(results: Path, number: int, args: object) -> subprocess.CompletedProcess:
    return subprocess.CompletedProcess(
        args,
        int((results / f"{number:03d}.rc").read_text()),
        (results / f"{number:03d}.out").read_text(encoding="utf-8"),
        (results / f"{number:03d}.err").read_text(encoding="utf-8"),
    )


@dataclass(frozen=True)
class Step:
    """One command: argv (``argv[0]`` a console script of this environment, or an absolute path) and
    environment variables set on top of the inherited environment."""

    argv: tuple[str, ...]
    env: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class StepsJob:
    """Commands run one after another (every one, whatever the exit codes before), in ``cwd`` (default:
    the job's ``work`` folder, which the job's paths may name as ``{work}``)."""

    steps: tuple[Step, ...]
    cwd: Path | None = None
    requires: tuple[str, ...] = ()
    unless_env: tuple[str, str] | None = None  # (variable, value): the job's tests skip when it is set so

    def wanted(self) -> bool:
        missing = [m for m in self.requires if importlib.util.find_spec(m) is None]
        skipped = self.unless_env is not None and os.environ.get(self.unless_env[0]) == self.unless_env[1]
        return not missing and not skipped

    def argv(self, step: Step, work: Path) -> list[str]:
        return [_exe(step.argv[0]), *(a.replace("{work}", str(work)) for a in step.argv[1:])]

    def run(self, folder: Path) -> None:
        work, results = folder / "work", folder / "results"
        work.mkdir(parents=True)
        results.mkdir()
        for number, step in enumerate(self.steps, start=1):
            proc = subprocess.run(
                self.argv(step, work),
                cwd=self.cwd or work,
                capture_output=True,
                text=True,
                timeout=STEP_TIMEOUT_S,
                env={**os.environ, **dict(step.env)},
            )
            _save(results, number, proc)

    def load(self, folder: Path) -> tuple[Path, list[subprocess.CompletedProcess]]:
        """(the work folder, every step's finished process)."""
        work = folder / "work"
        return work, [_load(folder / "results", n, self.argv(s, work)) for n, s in enumerate(self.steps, start=1)]


@dataclass(frozen=True)
class PageJob:
    """A documentation page's marked blocks, run by tests.helpers.docs.run_page in the job's work folder."""

    page: Path

    def wanted(self) -> bool:
        return True

    def run(self, folder: Path) -> None:
        work, results = folder / "work", folder / "results"
        work.mkdir(parents=True)
        results.mkdir()
        for block in run_page(self.page, work).blocks:
            if block.proc is not None:
                _save(results, block.number, block.proc)

    def load(self, folder: Path) -> PageRun:
        ran = PageRun(self.page, folder / "work")
        for number, (kind, name, body) in enumerate(marked_blocks(self.page.read_text(encoding="utf-8")), start=1):
            block = Block(number, kind, name, body)
            if kind == "runnable":
                if not (folder / "results" / f"{number:03d}.rc").exists():
                    break  # the run stopped after a failed block
                block.proc = _load(folder / "results", number, ["bash", "-c", block.commands])
            ran.blocks.append(block)
            if block.proc is not None and block.proc.returncode != 0:
                break  # as run_page: nothing after a failed block ran
        return ran


Job = StepsJob | PageJob
PLAIN = (("NO_COLOR", "1"), ("COLUMNS", "80"))
EXAMPLES = ROOT / "examples"


def _study(name: str) -> StepsJob:
    """An example plan frozen, collected with two jobs and evaluated, as its header says."""
    lock = f"{{work}}/{name}.lock.json"
    return StepsJob(
        (
            Step(("prereg", "freeze", str(EXAMPLES / f"{name}.yaml"), "-o", lock)),
            Step(("collect", "run", lock, "--out", f"{{work}}/{name}", "--jobs", "2")),
            Step(("gates", "evaluate", lock, f"{{work}}/{name}"), PLAIN),
        ),
        requires=("torch",),
        unless_env=("SKIP_DEMO", "1"),
    )


def _pages() -> dict[str, Job]:
    pages = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md")])
    return {f"page:{p.relative_to(ROOT)}": PageJob(p) for p in pages if marked_blocks(p.read_text(encoding="utf-8"))}


#: every job a test may ask for, by name
JOBS: dict[str, Job] = {
    **_pages(),
    "energy-study1": _study("energy-study1"),
    "energy-study2": _study("energy-study2"),
    "demo": StepsJob(
        (
            Step(("prereg", "freeze", str(EXAMPLES / "equal-work-torch.yaml"), "-o", "{work}/equal-work.lock.json")),
            Step(("collect", "run", "{work}/equal-work.lock.json", "--out", "{work}/runs", "--jobs", "2")),
            Step(("gates", "evaluate", "{work}/equal-work.lock.json", "{work}/runs"), PLAIN),
        ),
        requires=("torch",),
        unless_env=("SKIP_DEMO", "1"),
    ),
    "mypy": StepsJob(
        (Step((sys.executable, "-m", "mypy", "--cache-dir", "{work}/mypy-cache")),), cwd=ROOT, requires=("mypy",)
    ),
}


@dataclass
class Prefetcher:
    """The session's background runner and the jobs' results (see the module doc)."""

    base: Path
    started: list[str] = field(default_factory=list)
    runner: subprocess.Popen | None = None
    _results: dict[str, object] = field(default_factory=dict)

    def start(self, names: list[str]) -> None:
        """Launch the runner for ``names`` (unknown names refused; unwanted jobs left out), in this order."""
        unknown = [n for n in names if n not in JOBS]
        assert not unknown, f"no prefetch job named {unknown}; known: {sorted(JOBS)}"
        self.started = [n for n in dict.fromkeys(names) if JOBS[n].wanted()]
        if not self.started:
            return
        self.base.mkdir(parents=True, exist_ok=True)
        with open(self.base / "runner.log", "wb") as log:
            self.runner = subprocess.Popen(
                [sys.executable, "-m", "tests.helpers.prefetch", str(self.base), *self.started],
                cwd=ROOT,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def result(self, name: str):  # type: ignore[no-untyped-def]
        """The job's outcome (``StepsJob.load`` or ``PageJob.load``): the runner's, once it is done, or
        made here in the foreground where the runner did not make it."""
        if name not in self._results:
            job = JOBS[name]
            folder = self.base / _folder(name)
            if not self._wait(name):
                folder = self.base / f"{_folder(name)}-foreground"
                shutil.rmtree(folder, ignore_errors=True)
                job.run(folder)
            self._results[name] = job.load(folder)
        return self._results[name]

    def _wait(self, name: str) -> bool:
        """Whether the runner did job ``name``: waits while it may still do it."""
        if name not in self.started or self.runner is None:
            return False
        done, failed = self.base / _folder(name) / "done", self.base / _folder(name) / "failed"
        while not done.exists() and not failed.exists() and self.runner.poll() is None:
            time.sleep(WAIT_POLL_S)
        return done.exists()

    def stop(self) -> None:
        """Interrupt a runner still going, then kill its process group; reap it."""
        runner, self.runner = self.runner, None
        if runner is None or runner.poll() is not None:
            return
        for sig, grace in ((signal.SIGINT, STOP_GRACE_S), (signal.SIGKILL, STOP_GRACE_S)):
            try:
                os.killpg(runner.pid, sig)
            except ProcessLookupError:
                break
            try:
                runner.wait(timeout=grace)
                break
            except subprocess.TimeoutExpired:
                continue


def _folder(name: str) -> str:
    return name.replace(":", "-").replace("/", "-")


def main(argv: list[str]) -> int:
    """The runner: ``BASE NAME ...``; each job in its folder, ``done`` written after its results
    (``failed``, with the traceback, where the job raised: its test then does it in the foreground)."""
    base, names = Path(argv[0]), argv[1:]
    os.nice(NICE)
    for name in names:
        folder = base / _folder(name)
        try:
            JOBS[name].run(folder)
        except Exception:  # noqa: BLE001 - recorded; the test redoes the job in the foreground and sees it
            (base / f"{_folder(name)}.failed.txt").write_text(traceback.format_exc(), encoding="utf-8")
            folder.mkdir(parents=True, exist_ok=True)
            (folder / "failed").write_text("see ../" + f"{_folder(name)}.failed.txt\n", encoding="utf-8")
            continue
        (folder / "done").write_text("done\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
