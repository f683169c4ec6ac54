"""``collect run`` on a plan with ``monitoring:``: one call of :func:`gates.monitor.run_monitored` + printing.

Says each look as it is decided (stderr, unless ``--json``), then why collection stopped and how
many planned runs the stop saved. Exit codes as ``collect run``'s: 0 ok (whatever the decision:
``gates evaluate`` says that), 1 runs failed at a look, 130 interrupted (finished runs and
recorded looks are kept; re-run with ``--resume``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from cli.kit import EXIT_OK, emit_json

EXIT_RUNS_FAILED = 1


def is_monitored(lock_path: str) -> bool:
    """Whether the lock's plan declares interim looks (the lock is verified here)."""
    from prereg.api import load_lock  # lazy: pydantic

    return load_lock(lock_path).plan.monitoring is not None


def _stop_words(result: Any) -> str:
    saved = f"; {result.runs_saved} of {result.planned} planned runs were not needed (saved)" if result.runs_saved \
        else ""
    return {
        "success": f"stopped early for success at look {result.stopped_at}{saved}",
        "futility": f"stopped early for futility at look {result.stopped_at} (non-binding){saved}",
        "final": f"reached the final look ({result.stopped_at}): every planned run was needed",
        "failed": f"stopped at look {result.stopped_at}: {result.note}",
        "already": f"nothing to run: {result.note}",
    }.get(result.stopped or "", "collection ended without reaching a decision")


def run(args: argparse.Namespace, runs: Path, finish: Any) -> int:
    """``collect run`` for a monitored plan (module doc); ``finish`` ends the caller's progress display."""
    from collect.api import ledger_head  # lazy: pydantic
    from gates.monitor import run_monitored  # lazy: numpy
    from prereg.api import load_lock  # lazy: pydantic

    talk = not args.json
    monitoring = load_lock(args.lock).plan.monitoring
    assert monitoring is not None
    if talk:
        print(f"collect run: a monitored plan: looks at {', '.join(map(str, monitoring.looks))} blocks "
              f"({monitoring.spending} spending, futility {monitoring.futility}); running the strata in their frozen "
              "order and evaluating at each look", file=sys.stderr, flush=True)

    def say(line: str) -> None:
        if talk:
            finish()
            print(f"collect run: {line}", file=sys.stderr, flush=True)

    try:
        result = run_monitored(args.lock, runs, args.jobs, args.executor, None, say)
    finally:
        finish()
    head = ledger_head(runs) if (runs / "ledger.jsonl").exists() else None
    if args.json:
        emit_json({"ok": result.failed == 0, "planned": result.planned, "completed": result.completed,
                   "failed": result.failed, "ledger": str(runs / "ledger.jsonl"), "ledger_head_sha256": head,
                   "monitoring": {"stopped": result.stopped, "stopped_at_look": result.stopped_at,
                                  "runs_saved": result.runs_saved, "note": result.note,
                                  "looks": [{"look": s.look, "blocks": s.blocks, "completed": s.completed,
                                             "failed": s.failed, "decision": s.decision, "action": s.action,
                                             "look_record": s.seq, "recorded_before": s.recorded}
                                            for s in result.steps]}})
    else:
        print(f"{_stop_words(result)}\n{result.completed} runs completed, {result.failed} failed; ledger "
              f"{runs / 'ledger.jsonl'}, looks {runs / 'looks.jsonl'}\nledger head sha256 {head}")
        if result.evaluation is not None:
            print(f"the last look's evaluation: {runs / 'evaluation.json'} (reports show it)")
    return EXIT_OK if result.failed == 0 else EXIT_RUNS_FAILED
