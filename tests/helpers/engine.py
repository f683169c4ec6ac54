"""Engine tests' plan, its loading, and ledger contents comparable across executors."""

from __future__ import annotations

import sys
from pathlib import Path

from collect.ledger.store import RunRecord, read_ledger
from prereg.plan import parse_plan
from prereg.schema import Plan
from tests.helpers.collectors import SLOW

PLAN = """schema: prereg/v1
study: engine-test
title: Engine test
hypothesis: The offset shows.
experiment:
  collector: test.slow
  params: {{sleep_ms: {sleep}}}
arms:
  a: {{offset: 0.0}}
  b: {{offset: 1.0{extra}}}
strata:
  factors:
    site: [0, 1, 2]
    seed: [1, 2, 3, 4]
  replicates: {replicates}
metrics:
  value: {{unit: unit, better: higher, evidence: modeled, deterministic: true}}
gates:
  - {{id: offset, metric: value, contrast: b - a, method: t, confidence: 0.9, pass_if: lower > 0.5}}
decision: {{claim: b is higher}}
"""


def plan_text(sleep: float = 0.0, extra: str = "", replicates: int = 1) -> str:
    """The engine test plan (collector ``test.slow``): 2 arms x 12 strata x ``replicates``."""
    return PLAN.format(sleep=sleep, extra=extra, replicates=replicates)


def loaded(text: str) -> tuple[Plan, str]:
    """The plan of ``text`` and its sha256."""
    lp = parse_plan(text.encode())
    return lp.plan, lp.plan_sha256


def comparable(record: RunRecord) -> dict:
    """A record without what may differ between executors: its times, the chain fields (they
    follow the order of appends), the run's own timings, a command run's thread settings (an executor
    may preset them) and the hashes of its event and progress traces (wall-clock times of its starts
    and marks)."""
    data = record.model_dump(mode="json", exclude_none=True)
    for key in ("started_at", "finished_at", "prev_sha256", "record_sha256"):
        data.pop(key, None)
    data["env"].pop("seconds", None)
    data["code"].pop("timing_s", None)
    data["code"].pop("threads", None)  # Ray presets OMP_NUM_THREADS on its workers (kept there, set here)
    if data["code"].get("collector") == "command":
        data["trace_sha256"] = {
            k: v for k, v in data.get("trace_sha256", {}).items() if not k.endswith((".events.jsonl", ".progress.csv"))
        }
    return data


def contents(runs: Path) -> list[dict]:
    """Every record of the ledger, comparable, in run id order (appends follow completion)."""
    ledger = read_ledger(runs)
    assert not ledger.problems, ledger.problems
    return sorted((comparable(r) for r in ledger.records), key=lambda d: d["run_id"])


def collect_cli(*args: str) -> list[str]:
    """The command line of ``collect ARGS`` in a python child that registers ``test.slow`` first."""
    code = (
        f"import sys, collect.engine.runner as e; e.COLLECTORS['test.slow'] = {SLOW!r}; "
        "from prereg_toolkit_cli.collect import main; sys.exit(main(sys.argv[1:]))"
    )
    return [sys.executable, "-c", code, *args]
