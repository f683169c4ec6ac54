"""The HTML report's sections from the runs folder: the per-run table, work conservation, traffic
classes, trace hashes and the runs' environment.

The runs folder is read only through :mod:`collect.ledger.store` (``read_ledger`` for the records,
``trace_problems`` to re-hash each trace against its record); nothing here opens a trace. The
checks shown are bookkeeping identities on the recorded numbers (attempted = retained + lost;
the traffic classes add up to the total), never statistics. ``collect`` is imported lazily.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from collect.ledger.store import read_ledger, trace_problems
from reports.data.origin import origins_text
from reports.html.evaluation import cell, table
from reports.html.svg import esc
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


def _num_cell(label: str, value: float | None, as_bytes: bool = False) -> str:
    if value is None:
        return cell(label, "-", "num", sort="")
    sort = "" if math.isnan(value) else repr(value)
    if as_bytes:  # the exact count stays in the sort key and the tooltip
        exact = f"{value:.0f}" if math.isfinite(value) else str(value)
        return cell(label, f'<span title="{esc(exact)} bytes">{esc(byte_text(value))}</span>', "num", sort=sort)
    return cell(label, esc(et.fmt_num(value)), "num", sort=sort)


def _capped(records: list[RunRecord]) -> tuple[list[RunRecord], str]:
    if len(records) <= MAX_ROWS:
        return records, ""
    return records[:MAX_ROWS], (
        f'<p class="muted">The first {MAX_ROWS} of {len(records)} runs are listed; '
        "<code>gates evaluate --json</code> and the ledger hold all.</p>"
    )


def gate_metrics(ev: Evaluation) -> list[tuple[str, str]]:
    """(metric, unit) of every gate, in gate order, once each."""
    seen: dict[str, str] = {}
    for g in ev.gates:
        seen.setdefault(g.metric, g.unit)
    return list(seen.items())


def ledger_notice(ctx: RunsContext, ev: Evaluation) -> str:
    """Words when the ledger read now is not the one evaluated (the tables show it as it is now)."""
    if ctx.ledger_matches:
        return ""
    return (
        f'<p class="alarm">The runs folder\'s ledger is not the one evaluated: it now has sha256 '
        f'<span class="hash">{esc(ctx.ledger.sha256 or "none")}</span> and {len(ctx.ledger.records)} records; '
        f'the evaluation read sha256 <span class="hash">{esc(ev.ledger.sha256 or "none")}</span> with '
        f"{ev.ledger.records} records. The run tables below show the ledger as it is now; the gates show "
        "what was evaluated. Run <code>gates evaluate</code> again.</p>"
    )


def runs_section(ev: Evaluation, ctx: RunsContext | None) -> str:
    """Run accounting (from the artifact) and, with the runs folder, the sortable per-run table."""
    lines = et.run_lines(ev.runs, limit=None)
    parts = [f"<p>{esc(lines[0])}</p>"]
    if lines[1:]:
        parts.append("<ul>" + "".join(f'<li class="bad">{esc(x)}</li>' for x in lines[1:]) + "</ul>")
    if ctx is None:
        parts.append(
            '<p class="notice">No runs folder beside this evaluation: the per-run table, work '
            "accounting, recovery timeline and telemetry need <code>reports html RUNS</code> "
            "(the folder holding ledger.jsonl and evaluation.json).</p>"
        )
        return "".join(parts)
    parts.append(ledger_notice(ctx, ev))
    factors = list(dict.fromkeys(k for r in ctx.records for k in r.stratum))
    metrics = gate_metrics(ev)
    head = ["run", "arm", *factors, "replicate", "status", "started (UTC)"] + [
        f"{m} ({u})" if u else m for m, u in metrics
    ]
    rows = []
    shown, more = _capped(ctx.records)
    for r in shown:
        cells = [cell("run", f"<code>{esc(r.run_id)}</code>"), cell("arm", esc(r.arm))]
        cells += [cell(f, esc(r.stratum.get(f, "-"))) for f in factors]
        status = esc(r.status) if r.status == "complete" else f'<strong class="bad">{esc(r.status)}</strong>'
        cells += [
            cell("replicate", str(r.replicate), "num", sort=str(r.replicate)),
            cell("status", status),
            cell("started (UTC)", esc(r.started_at or "not recorded"), "nowrap"),
        ]
        cells += [_num_cell(m, r.metric(m)) for m, _ in metrics]
        rows.append("<tr>" + "".join(cells) + "</tr>")
    note = f" ({ctx.other_plan} records under another plan hash are not listed)" if ctx.other_plan else ""
    parts.append(
        f"<p>{len(ctx.records)} runs recorded under this plan in <code>{esc(ctx.ledger.path)}</code>"
        f"{esc(note)}; select a column header to sort.</p>"
    )
    numeric = set(range(len(factors) + 2, len(factors) + 3)) | set(range(len(head) - len(metrics), len(head)))
    parts.append(table(head, rows, cls="sortable", caption="Every run", table_id="runs-table", num=numeric) + more)
    return "".join(parts)


def _collapsed(summary: str, ok: bool, body: str) -> str:
    """A table behind a summary line, open when it shows a problem."""
    return f"<details{'' if ok else ' open'}><summary>{esc(summary)}</summary>{body}</details>"


def _flagged(text: str, ok: bool) -> str:
    return esc(text) if ok else f'<strong class="bad">{esc(text)}</strong>'


def _identity_rows(
    ctx: RunsContext, columns: list[str], parts: list[str], check: Any, as_bytes: bool = False
) -> tuple[list[str], int, int]:
    rows, held, counted = [], 0, 0
    for r in _capped([r for r in ctx.records if all(r.metric(c) is not None for c in columns)])[0]:
        values = {c: r.metric(c) for c in columns}
        ok, words = check(values)
        counted += 1
        held += ok
        cells = [
            cell("run", f"<code>{esc(r.run_id)}</code>"),
            cell("arm", esc(r.arm)),
            cell("stratum", esc(stratum_text(r.stratum))),
        ]
        cells += [_num_cell(label, values[c], as_bytes) for c, label in zip(columns, parts, strict=True)]
        cells.append(cell("check", esc(words) if ok else f'<strong class="bad">{esc(words)}</strong>'))
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return rows, held, counted


def conservation_section(ctx: RunsContext) -> str:
    """Work conservation (attempted = retained + lost) and the traffic classes, when the runs record them."""
    out = []
    for name, unit, attempted, retained, lost, replayed in WORK_FAMILIES:
        cols = [attempted, retained, lost] + (
            [replayed] if any(r.metric(replayed) is not None for r in ctx.records) else []
        )
        if not any(all(r.metric(c) is not None for c in cols[:3]) for r in ctx.records):
            continue

        def work_check(v: dict[str, float | None]) -> tuple[bool, str]:
            a, k, lo = (v[attempted] or 0.0), (v[retained] or 0.0), (v[lost] or 0.0)  # noqa: B023 - called within this iteration
            gap = a - k - lo
            words = "holds" if gap == 0 else f"DOES NOT HOLD: attempted - retained - lost = {et.fmt_num(gap)}"
            return gap == 0, words

        rows, held, counted = _identity_rows(ctx, cols, cols, work_check)
        verdict = (
            f"attempted = retained + lost holds for all {counted} runs"
            if held == counted
            else f"attempted = retained + lost DOES NOT HOLD for {counted - held} of {counted} runs"
        )
        out.append(
            f'<h3 id="work-{esc(name)}">Work conservation ({esc(unit)})</h3>'
            f"<p>{_flagged(verdict, held == counted)}; replayed work is lost work done again.</p>"
            + _collapsed(
                f"Work accounting of every run in {unit}",
                held == counted,
                table(
                    ["run", "arm", "stratum", *cols, "check"],
                    rows,
                    cls="sortable",
                    caption=f"Work accounting in {unit}",
                    num=set(range(3, 3 + len(cols))),
                ),
            )
        )
    classes = sorted({m for r in ctx.records for m in r.metrics if m.startswith(TRAFFIC_PREFIX)})
    if classes and any(r.metric(TRAFFIC_TOTAL) is not None for r in ctx.records):
        cols = [*classes, TRAFFIC_TOTAL]

        def traffic_check(v: dict[str, float | None]) -> tuple[bool, str]:
            gap = (v[TRAFFIC_TOTAL] or 0.0) - sum(v[c] or 0.0 for c in classes)
            return (gap == 0, "classes add up" if gap == 0 else f"DOES NOT ADD UP: total - classes = {et.fmt_num(gap)}")

        labels = [c[len(TRAFFIC_PREFIX) :] for c in classes] + ["total"]
        rows, held, counted = _identity_rows(ctx, cols, labels, traffic_check, as_bytes=True)
        verdict = (
            f"the disjoint classes add up to the total in all {counted} runs"
            if held == counted
            else f"the classes DO NOT ADD UP to the total in {counted - held} of {counted} runs"
        )
        out.append(
            '<h3 id="traffic">Inter-site traffic by class (bytes)</h3>'
            f"<p>{_flagged(verdict, held == counted)}.</p>"
            + _collapsed(
                "Inter-site bytes of every run, per traffic class",
                held == counted,
                table(
                    ["run", "arm", "stratum", *labels, "check"],
                    rows,
                    cls="sortable",
                    caption="Inter-site bytes per traffic class",
                    num=set(range(3, 3 + len(cols))),
                ),
            )
        )
    return "".join(out)


def _environment(ctx: RunsContext) -> str:
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
        key = tuple(items)
        combos[key] = combos.get(key, 0) + 1
    if not combos:
        return "<p>No runs recorded.</p>"
    out = []
    for combo, count in combos.items():
        desc = "; ".join(f"{k} {v}" for k, v in combo) or "no environment recorded"
        out.append(f"<li>{count} run{'s' if count != 1 else ''}: {esc(desc)}</li>")
    return "<ul>" + "".join(out) + "</ul>"


def traces_table(ctx: RunsContext) -> str:
    rows = []
    for r in ctx.records:
        for name in r.traces:
            problem = ctx.problem_of(r.run_id, name)
            status = f'<strong class="bad">{esc(problem)}</strong>' if problem else "matches the ledger"
            digest = esc(r.trace_sha256.get(name, "none"))
            rows.append(
                "<tr>"
                + cell("run", f"<code>{esc(r.run_id)}</code>")
                + cell("trace", f"<code>{esc(name)}</code>")
                + cell("sha256 in the record", f'<span class="hash">{digest}</span>')
                + cell("check", status)
                + "</tr>"
            )
    if not rows:
        return f"<p>No run kept a trace file (none of its {esc(origins_text(ctx.records))} did).</p>"
    bad = sum(len(p) for p in ctx.problems.values())
    summary = f"{len(rows)} trace files, each re-hashed now: " + (
        "all match the SHA-256 in their record" if not bad else f"{bad} DO NOT MATCH their record"
    )
    return (
        f"<details><summary>{esc(summary)}</summary>"
        + table(
            ["run", "trace", "sha256 in the record", "check"],
            rows[:MAX_ROWS],
            cls="sortable",
            caption="Trace files and their hashes",
        )
        + "</details>"
    )


def runs_provenance(ctx: RunsContext) -> str:
    """Trace hashes and the environment the runs recorded."""
    return (
        '<h3 id="trace-hashes">Trace hashes</h3>'
        + traces_table(ctx)
        + '<h3 id="environment">Environment of the runs</h3>'
        + _environment(ctx)
    )
