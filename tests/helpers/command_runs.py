"""A runs folder like the ``command`` collector leaves when the plan injects faults (synthetic traces).

The rows have the shape of ``collect.collectors.command.attempts.event_rows``: ``attempt`` spans and
``failure`` instants carry ``attempt`` and ``step``, a ``restart`` the attempt it starts, phase marks
neither.

Two arms of one stratum meet the same two faults (common random numbers): each run has three attempts,
two ``failure`` instants with the program's step, two ``restart`` spans, phase marks (compute,
checkpoint, restore, replay) and a progress trace (step, tokens, loss) in which work after each fault
is replayed from the last checkpoint. A third run, in another stratum, meets no fault. The records
list and hash every trace, as the collector's do.
"""

from __future__ import annotations

import json
from pathlib import Path

from collect.ledger.store import RunRecord, append_records
from collect.traces.progress import Progress, write_progress

SHA = "cd" * 32
FAULT_TIMES_S = (3.0, 6.5)  # both arms meet these (the stratum's schedule)
RESTART_S = 0.5  # from the kill to the next start
STEPS_PER_S = 40


def _ns(seconds: float) -> int:
    return round(seconds * 1e9)


def command_run(
    checkpoint_every: int, faults: tuple[float, ...], end_step: int = 400
) -> tuple[list[dict], list[Progress]]:
    """(event rows, progress rows) of one run: ``faults`` in seconds from the first start, a checkpoint
    every ``checkpoint_every`` steps, resumed from the last one after each fault, to ``end_step``."""
    events: list[dict] = []
    progress: list[Progress] = []
    t, step, durable, attempt = 0.0, 0, 0, 0

    def add(kind: str, start: float, end: float, **extra: object) -> None:  # the collector's row shape
        events.append(
            {"id": len(events), "kind": kind, "site": None, "start_ns": _ns(start), "end_ns": _ns(end), **extra}
        )

    pending = list(faults)
    while True:
        start = t
        if attempt:
            add("restore", t, t + 0.2)
            t += 0.2
            replay_to = step
            step = durable
        else:
            replay_to = 0
        resumed_from = step
        compute_start, fault = t, None
        while step < end_step:
            if pending and t + 1 / STEPS_PER_S > pending[0]:
                fault = pending.pop(0)
                break
            t += 1 / STEPS_PER_S
            step += 1
            if step % 5 == 0:
                progress.append(Progress(round(t, 6), attempt, step, step * 128, 5.0 / (1 + step / 50)))
            if step % checkpoint_every == 0:
                add("compute", compute_start, t)
                add("checkpoint", t, t + 0.1)
                t += 0.1
                durable, compute_start = step, t
        if replay_to > resumed_from:  # the steps between the last checkpoint and the fault, done again
            add("replay", start + 0.2, start + 0.2 + (replay_to - resumed_from) / STEPS_PER_S)
        if fault is None:
            add("compute", compute_start, t)
            add("attempt", start, t, aborted=False, attempt=attempt, step=step)
            break
        t = fault
        add("compute", compute_start, t)
        add("attempt", start, t, aborted=True, attempt=attempt, step=step)
        add("failure", t, t, attempt=attempt, step=step, planned=fault)
        add("restart", t, t + RESTART_S, attempt=attempt + 1)
        attempt += 1
        t += RESTART_S
    events.sort(key=lambda e: (e["start_ns"], e["end_ns"]))
    for i, e in enumerate(events):
        e["id"] = i
    return events, progress


def command_runs_folder(root: Path, with_progress: bool = True) -> Path:
    """``root/runs``: arms ``ckpt_25`` and ``ckpt_100`` of stratum ``seed=1`` (replicate 0) meeting
    :data:`FAULT_TIMES_S`, and ``ckpt_25`` of stratum ``seed=2`` meeting none; returns the folder."""
    runs = root / "runs"
    (runs / "traces").mkdir(parents=True)
    records = []
    for run_id, arm, seed, faults in (
        ("run-cmd-a", "ckpt_25", 1, FAULT_TIMES_S),
        ("run-cmd-b", "ckpt_100", 1, FAULT_TIMES_S),
        ("run-cmd-c", "ckpt_25", 2, ()),
    ):
        events, progress = command_run(int(arm.split("_")[1]), faults)
        names = [f"traces/{run_id}.events.jsonl"]
        (runs / names[0]).write_text("".join(json.dumps(e) + "\n" for e in events))
        if with_progress:
            names.append(f"traces/{run_id}.progress.csv")
            write_progress(runs / names[1], progress)
        records.append(
            RunRecord(
                run_id=run_id,
                prereg_sha256=SHA,
                stratum={"seed": seed},
                arm=arm,
                replicate=0,
                status="complete",
                metrics={"final_loss": progress[-1].loss or 0.0},
                code={"collector": "command"},
                traces=names,
            )
        )
    append_records(runs, records)
    return runs
