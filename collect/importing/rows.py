"""One row of an imported table -> one ``RunRecord``: the cell rules and the row-by-row reference path.

More in ``docs/internals.md``.
"""

from __future__ import annotations

import difflib
import math
import re
from datetime import UTC, datetime, timedelta
from typing import Any

from collect.engine.runs import stratum_seed
from collect.ledger.store import RunRecord, TelemetrySummary, encode_metric, run_id
from estimators.vocabulary import EVIDENCE_ORDER, stronger
from prereg.errors import InputError
from prereg.jsoncodec import brief_integer, oversized_number
from prereg.schema import Plan, level_key

RESERVED = {"arm", "replicate", "run_id", "status", "seed", "started_at", "finished_at"}
#: the ``<signal>.<field>`` columns: the summary's scalar fields (a per-metric bound is ``<metric>.bound``)
TELEMETRY_FIELDS = set(TelemetrySummary.model_fields) - {"metric_bounds", "phases", "metric_systematic_bounds"}


class CellError(InputError, ValueError):
    """A cell that does not fit, attributed to its column (so repeats can be said once)."""

    def __init__(self, column: str, message: str) -> None:
        super().__init__(message)
        self.column = column


def metrics_on(plan: Plan, signal: str) -> list[str]:
    """The plan's metrics backed by ``signal``, in plan order."""
    return [name for name, m in plan.metrics.items() if m.signal == signal]


def metric_bound_columns(plan: Plan) -> dict[str, tuple[str, str]]:
    """``<metric>.bound`` column -> (its signal, the metric), for every signal-backed metric whose
    name is not itself a signal's (such a metric's bound column is ``<signal>.bound``)."""
    signals = set(signals_of(plan))
    return {f"{name}.bound": (m.signal, name) for name, m in plan.metrics.items() if m.signal and name not in signals}


def signal_fields(plan: Plan, signal: str) -> list[str]:
    """The ``<signal>.<field>`` fields a table may give: ``bound`` only when exactly one metric uses
    the signal (one bound cannot say which of several metrics it belongs to)."""
    shared = len(metrics_on(plan, signal)) > 1
    return [f for f in sorted(TELEMETRY_FIELDS) if not (f == "bound" and shared)]


def expected_columns(plan: Plan) -> list[str]:
    """Every column the plan accepts: arm, factors, reserved, metrics, telemetry ``<signal>.<field>``
    and ``<metric>.bound``."""
    signals = list(signals_of(plan))
    columns = (
        ["arm", *plan.strata.factors]
        + sorted(RESERVED - {"arm"})
        + list(plan.metrics)
        + [f"{s}.{f}" for s in signals for f in signal_fields(plan, s)]
        + list(metric_bound_columns(plan))
    )
    return list(dict.fromkeys(columns))


def _bound_column_errors(seen: list[str], plan: Plan) -> tuple[list[str], set[str]]:
    """Errors for a signal-level bound the table cannot attribute, and the columns they cover."""
    errors, covered = [], set()
    per_metric = metric_bound_columns(plan)
    for signal in signals_of(plan):
        column = f"{signal}.bound"
        names = metrics_on(plan, signal)
        own = [c for c, (_, m) in per_metric.items() if m in names and c in seen]
        if column in seen and len(names) > 1:
            covered.add(column)
            errors.append(
                f"column {column!r}: signal {signal} backs several metrics ({', '.join(names)}), whose bounds "
                "differ (a phase's bound is not the total's), so one bound cannot say which metric it belongs to; "
                "give each metric's measurement bound in its own column: "
                + ", ".join(f"{m}.bound" for m in names if f"{m}.bound" in per_metric)
            )
        elif column in seen and own:
            errors.append(f"columns {column!r} and {own[0]!r} both give {names[0]}'s bound; keep one")
    return errors, covered


def _column_hint(column: str, expected: list[str]) -> str:
    if column.strip() == "" or re.fullmatch(r"Unnamed: \d+|index|level_\d+", column.strip()):
        return "it looks like a pandas index column: write the table with index=False, or drop that column"
    bare = re.sub(r"\s*[\(\[].*?[\)\]]\s*$", "", column).strip()
    if bare != column and bare in expected:
        return f"did you mean {bare!r}? Units belong in the plan's metrics, not in the header"
    close = difflib.get_close_matches(bare or column, expected, n=1, cutoff=0.6)
    return f"did you mean {close[0]!r}?" if close else "no plan column is close"


def check_columns(rows: list[dict[str, Any]], plan: Plan) -> list[str]:
    """One error per unknown column (with a did-you-mean), and one for each missing required column."""
    expected = expected_columns(plan)
    seen: list[str] = []
    for row in rows:
        seen += [str(c) for c in row if str(c) not in seen]
    errors, covered = _bound_column_errors(seen, plan)
    unknown = [c for c in seen if c not in expected and c not in covered]
    errors += [f"column {c!r} is not a column of this plan: {_column_hint(c, expected)}" for c in unknown]
    missing = [c for c in ["arm", *plan.strata.factors] if c not in seen]
    errors += [f"required column {c!r} is missing" for c in missing]
    if errors:
        errors.append("expected columns: " + ", ".join(expected) + " (only arm and the stratum factors are required)")
    return errors


def match_level(value: Any, lookup: tuple[dict[str, Any], dict[str, list[Any]]]) -> tuple[bool, Any]:
    """The plan level ``value`` names: the same typed value, else the one level written as its text."""
    if value is None or value == "":
        return False, None
    by_key, by_text = lookup
    key = level_key(value)
    if key in by_key:
        return True, by_key[key]
    candidates = by_text.get(str(value).strip(), [])
    if len(candidates) == 1:
        return True, candidates[0]
    return False, None


#: the largest count a ``<signal>.updates`` cell may hold: what a signed 64-bit counter holds
MAX_COUNT = 2**63 - 1


def parse_number(value: Any, what: str) -> float | None:
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, bool):
        raise CellError(what, f"{what}: {value!r} is not a number")
    too_large = oversized_number(value)  # 10**400 or 1e400: refused, never an OverflowError or a silent inf
    if too_large is not None:
        raise CellError(what, f"{what}: {too_large}")
    if isinstance(value, (int, float)):
        return float(value)
    text = str(value).strip().lower()
    special = {
        "nan": math.nan,
        "inf": math.inf,
        "+inf": math.inf,
        "-inf": -math.inf,
        "infinity": math.inf,
        "-infinity": -math.inf,
    }
    if text in special:
        return special[text]
    try:
        return float(text)
    except ValueError:
        raise CellError(what, f"{what}: {value!r} is not a number") from None


_INTEGER = re.compile(r"\s*[+-]?[0-9]+\s*")


def parse_integer(value: Any, what: str, default: int | None) -> int | None:
    """A whole number as written, exactly (a 63-bit seed is not rounded through a float); a whole
    number written as a decimal (``7.0``, ``1e3``) through ``parse_number``; empty: ``default``."""
    if type(value) is int:
        return value
    if isinstance(value, str) and _INTEGER.fullmatch(value):
        return int(value)
    number = parse_number(value, what)
    if number is None:
        return default
    if not math.isfinite(number) or number != int(number):
        raise CellError(what, f"{what}: {value!r} is not a whole number")
    return int(number)


def parse_time(value: Any, column: str) -> str | None:
    """A UTC ISO-8601 time as written (None when empty); anything else is a cell error."""
    if value is None or str(value).strip() == "":
        return None
    text = str(value).strip()
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise CellError(column, f"{column} = {text!r} is not an ISO-8601 time (e.g. 2026-11-29T10:16:29Z)") from None
    if parsed.tzinfo is None:
        raise CellError(column, f"{column} = {text!r} has no time zone; write UTC with a Z (e.g. {text}Z)")
    now = datetime.now(UTC)
    if parsed > now + FUTURE_TOLERANCE:
        raise CellError(
            column,
            f"{column} = {text!r} is in the future (now {now.replace(microsecond=0).isoformat()}"
            "): a run cannot have started or finished yet; check the clock and the time zone",
        )
    return text


#: how far ahead of this machine's clock a run's time may be (clocks of two machines differ a little)
FUTURE_TOLERANCE = timedelta(minutes=10)


def arm_cell(value: Any, plan: Plan) -> str:
    """The arm a cell names (stripped), or a ``CellError``."""
    if not isinstance(value, str) or value.strip() not in plan.arms:
        raise CellError("arm", f"arm {value!r} is not an arm of the plan ({', '.join(plan.arms)})")
    return value.strip()


def level_cell(value: Any, factor: str, plan: Plan) -> Any:
    """The plan level of ``factor`` a cell names, or a ``CellError`` (with a hint for ``101.0``)."""
    lookup = plan.strata.level_lookup[factor]
    ok, level = match_level(value, lookup)
    if not ok:
        levels = plan.strata.factors[factor]
        text = str(value).strip()
        hint = ""
        if text.endswith(".0") and match_level(text[:-2], lookup)[0]:
            hint = (
                f"; the column holds whole numbers written as decimals ({text} for {text[:-2]}): write "
                "them without '.0' (pandas writes integer columns with gaps as floats)"
            )
        shown = ", ".join(map(str, levels[:20])) + (f", ... ({len(levels)} levels)" if len(levels) > 20 else "")
        raise CellError(factor, f"{factor} = {brief_value(value)} is not a level of the plan ({shown}){hint}")
    return level


def brief_value(value: Any) -> str:
    """A cell as a message shows it: its repr, a long integer by its size, a long text cut at 40 characters."""
    if isinstance(value, int) and not isinstance(value, bool):
        return brief_integer(value)
    if isinstance(value, str) and len(value) > 40:
        return f"{value[:40]!r}... ({len(value)} characters)"
    return repr(value)


def replicate_cell(value: Any, plan: Plan) -> int:
    """The replicate a cell names (empty: 0), or a ``CellError``."""
    replicate = parse_integer(value, "replicate", 0)
    if replicate is None or not 0 <= replicate < plan.strata.replicates:
        shown = "empty" if replicate is None else brief_integer(replicate)
        raise CellError("replicate", f"replicate {shown} is outside the plan's 0..{plan.strata.replicates - 1}")
    return replicate


def status_cell(value: Any) -> str:
    """``complete`` (also for an empty cell) or ``failed``, or a ``CellError``."""
    status = (str(value or "complete")).strip()
    if status not in ("complete", "failed"):
        raise CellError("status", f"status {status!r} must be 'complete' or 'failed'")
    return status


def metric_cell(value: Any, name: str, plan: Plan | None = None) -> float | str | None:
    """A metric cell as stored (``encode_metric``): None when empty, non-finite values by name; with
    ``plan``, a finite value outside the metric's declared ``range`` is a ``CellError``."""
    number = parse_number(value, name)
    if plan is not None:
        check_range(number, name, plan)
    return encode_metric(number)


def check_range(number: float | None, name: str, plan: Plan) -> None:
    """``CellError`` when ``number`` is finite and outside ``name``'s declared ``range`` (non-finite
    values are kept for the invalidators, as everywhere)."""
    metric = plan.metrics.get(name)
    if metric is None or metric.range is None or number is None or not math.isfinite(number):
        return
    low, high = metric.range
    if not low <= number <= high:
        raise CellError(
            name,
            f"{name} = {number:g} is outside the plan's range [{low:g}, {high:g}] {metric.unit} "
            "(a value in another unit, or transformed, e.g. a logarithm?)",
        )


def evidence_cell(value: Any, signal: str, plan: Plan) -> str:
    """The evidence class of ``signal`` (``value``: its ``<signal>.evidence`` cell, None when the
    table has no such column), or a ``CellError`` for an unknown class or one weaker than the plan's."""
    metric = signals_of(plan)[signal]
    evidence = str(value or metric.evidence).strip()
    column = f"{signal}.evidence"
    if evidence not in EVIDENCE_ORDER:
        raise CellError(column, f"{column} = {evidence!r} is not an evidence class ({', '.join(EVIDENCE_ORDER)})")
    if stronger(metric.evidence, evidence):
        backed = [n for n, m in plan.metrics.items() if m.signal == signal]
        raise CellError(
            column,
            f"{column} = {evidence!r}, but the plan declares "
            f"{', '.join(backed)} '{metric.evidence}': a plan cannot claim stronger "
            f"evidence than its data carry; declare 'evidence: {evidence}'",
        )
    return evidence


def telemetry_cell(value: Any, signal: str, field: str) -> int | float | None:
    """A ``<signal>.<field>`` cell (not ``evidence``): a whole number for ``updates``, a bound for
    ``bound``, else a number."""
    what = f"{signal}.{field}"
    if field == "bound":
        return bound_cell(value, what)
    if field != "updates":
        return parse_number(value, what)
    count = parse_integer(value, what, None)
    if count is not None and not 0 <= count <= MAX_COUNT:
        raise CellError(
            what,
            f"{what}: {brief_integer(count)} is not a count of sensor updates (a whole number from 0 to 2**63 - 1)",
        )
    return count


def bound_cell(value: Any, column: str) -> float | None:
    """A measurement bound (the metric's unit): None when empty, else a finite number >= 0."""
    number = parse_number(value, column)
    if number is not None and not (math.isfinite(number) and number >= 0):
        raise CellError(column, f"{column} = {value!r}: a measurement bound is a finite number >= 0 (metric units)")
    return number


def metric_bounds_cells(row: dict[str, Any], signal: str, plan: Plan) -> tuple[bool, dict[str, float] | None]:
    """``(the table has a <metric>.bound column for this signal, metric -> its bound from the row's
    non-empty cells, or None)`` -- a record's ``metric_bounds`` for ``signal``."""
    columns = [(c, m) for c, (s, m) in metric_bound_columns(plan).items() if s == signal and c in row]
    bounds = {m: b for c, m in columns if (b := bound_cell(row[c], c)) is not None}
    return bool(columns), (bounds or None)


def seed_cell(value: Any, stratum: dict[str, Any], replicate: int, plan: Plan) -> int | None:
    """A ``seed`` cell (None when empty): a whole number that must be the seed ``collect run`` derives
    for the row's cell (``collect.engine.runs.stratum_seed`` of its stratum and replicate; ``collect
    plan`` lists them), else a ``CellError``. When the plan has a stratum factor called ``seed`` the
    column is that factor's level, and no derived seed is checked."""
    seed = parse_integer(value, "seed", None)
    if seed is None or "seed" in plan.strata.factors:
        return seed
    derived = stratum_seed(stratum, replicate)
    if seed != derived:
        raise CellError(
            "seed",
            f"seed {brief_integer(seed)} is not the plan's seed for stratum {stratum} replicate {replicate}: "
            f"collect run derives {derived} from the stratum and replicate (never the arm); "
            "'collect plan LOCK' lists every planned run's seed",
        )
    return seed


def finished_cell(value: Any) -> str | None:
    """``finished_at`` as written (None when empty)."""
    return str(value) if value not in (None, "") else None


def signals_of(plan: Plan) -> dict[str, Any]:
    """Signal -> the metric it backs (the last one, when several name it)."""
    return {m.signal: m for m in plan.metrics.values() if m.signal}


def row_record(
    row: dict[str, Any], number: int, plan: Plan, plan_sha256: str, source: str, *, lock_seal: str | None = None
) -> RunRecord:
    """One row as a validated record (the reference path); a ``CellError`` names the first cell that does not fit."""
    arm = arm_cell(row.get("arm"), plan)
    stratum = {}
    for factor in plan.strata.factors:
        if factor not in row:
            raise CellError(factor, f"missing the stratum factor column {factor!r}")
        stratum[factor] = level_cell(row[factor], factor, plan)
    replicate = replicate_cell(row.get("replicate"), plan)
    status = status_cell(row.get("status"))
    metrics = {name: metric_cell(row.get(name), name, plan) for name in plan.metrics if name in row}
    telemetry: dict[str, TelemetrySummary] = {}
    for signal in signals_of(plan):
        values = {f: row[f"{signal}.{f}"] for f in TELEMETRY_FIELDS if f"{signal}.{f}" in row}
        has_bounds, metric_bounds = metric_bounds_cells(row, signal, plan)
        if not values and not has_bounds:
            continue
        summary: dict[str, Any] = {"evidence": evidence_cell(values.pop("evidence", None), signal, plan)}
        for f, v in values.items():
            summary[f] = telemetry_cell(v, signal, f)
        if metric_bounds is not None:
            summary["metric_bounds"] = metric_bounds
        telemetry[signal] = TelemetrySummary.model_validate(summary)
    given_id = str(row.get("run_id") or "").strip()
    return RunRecord.model_validate(
        {
            "run_id": given_id or run_id(plan_sha256, stratum, arm, replicate, imported=True),
            "prereg_sha256": plan_sha256,
            "stratum": stratum,
            "arm": arm,
            "replicate": replicate,
            "status": status,
            "metrics": metrics,
            "telemetry": telemetry,
            "seed": seed_cell(row.get("seed"), stratum, replicate, plan),
            "started_at": parse_time(row.get("started_at"), "started_at"),
            "finished_at": finished_cell(row.get("finished_at")),
            "code": {"imported": True},
            "env": {},
            "source": f"import:{source} row {number}",
            **({"lock_seal": lock_seal} if lock_seal is not None else {}),
        }
    )


def content(record: RunRecord) -> dict[str, Any]:
    """A record without its chain fields: what makes two imports of one row the same."""
    return record.model_dump(mode="json", exclude={"prev_sha256", "record_sha256", "trace_sha256"})
