"""The HTML report's sections from the runs folder: the per-run table, work conservation, traffic
classes, trace hashes and the runs' environment.

The runs folder is read only through :mod:`collect.ledger.store` (records, and each trace re-hashed
against its record); nothing here opens a trace. The checks are bookkeeping identities on the
recorded numbers (attempted = retained + lost; traffic classes add up), never statistics.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from markupsafe import Markup

from collect.ledger.store import read_ledger, trace_problems
from reports.data.origin import origins_text
from reports.html.render import macro
from reports.words import evaluation as et

if TYPE_CHECKING:
    from collect.ledger.store import Ledger, RunRecord
    from gates.artifact import Evaluation

MAX_ROWS = 5000  # rows of a per-run table before the rest are counted, not listed
#: (name, unit words, attempted, retained, lost, replayed): the work accounting a collector records
WORK_FAMILIES = (
    ("tokens", "tokens", "attempted_tokens", "retained_tokens", "lost_tokens", "replayed_tokens"),
    ("site-steps", "site-steps", "attempted_work", "retained_work", "lost_work", "replayed_work"),
)
TRAFFIC_PREFIX, TRAFFIC_TOTAL = "wan_bytes_", "wan_bytes"
CODE_KEYS = ("collector", "toolkit_version", "model", "sensor", "energy_evidence")
TEMPLATE = "runs.html"


@dataclass
class RunsContext:
    """The runs folder as read for the report."""

    folder: Path
    ledger: Ledger
    records: list[RunRecord]  # under the evaluated plan, the last record of each run id, in ledger order
    other_plan: int  # records under another plan hash (not shown)
    problems: dict[str, list[tuple[str, str]]] = field(default_factory=dict)  # run id -> traces failing their hash
    ledger_matches: bool = True  # the ledger is byte-for-byte the one evaluated

    def problem_of(self, run_id: str, trace: str) -> str | None:
        return next((why for name, why in self.problems.get(run_id, []) if name == trace), None)


class RunsTable(NamedTuple):
    """The per-run table: head, rows (record, factor levels, (metric, cell)), numeric columns, rows left out."""

    head: list[str]
    rows: list[tuple[RunRecord, list[tuple[str, Any]], list[tuple[str, tuple[str, str] | None]]]]
    numeric: set[int]
    more: int


def load_runs(folder: Path, ev: Evaluation) -> RunsContext:
    """The records of the evaluated plan and each one's trace check."""
    ledger = read_ledger(folder)
    latest: dict[str, RunRecord] = {}
    other = 0
    for r in ledger.records:
        if r.prereg_sha256 == ev.prereg_sha256:
            latest.pop(r.run_id, None)
            latest[r.run_id] = r
        else:
            other += 1
    records = list(latest.values())
    problems = {r.run_id: p for r in records if (p := trace_problems(folder, r))}
    return RunsContext(folder, ledger, records, other, problems, ledger.sha256 == ev.ledger.sha256)


def stratum_text(stratum: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in stratum.items()) or "no factors"


def byte_text(value: float) -> str:
    """Bytes for people in decimal units ('6.12 GB'); exact below a kilobyte."""
    if not math.isfinite(value) or abs(value) < 1000:
        return et.fmt_num(value) + " B"
    for unit, size in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(value) >= size:
            return f"{value / size:.4g} {unit}"
    return et.fmt_num(value)


def _num(value: float | None, as_bytes: bool = False) -> tuple[tuple[str, str] | None, str | None]:
    """A number cell's (text, sort key), or None; and for bytes the exact count (its tooltip)."""
    if value is None:
        return None, None
    sort = "" if math.isnan(value) else repr(value)
    if as_bytes:
        return (byte_text(value), sort), f"{value:.0f}" if math.isfinite(value) else str(value)
    return (et.fmt_num(value), sort), None


def gate_metrics(ev: Evaluation) -> list[tuple[str, str]]:
    """(metric, unit) of every gate, in gate order, once each."""
    seen: dict[str, str] = {}
    for g in ev.gates:
        seen.setdefault(g.metric, g.unit)
    return list(seen.items())


def runs_section(ev: Evaluation, ctx: RunsContext | None) -> Markup:
    """Run accounting (from the artifact) and, with the runs folder, the sortable per-run table."""
    table = None
    if ctx is not None:
        factors = list(dict.fromkeys(k for r in ctx.records for k in r.stratum))
        metrics = gate_metrics(ev)
        head = ["run", "arm", *factors, "replicate", "status", "started (UTC)"]
        head += [f"{m} ({u})" if u else m for m, u in metrics]
        rows = [
            (r, [(f, r.stratum.get(f, "-")) for f in factors], [(m, _num(r.metric(m))[0]) for m, _ in metrics])
            for r in ctx.records[:MAX_ROWS]
        ]
        numeric = {len(factors) + 2} | set(range(len(head) - len(metrics), len(head)))
        more = MAX_ROWS if len(ctx.records) > MAX_ROWS else 0
        table = RunsTable(head, rows, numeric, more)
    return macro(TEMPLATE, "runs_section")(et.run_lines(ev.runs, limit=None), ctx, ev, table)


def _identity(
    ctx: RunsContext, columns: list[str], labels: list[str], check: Any, as_bytes: bool = False
) -> tuple[list[Any], int]:
    """Per run recording every column: its values and whether ``check`` holds; and how many hold."""
    rows = []
    for r in [r for r in ctx.records if all(r.metric(c) is not None for c in columns)][:MAX_ROWS]:
        values = {c: r.metric(c) for c in columns}
        ok, words = check(values)
        cells = [(label, *_num(values[c], as_bytes)) for c, label in zip(columns, labels, strict=True)]
        rows.append((r, stratum_text(r.stratum), cells, ok, words))
    return rows, sum(row[3] for row in rows)


def conservation_section(ctx: RunsContext) -> Markup:
    """Work conservation (attempted = retained + lost) and the traffic classes, when the runs record them."""
    out = []
    for name, unit, attempted, retained, lost, replayed in WORK_FAMILIES:
        cols = [attempted, retained, lost] + (
            [replayed] if any(r.metric(replayed) is not None for r in ctx.records) else []
        )
        if not any(all(r.metric(c) is not None for c in cols[:3]) for r in ctx.records):
            continue

        def work_check(v: dict[str, float | None]) -> tuple[bool, str]:
            gap = (v[attempted] or 0.0) - (v[retained] or 0.0) - (v[lost] or 0.0)  # noqa: B023 - called within this iteration
            return gap == 0, "holds" if gap == 0 else f"DOES NOT HOLD: attempted - retained - lost = {et.fmt_num(gap)}"

        rows, held = _identity(ctx, cols, cols, work_check)
        verdict = (
            f"attempted = retained + lost holds for all {len(rows)} runs"
            if held == len(rows)
            else f"attempted = retained + lost DOES NOT HOLD for {len(rows) - held} of {len(rows)} runs"
        )
        out.append(
            macro(TEMPLATE, "identity")(
                f"work-{name}",
                f"Work conservation ({unit})",
                verdict,
                held == len(rows),
                "; replayed work is lost work done again.",
                f"Work accounting of every run in {unit}",
                cols,
                f"Work accounting in {unit}",
                rows,
            )
        )
    classes = sorted({m for r in ctx.records for m in r.metrics if m.startswith(TRAFFIC_PREFIX)})
    if classes and any(r.metric(TRAFFIC_TOTAL) is not None for r in ctx.records):

        def traffic_check(v: dict[str, float | None]) -> tuple[bool, str]:
            gap = (v[TRAFFIC_TOTAL] or 0.0) - sum(v[c] or 0.0 for c in classes)
            return (gap == 0, "classes add up" if gap == 0 else f"DOES NOT ADD UP: total - classes = {et.fmt_num(gap)}")

        labels = [c[len(TRAFFIC_PREFIX) :] for c in classes] + ["total"]
        rows, held = _identity(ctx, [*classes, TRAFFIC_TOTAL], labels, traffic_check, as_bytes=True)
        verdict = (
            f"the disjoint classes add up to the total in all {len(rows)} runs"
            if held == len(rows)
            else f"the classes DO NOT ADD UP to the total in {len(rows) - held} of {len(rows)} runs"
        )
        out.append(
            macro(TEMPLATE, "identity")(
                "traffic",
                "Inter-site traffic by class (bytes)",
                verdict,
                held == len(rows),
                ".",
                "Inter-site bytes of every run, per traffic class",
                labels,
                "Inter-site bytes per traffic class",
                rows,
            )
        )
    return Markup().join(out)


def _environment(ctx: RunsContext) -> list[tuple[str, int]]:
    combos: dict[tuple[tuple[str, str], ...], int] = {}
    for r in ctx.records:
        items = [(k, str(v)) for k, v in sorted(r.env.items()) if k != "seconds"]
        items += [(k, str(r.code[k])) for k in CODE_KEYS if k in r.code]
        git = r.code.get("git")
        if isinstance(git, dict) and git.get("commit"):
            items.append(("git", f"{git['commit']}" + (" (dirty)" if git.get("dirty") else "")))
        torch = r.code.get("torch")
        if isinstance(torch, dict) and torch.get("version"):
            items.append(("torch", str(torch["version"])))
        if r.code.get("imported"):
            items.append(("source", "imported table"))
        combos[tuple(items)] = combos.get(tuple(items), 0) + 1
    return [("; ".join(f"{k} {v}" for k, v in combo) or "no environment recorded", n) for combo, n in combos.items()]


def traces_table(ctx: RunsContext) -> Markup:
    rows = [
        (r.run_id, name, r.trace_sha256.get(name, "none"), ctx.problem_of(r.run_id, name))
        for r in ctx.records
        for name in r.traces
    ]
    bad = sum(len(p) for p in ctx.problems.values())
    summary = f"{len(rows)} trace files, each re-hashed now: " + (
        "all match the SHA-256 in their record" if not bad else f"{bad} DO NOT MATCH their record"
    )
    return macro(TEMPLATE, "traces_table")(rows[:MAX_ROWS], summary, origins_text(ctx.records))


def runs_provenance(ctx: RunsContext) -> Markup:
    """Trace hashes and the environment the runs recorded."""
    return macro(TEMPLATE, "runs_provenance")(traces_table(ctx), _environment(ctx))
