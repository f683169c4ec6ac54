"""Gates end to end through the console scripts: freeze a plan, import a table, evaluate; and the tiny
``a`` vs ``b`` plans of the verdict tests (metric ``loss``, one block factor)."""

from __future__ import annotations

import json
from pathlib import Path

from gates.artifact import read_evaluation
from tests.helpers import run, write_csv


def freeze(tmp_path: Path, text: bytes, name: str = "plan.yaml") -> Path:
    """``prereg freeze`` of ``text`` written as ``tmp_path/name``: the lock's path."""
    plan = tmp_path / name
    plan.write_bytes(text)
    proc = run("prereg", "freeze", str(plan))
    assert proc.returncode == 0, proc.stderr
    return plan.with_name(plan.stem + ".lock.json")


def imported(tmp_path: Path, lock: Path, rows: list[dict]) -> Path:
    """``collect import`` of ``rows`` (as a CSV table) under ``lock`` into ``tmp_path/runs``."""
    runs = tmp_path / "runs"
    proc = run(
        "collect", "import", str(write_csv(tmp_path / "runs.csv", rows)), "--lock", str(lock), "--out", str(runs)
    )
    assert proc.returncode == 0, proc.stderr
    return runs


def evaluate(lock: Path, runs: Path) -> tuple[int, dict]:
    """``gates evaluate --json``: its exit code and the artifact (checked equal to evaluation.json)."""
    proc = run("gates", "evaluate", str(lock), str(runs), "--json")
    assert proc.returncode in (0, 1, 3), proc.stderr
    data = json.loads(proc.stdout)
    assert read_evaluation(runs / "evaluation.json").model_dump(mode="json", by_alias=True) == data
    return proc.returncode, data


def gates_by_id(data: dict) -> dict:
    """The artifact's gates by id."""
    return {g["id"]: g for g in data["gates"]}


def plan_text(
    blocks: int,
    gates: str,
    replicates: int = 1,
    signal: bool = False,
    extra_strata: str = "",
    multiplicity: str = "none",
    better: str = "lower",
    metric_extra: str = "",
    tail: str = "",
) -> bytes:
    """A plan of arms ``a`` vs ``b`` over ``blocks`` blocks, metric ``loss`` (nats), the given gate lines;
    ``metric_extra`` adds fields to the metric (``", range: [0, 20]"``), ``tail`` sections at the end."""
    sig = ", signal: energy_counter" if signal else ""
    sig += metric_extra
    return f"""schema: prereg/v1
study: integrity
title: Verdict integrity case
hypothesis: a is no worse than b.
arms: {{a: {{policy: x}}, b: {{policy: y}}}}
strata:
  factors: {{block: [{", ".join(str(i) for i in range(1, blocks + 1))}]}}
  replicates: {replicates}
{extra_strata}metrics:
  loss: {{unit: nats, better: {better}, evidence: measured{sig}}}
gates:
{gates}
decision: {{claim: a is no worse than b., multiplicity: {multiplicity}}}
{tail}""".encode()


def freeze_text(tmp_path: Path, text: bytes) -> tuple[int, str, Path]:
    """``prereg freeze`` of ``text``: exit code, its output, the lock's path."""
    plan = tmp_path / "plan.yaml"
    plan.write_bytes(text)
    proc = run("prereg", "freeze", str(plan))
    return proc.returncode, proc.stderr + proc.stdout, plan.with_name("plan.lock.json")


def frozen(tmp_path: Path, text: bytes) -> Path:
    """The lock of ``text``, which must freeze."""
    rc, out, lock = freeze_text(tmp_path, text)
    assert rc == 0, out
    return lock


def rows_for(
    contrasts: list[float], base: float = 2.0, replicates: int = 1, bound: float | None = None, ratio: bool = False
) -> list[dict]:
    """Rows whose per-block contrast a - b (or a / b) is the given list, block-major."""
    rows = []
    for i, c in enumerate(contrasts):
        block, rep = i // replicates + 1, i % replicates
        a = base * c if ratio else base + c
        for arm, value in (("a", a), ("b", base)):
            row = {"arm": arm, "block": block, "replicate": rep, "loss": value}
            if bound is not None:
                row.update(
                    {
                        "energy_counter.updates": 50,
                        "energy_counter.effective_period_ms": 100,
                        "energy_counter.bound": bound,
                    }
                )
            rows.append(row)
    return rows


def gate_line(id_: str, method: str, rule: str, contrast: str = "a - b", conf: float = 0.9, extra: str = "") -> str:
    """One gate of the ``plan_text`` plan, on metric ``loss``."""
    return f'  - {{id: {id_}, metric: loss, contrast: "{contrast}", method: {method}, confidence: {conf}, pass_if: "{rule}"{extra}}}'


def report(lock: Path, runs: Path) -> str:
    """The terminal report, with whitespace (table cells and wrapping) collapsed to single spaces."""
    proc = run("gates", "evaluate", str(lock), str(runs), env={"NO_COLOR": "1", "COLUMNS": "200"})
    return " ".join(proc.stdout.replace("│", " ").split())
