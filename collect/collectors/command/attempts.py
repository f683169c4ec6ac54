"""A ``command`` run as a sequence of starts of the program: planned faults, restarts, and their story.

More in ``docs/internals.md``.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from collect.collectors.command.injector import Fault, FaultInjector, Report
from collect.collectors.command.outputs import MarkedPhase, RunFailure
from collect.collectors.command.process import TAIL_BYTES, Finished, run_program
from collect.collectors.command.runfolder import MARKS_FILE, METRICS_FILE, RunFolder, read_marks_in
from collect.marks import PROGRESS_ENV, RESTART_ENV
from collect.traces.progress import Progress

#: the metrics the collector computes when the plan has ``experiment.failures``
FAULT_METRICS = (
    "attempted_steps",
    "retained_steps",
    "lost_steps",
    "replayed_steps",
    "faults_planned",
    "faults_landed",
    "restarts",
)


@dataclass
class Attempt:
    """One start of the program: how it ended, and the fault that ended it (if one did)."""

    index: int
    finished: Finished
    fault: Fault | None


def _close_open_phases(folder: RunFolder, at_ns: int) -> None:
    """Append ``end`` lines for the phases a killed start left open, innermost first, at ``at_ns``."""
    stack: list[str] = []
    for m in read_marks_in(folder):
        if m.kind == "begin":
            stack.append(m.name)
        elif stack and stack[-1] == m.name:
            stack.pop()
    if stack:
        folder.append(MARKS_FILE, "".join(f"end {n} {at_ns} {at_ns}\n" for n in reversed(stack)).encode(), "marks file")


def _ended_by(injector: FaultInjector | None, attempt: int) -> Fault | None:
    if injector is None:
        return None
    fired = [f for f in injector.faults if f.attempt == attempt and f.killed]
    return fired[-1] if fired else None


def run_attempts(
    argv: list[str],
    cwd: str,
    env: Mapping[str, str],
    timeout_s: float,
    injector: FaultInjector | None,
    folder: RunFolder,
    on_tick: Callable[[], None] | None = None,
) -> list[Attempt]:
    """Every start of the program (see the module doc); the last one is how the run ended."""
    origin = time.monotonic_ns()
    attempts: list[Attempt] = []
    tick = on_tick
    if injector is not None and injector.unit == "s":

        def tick() -> None:
            injector.tick()
            if on_tick is not None:
                on_tick()

    while True:
        k = len(attempts)
        left = timeout_s - (time.monotonic_ns() - origin) / 1e9
        run_env = {**env, RESTART_ENV: str(k)}
        if injector is not None:
            run_env[PROGRESS_ENV] = injector.path
            injector.begin_attempt(k, time.monotonic_ns())
        finished = run_program(
            argv, cwd, run_env, max(left, 1e-3), tick, on_pid=None if injector is None else injector.set_pid
        )
        fault = _ended_by(injector, k)
        attempts.append(Attempt(k, finished, fault))
        if fault is None or finished.timed_out:
            return attempts
        if finished.returncode == 0:  # it finished before the kill reached it (or carried on after one rank)
            if injector is not None and injector.action == "kill_tree":
                fault.killed, fault.detail = False, "the program had already finished"
            return attempts
        if injector is not None and injector.action == "kill_tree" and finished.returncode != -signal.SIGKILL:
            return attempts  # it ended otherwise: a failure of its own, reported as such
        _close_open_phases(folder, finished.end_ns)
        folder.remove(METRICS_FILE)


def combined(attempts: list[Attempt]) -> Finished:
    """The run as one :class:`Finished`: the last start's status, the first start to the last end, and
    every start's output (each after a ``--- start k ---`` line when there were several; the last
    ``TAIL_BYTES`` kept)."""
    last = attempts[-1].finished
    if len(attempts) == 1:
        return last

    def joined(part: Callable[[Finished], bytes]) -> bytes:
        data = b"".join(
            f"--- start {a.index} ({RESTART_ENV}={a.index}) ---\n".encode() + part(a.finished) for a in attempts
        )
        return data[-TAIL_BYTES:]

    return Finished(
        last.returncode,
        last.timed_out,
        attempts[0].finished.start_ns,
        last.end_ns,
        joined(lambda f: f.stdout),
        joined(lambda f: f.stderr),
        sum(a.finished.stdout_bytes for a in attempts),
        sum(a.finished.stderr_bytes for a in attempts),
    )


def _spans(reports: list[Report], n_attempts: int) -> list[tuple[int | None, int | None]]:
    """(start step, last step) of each start from its reports (None where it reported nothing)."""
    out: list[tuple[int | None, int | None]] = []
    for k in range(n_attempts):
        mine = [r for r in reports if r.attempt == k]
        resumed = [r.step for r in mine if r.kind == "resumed"]
        steps = [r.step for r in mine if r.kind == "step"]
        start = resumed[0] if resumed else (steps[0] - 1 if steps else None)
        last = max(steps) if steps else start
        out.append((start, last))
    return out


def work_metrics(reports: list[Report], attempts: list[Attempt], record: list[dict[str, Any]]) -> dict[str, float]:
    """The run's work accounting (see the module doc), with its faults as :func:`fault_record` gives
    them; ``RunFailure`` when a start reported no progress."""
    spans = _spans(reports, len(attempts))
    silent = [k for k, (start, last) in enumerate(spans) if start is None or last is None]
    if silent:
        raise RunFailure(
            f"start(s) {', '.join(map(str, silent))} of the program reported no progress: the work "
            "metrics need collect.marks.step (and resumed) calls (docs/command-collector.md)"
        )
    attempted = lost = replayed = 0
    high = 0
    for k, (start, last) in enumerate(spans):
        assert start is not None and last is not None
        attempted += max(0, last - start)
        replayed += max(0, min(last, high) - start) if k else 0
        high = max(high, last)
        if k + 1 < len(spans):
            nxt = spans[k + 1][0]
            assert nxt is not None
            lost += max(0, last - nxt)
    first, final = spans[0][0], spans[-1][1]
    assert first is not None and final is not None
    landed = sum(1 for row in record if row["landed"])
    return {
        "attempted_steps": float(attempted),
        "retained_steps": float(final - first),
        "lost_steps": float(lost),
        "replayed_steps": float(replayed),
        "faults_planned": float(len(record)),
        "faults_landed": float(landed),
        "restarts": float(len(attempts) - 1),
    }


def fault_record(faults: list[Fault], attempts: list[Attempt]) -> list[dict[str, Any]]:
    """Each planned fault: its point, when it fired (s from the run's first start), the progress then,
    the start it ended and the restart that followed, whether it landed and why not."""
    origin = attempts[0].finished.start_ns
    out = []
    for f in faults:
        restart = f.attempt + 1 if f.attempt is not None and f.attempt + 1 < len(attempts) else None
        row: dict[str, Any] = {
            "index": f.index,
            "planned": f.planned,
            "fired_s": None,
            "step": f.step,
            "attempt": f.attempt,
            "restart": restart,
            "landed": False,
            "why": "",
        }
        if f.fired_ns is None:
            last = attempts[-1].finished
            row["why"] = (
                "the run timed out before it"
                if last.timed_out
                else "the program had finished before it"
                if last.returncode == 0
                else "the program had failed before it"
            )
        else:
            row["fired_s"] = round((f.fired_ns - origin) / 1e9, 6)
            ended = attempts[f.attempt].finished if f.attempt is not None else None
            carried_on = ended is not None and ended.returncode == 0
            if not f.killed:
                row["why"] = f.detail or "the kill reached no process"
            elif restart is None and not carried_on:
                row["why"] = "the program did not start again after it"
            else:
                row["landed"] = True
                row["why"] = "" if restart is not None else "the program carried on"
        out.append(row)
    return out


def event_rows(
    attempts: list[Attempt], faults: list[Fault], reports: list[Report], phases: list[MarkedPhase]
) -> list[dict[str, Any]]:
    """The run's event trace rows (``collect.traces.events``): each start, fault, restart and phase,
    in ns from the run's first start, job-wide (``site`` null)."""
    origin = attempts[0].finished.start_ns
    rows: list[dict[str, Any]] = []

    def add(kind: str, start: int, end: int, **extra: Any) -> None:
        rows.append(
            {
                "id": len(rows),
                "kind": kind,
                "site": None,
                "start_ns": max(0, start - origin),
                "end_ns": max(0, end - origin),
                **extra,
            }
        )

    by_attempt = {f.attempt: f for f in faults if f.fired_ns is not None}
    for a in attempts:
        fault = by_attempt.get(a.index)
        last = [r.step for r in reports if r.attempt == a.index and r.kind == "step"]
        add(
            "attempt",
            a.finished.start_ns,
            a.finished.end_ns,
            aborted=a.fault is not None,
            attempt=a.index,
            step=last[-1] if last else None,
        )
        if fault is not None and fault.fired_ns is not None:
            add("failure", fault.fired_ns, fault.fired_ns, attempt=a.index, step=fault.step, planned=fault.planned)
        if a.index + 1 < len(attempts):
            add("restart", a.finished.end_ns, attempts[a.index + 1].finished.start_ns, attempt=a.index + 1)
    for name, start, end, depth, count, attempt in merged_phases(phases, attempts):
        add(name, start, end, depth=depth, marks=count, attempt=attempt)
    rows.sort(key=lambda r: (r["start_ns"], r["id"]))
    for i, row in enumerate(rows):
        row["id"] = i
    return rows


def merged_phases(
    phases: list[MarkedPhase], attempts: list[Attempt] | None = None
) -> list[tuple[str, int, int, int, int, int]]:
    """(name, start_ns, end_ns, depth, count, attempt): runs of consecutive phases of one name at one
    depth, within one start of the program, merged into one span (a ``compute`` mark per step is one
    band until another phase, or a restart, comes). ``attempt``: the start the phase began in."""
    starts = [a.finished.start_ns for a in attempts or []]

    def attempt_of(t_ns: int) -> int:
        return max([k for k, s in enumerate(starts) if s <= t_ns], default=0)

    out: list[tuple[str, int, int, int, int, int]] = []
    current: dict[int, list[Any]] = {}

    def flush(depth: int) -> None:
        for d in sorted(k for k in current if k >= depth):
            out.append(tuple(current.pop(d)))

    for p in sorted(phases, key=lambda p: (p.start_ns, p.depth)):
        k = attempt_of(p.start_ns)
        if any(row[5] != k for row in current.values()):
            flush(0)  # a restart ends every band
        open_ = current.get(p.depth)
        if open_ is not None and open_[0] == p.name:
            open_[2], open_[4] = max(open_[2], p.end_ns), open_[4] + 1
            continue
        flush(p.depth)
        current[p.depth] = [p.name, p.start_ns, p.end_ns, p.depth, 1, k]
    flush(0)
    return out


def progress_rows(reports: list[Report], origin_ns: int) -> list[Progress]:
    """Each ``step`` report as a row of the run's progress trace, t from the run's first start."""
    return [
        Progress(round((r.t_ns - origin_ns) / 1e9, 6), r.attempt, r.step, r.tokens, r.loss)
        for r in reports
        if r.kind == "step"
    ]


__all__ = [
    "FAULT_METRICS",
    "Attempt",
    "combined",
    "event_rows",
    "fault_record",
    "progress_rows",
    "run_attempts",
    "work_metrics",
]
