"""The ``failure_rate`` invalidator: are the failures the runs met plausible under the planned rate?

Each run gives a count (a metric, or the faults that landed as the command collector records them
for a plan with ``experiment.failures``), an exposure (a metric, a number, or the failures' horizon)
and a planned rate per unit of exposure (the invalidator's, a stratum's factor level, or the
failures' ``poisson_rate``). Assuming independent Poisson counts, each arm's total is tested
against its expected total with the exact two-sided test (:func:`estimators.poisson.poisson_test`,
R's ``poisson.test``), and all runs pooled when no two runs share a seed (arms that share a seed
meet common random draws: their counts are dependent, and their sum is not Poisson). Each test runs
at ``level`` / the number of tests (Bonferroni). More in ``docs/estimators.md``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from collect.collectors.failures import failure_spec
from collect.ledger.columns import Record
from prereg.schema import Plan
from prereg.schema_failures import FACTOR_REF
from prereg.schema_invalidators import FailureRate


@dataclass(frozen=True)
class _Run:
    """One run's count, exposure and planned rate (``expected`` = rate x exposure)."""

    run_id: str
    arm: str
    seed: int | None
    count: int
    exposure: float
    rate: float
    planned: int | None  # own-program runs: faults planned, and landed (the count)


def _number(value: Any, stratum: dict[str, Any]) -> float | None:
    """A number, or a ``"{factor}"`` reference resolved in ``stratum`` (None when not a finite number)."""
    if isinstance(value, str):
        match = FACTOR_REF.match(value)
        value = stratum.get(match.group(1)) if match else None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def _faults(record: Record) -> dict[str, Any] | None:
    code = getattr(record, "code", None) or {}
    faults = code.get("faults") if isinstance(code, dict) else None
    return faults if isinstance(faults, dict) else None


def _read(plan: Plan, inv: FailureRate, record: Record) -> _Run | str:
    """The run's numbers, or why it cannot give them."""
    failures = plan.experiment.failures if plan.experiment is not None else None
    stratum = dict(record.stratum)
    spec = failure_spec(failures, stratum) if inv.count is None else None
    planned: int | None = None
    if inv.count is not None:
        value = record.metric(inv.count)
        if value is None or not math.isfinite(value) or value < 0 or value != round(value):
            return f"no failure count {inv.count}" if value is None else f"failure count {inv.count} = {value:g}"
        count = int(value)
    else:
        faults = _faults(record)
        if faults is None:
            return "no fault record (collected without the plan's failures?)"
        rows = [row for row in faults.get("record", []) if isinstance(row, dict)]
        count, planned = sum(1 for row in rows if row.get("landed")), len(rows)
    control = inv.count is None and spec is None  # a stratum experiment.failures does not select
    rate = 0.0 if control else _number(inv.rate if inv.rate is not None else (spec or {}).get("poisson_rate"), stratum)
    if isinstance(inv.exposure, str):
        exposure = record.metric(inv.exposure)
        if exposure is None or not math.isfinite(exposure) or exposure < 0:
            return f"no exposure {inv.exposure}" if exposure is None else f"exposure {inv.exposure} = {exposure:g}"
    else:
        exposure = _number(inv.exposure if inv.exposure is not None else (spec or {}).get("horizon"), stratum)
        exposure = 0.0 if control else exposure
    if rate is None or rate < 0 or exposure is None:
        return "no planned rate or exposure for its stratum"
    seed = getattr(record, "seed", None)
    return _Run(record.run_id, record.arm, seed, count, float(exposure), rate, planned)


def _listed(items: list[str], n: int = 3) -> str:
    more = f" and {len(items) - n} more" if len(items) > n else ""
    return ", ".join(items[:n]) + more


def _test_line(name: str, runs: list[_Run], alpha: float) -> tuple[float, str]:
    from estimators.poisson import poisson_test  # lazy: numpy, scipy

    r = poisson_test([u.count for u in runs], [u.exposure for u in runs], [u.rate for u in runs], 1.0 - alpha)
    conf = f"{100 * (1 - alpha):.3g}%"
    rates = {u.rate for u in runs}
    planned = f"planned {next(iter(rates)):.4g}" if len(rates) == 1 else "planned rates vary"
    return r.p_value, (
        f"{name}: {r.count} failure(s) vs {r.expected:.4g} expected over {len(runs)} run(s), rate "
        f"{r.estimate:.4g} per unit of exposure ({conf} exact CI [{r.low:.4g}, {r.high:.4g}]; {planned}; "
        f"x{r.ratio:.3g} the plan, [x{r.ratio_low:.3g}, x{r.ratio_high:.3g}]), p = {r.p_value:.3g}"
    )


def _landed(runs: list[_Run], arms: list[str], inv: FailureRate) -> tuple[bool, list[str]]:
    """The share of planned faults that landed, per arm and overall; fired below ``landed_share_min``."""
    own = [u for u in runs if u.planned is not None]
    planned = sum(u.planned or 0 for u in own)
    if not own:
        return False, []
    per_arm = []
    for arm in arms:
        mine = [u for u in own if u.arm == arm]
        if mine:
            per_arm.append(f"{arm} {sum(u.count for u in mine)}/{sum(u.planned or 0 for u in mine)}")
    landed = sum(u.count for u in own)
    share = landed / planned if planned else math.nan
    low = inv.landed_share_min is not None and not share >= inv.landed_share_min
    bound = f" (at least {inv.landed_share_min:g} required)" if inv.landed_share_min is not None else ""
    text = f"{share:.3g}" if planned else "undefined (no fault planned)"
    return low, [f"landed share of planned faults {text}{bound}: {', '.join(per_arm)}"]


def check_failure_rate(
    plan: Plan, inv: FailureRate, records: Sequence[Record]
) -> tuple[bool, float | None, float, str]:
    """(fired, observed: the smallest p-value, threshold: the per-test level, detail); see the module doc."""
    runs: list[_Run] = []
    lacking: list[str] = []
    for record in records:
        got = _read(plan, inv, record)
        if isinstance(got, str):
            lacking.append(f"{record.run_id} ({got})")
        else:
            runs.append(got)
    tested = [u for u in runs if u.rate > 0 and u.exposure > 0]
    controls = [u for u in runs if (u.rate == 0 or u.exposure == 0) and u.count > 0]
    arms = [a for a in plan.arms if any(u.arm == a for u in tested)]
    seeds = [u.seed for u in tested if u.seed is not None]
    pooled = len(arms) > 1 and len(seeds) == len(set(seeds))
    n_tests = len(arms) + (1 if pooled else 0)
    alpha = inv.level / max(1, n_tests)
    problems: list[str] = []
    if lacking:
        problems.append(f"{len(lacking)} run(s) cannot show their failures: {_listed(lacking)}")
    if controls:
        problems.append(
            f"{len(controls)} run(s) planned to meet no failure met some: "
            + _listed([f"{u.run_id} ({u.count})" for u in controls])
        )
    groups = [(f"arm {a}", [u for u in tested if u.arm == a]) for a in arms] + ([("pooled", tested)] if pooled else [])
    lines, implausible, p_values = [], [], []
    for name, group in groups:
        p, line = _test_line(name, group, alpha)
        p_values.append(p)
        lines.append(line)
        if p <= alpha:
            implausible.append(name)
    if len(arms) > 1 and not pooled:
        lines.append("pooled: not tested (arms share seeds: their counts are dependent, their sum not Poisson)")
    low_share, share_lines = _landed(runs, list(plan.arms), inv)
    if implausible:
        problems.insert(0, f"implausible under the planned rate: {', '.join(implausible)} (p <= {alpha:.3g})")
    if low_share:
        problems.append("too few planned faults landed")
    if not tested and not lacking:
        problems.append("no run planned a failure to test")
    head = f"level {inv.level:g}, {alpha:.3g} per test (Bonferroni over {n_tests})"
    detail = "; ".join([*problems, head, *lines, *share_lines])
    return bool(problems), (min(p_values) if p_values else None), alpha, detail
