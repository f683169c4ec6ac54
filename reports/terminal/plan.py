"""A frozen plan for reviewers: each gate and invalidator as a sentence, the amendment chain.

``plan_sentences(lock)`` is plain data (also used by ``prereg show --json``); ``render_lock``
turns a lock and its verification report into rich renderables. Words carry every meaning
(verdicts, post-data flags, evidence classes); colour only repeats them.
"""

from __future__ import annotations

import math
from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text

from estimators.expressions import parse_contrast
from estimators.vocabulary import Rule
from prereg.direction import is_interaction, ratio_margin_words, rule_means, sides
from reports.words.safe_text import clean_tree

_OP_WORDS = {"<": "is below", "<=": "is at most", ">": "is above", ">=": "is at least"}
EVIDENCE_WORDS = {
    "measured": "measured (read from a sensor or a real run)",
    "modeled": "modeled (from a simulator)",
    "prior": "prior (assumed, not fitted)",
    "unmeasured": "unmeasured",
    "unavailable": "unavailable (no such sensor)",
}


def _num(value: float | None) -> str:
    return "?" if value is None else f"{value:g}"


def _pct(value: float) -> str:
    return f"{100 * value:.4g}%"


def gate_sentence(gate: dict[str, Any], metrics: dict[str, Any]) -> str:
    """One sentence saying exactly when ``gate`` (canonical plan data) passes."""
    contrast = parse_contrast(gate["contrast"])
    rule = Rule.parse(gate["pass_if"])
    metric = gate["metric"]
    unit = metrics.get(metric, {}).get("unit", "?")
    confidence = float(gate["confidence"])
    if contrast.scale == "ratio":
        subject = f"the ratio {contrast.text} of {metric} (analysed on the log scale)"
        unit_text = " (a ratio)"
    else:
        subject = f"{contrast.text} {metric} [{unit}]"
        unit_text = f" {unit}"
    if rule.quantity == "within":
        alpha = (1 - confidence) / 2
        text = (
            f"passes if the two-sided {_pct(confidence)} interval of {subject} lies within "
            f"[{_num(rule.low)}, {_num(rule.high)}]{unit_text} (equivalence: two one-sided tests at {_pct(alpha)} each)"
        )
    elif rule.quantity == "estimate":
        text = (
            f"DESCRIPTIVE (no test, no p-value): passes if the point estimate of {subject} "
            f"{_OP_WORDS[str(rule.op)]} {_num(rule.threshold)}{unit_text}"
        )
    else:
        one_sided = (1 + confidence) / 2
        text = (
            f"passes if the one-sided {_pct(one_sided)} {rule.quantity} bound of {subject} "
            f"{_OP_WORDS[str(rule.op)]} {_num(rule.threshold)}{unit_text}"
        )
    if contrast.scale == "ratio":
        text += f" ({ratio_margin_words(rule)})"
    text += f"; {direction_words(gate, metrics)}"
    text += f"; method {gate['method']}"
    if gate["method"] == "signflip":
        text += f" (exact up to 20 blocks, beyond that {gate['resamples']} random sign patterns, seed {gate['seed']})"
    elif "resamples" in gate:
        text += f" ({gate['resamples']} resamples, seed {gate['seed']})"
    elif gate["method"] == "betting":
        text += (
            " (a betting confidence sequence: valid for any distribution inside the metric's declared range, "
            "at the planned n and at every look)"
        )
    if gate.get("confidence_reason") and confidence < 0.80:
        alpha = (1 - confidence) / 2
        text += (
            f"; this gate's interval is only {_pct(confidence)} two-sided (each one-sided test at {_pct(alpha)}, "
            f"below the 80% floor), because: {gate['confidence_reason']}"
        )
    if gate.get("role") == "sensitivity":
        text += "; a sensitivity gate: reported, never decides the claim"
    return text + "."


def direction_words(gate: dict[str, Any], metrics: dict[str, Any]) -> str:
    """What a pass shows about the contrast's first arm(s), in words (with a declared intent named)."""
    contrast = parse_contrast(gate["contrast"])
    rule = Rule.parse(gate["pass_if"])
    better = metrics.get(gate["metric"], {}).get("better", "lower")
    unit = metrics.get(gate["metric"], {}).get("unit", "")
    pos, neg = sides(contrast)
    first, other = " and ".join(pos), " and ".join(neg)
    if is_interaction(contrast):
        return "an interaction (a difference of differences): its sign is not one arm being better"
    means = rule_means(contrast, rule, better)
    if means is None:
        return f"two-sided: a pass shows {first} and {other} differ by less than the margin"
    if gate.get("direction") == "first_arm_worse":
        return (
            f"DECLARED INTENT first_arm_worse: a pass shows {first} is WORSE than {other} "
            f"({gate['metric']}: {better} is better), on purpose"
        )
    null = 1.0 if contrast.scale == "ratio" else 0.0
    threshold = float(rule.threshold if rule.threshold is not None else math.nan)
    worse_is_large = (better == "lower") == (means == "first_arm_better")
    if threshold == null:
        claim = f"{first} is better than {other}"
    elif (threshold > null) == worse_is_large:
        size = _pct(abs(threshold - 1)) if contrast.scale == "ratio" else f"{_num(abs(threshold))} {unit}"
        claim = f"{first} is at most {size} worse than {other} (noninferiority)"
    else:
        size = _pct(abs(threshold - 1)) if contrast.scale == "ratio" else f"{_num(abs(threshold))} {unit}"
        claim = f"{first} is better than {other} by more than {size}"
    return f"a pass shows {claim} ({gate['metric']}: {better} is better)"


def _blocks(inv: dict[str, Any]) -> str:
    return "blocks all gates" if inv["blocks"] == "all" else "blocks " + ", ".join(inv["blocks"])


def _failure_rate_sentence(inv: dict[str, Any]) -> str:
    """When a ``failure_rate`` invalidator fires (``gates.failure_rate``)."""
    count = f"the failure counts ({inv['count']})" if inv.get("count") else "the faults that landed"
    exposure = inv.get("exposure")
    exposure = (
        "experiment.failures.horizon" if exposure is None else exposure if isinstance(exposure, str) else _num(exposure)
    )
    rate = inv.get("rate")
    rate = "experiment.failures.poisson_rate" if rate is None else rate if isinstance(rate, str) else _num(rate)
    text = (
        f"fires if {count}, per arm or pooled, are implausible at a planned rate of {rate} per unit of "
        f"exposure (exposure: {exposure}; the exact Poisson test, level {_num(inv.get('level', 0.05))} "
        "split over its tests), or if a run lacks its count or exposure"
    )
    if inv.get("landed_share_min") is not None:
        text += f", or if fewer than {_num(inv['landed_share_min'])} of the planned faults landed"
    return text


def invalidator_sentence(inv: dict[str, Any], metrics: dict[str, Any]) -> str:
    """One sentence saying when ``inv`` fires and what it refuses."""
    kind = inv["kind"]
    if kind == "counter_support":
        text = f"fires if any run saw fewer than {inv['min_updates']} updates of {inv['signal']}"
        if inv.get("phase"):
            text += f" inside its {inv['phase']} phases (runs without that phase are not counted)"
    elif kind == "sensor_update_period":
        text = f"fires if any run's effective update period of {inv['signal']} exceeds {_num(inv['max_ms'])} ms"
    elif kind == "logger_calibration":
        text = (
            f"fires if any run's achieved / requested poll interval for {inv['signal']} "
            f"exceeds {_num(inv['max_ratio'])}"
        )
    elif kind == "metric_bounds":
        unit = metrics.get(inv["metric"], {}).get("unit", "")
        low = _num(inv["min"]) if "min" in inv else "-inf"
        high = _num(inv["max"]) if "max" in inv else "+inf"
        text = f"fires if any {inv['metric']} is non-finite or outside [{low}, {high}] {unit}".rstrip()
    elif kind == "faults_landed":
        text = (
            "fires unless every arm of each block met the same planned faults (experiment.failures) "
            "and each of them landed (fired while the program ran, and the program started again)"
        )
    elif kind == "failure_rate":
        text = _failure_rate_sentence(inv)
    else:
        where = ", ".join(f"{k} = {v}" for k, v in inv["where"].items())
        text = f"fires unless all arms agree exactly on {inv['metric']} in the control strata where {where}"
    return f"{text}; {_blocks(inv)}."


def plan_sentences(lock: dict[str, Any]) -> dict[str, Any]:
    """Gate and invalidator sentences of a lock's current plan, keyed by id."""
    plan = clean_tree(lock["plan"])
    metrics = plan.get("metrics", {})
    return {
        "gates": {g["id"]: gate_sentence(g, metrics) for g in plan.get("gates", [])},
        "invalidators": {i["id"]: invalidator_sentence(i, metrics) for i in plan.get("invalidators", [])},
    }


def render_lock(lock: dict[str, Any], report: Any) -> Any:
    """Rich renderables for a lock and its verification report (``prereg.lock.VerifyReport``)."""
    lock = clean_tree(lock)  # no control characters from the plan reach the terminal
    report = type(report)(**clean_tree(vars(report))) if hasattr(report, "__dataclass_fields__") else report
    plan = lock["plan"]
    metrics = plan.get("metrics", {})
    parts: list[Any] = []
    parts.append(Text(f"{plan.get('study')}: {plan.get('title')}", style="bold"))
    parts.append(Text(f"Hypothesis: {' '.join(str(plan.get('hypothesis', '')).split())}"))
    git = (lock.get("environment") or {}).get("git")
    git_text = f"git {git['commit'][:12]}{' (dirty)' if git.get('dirty') else ''}" if git else "no git repository"
    parts.append(
        Text(
            f"Plan sha256 {lock.get('plan_sha256')}\nFrozen {lock.get('frozen_at')} with toolkit "
            f"{lock.get('toolkit_version')}; {git_text}"
        )
    )
    if report.ok:
        parts.append(Text("Integrity: INTACT (hashes and amendment chain verify)", style="green"))
    else:
        parts.append(Text("Integrity: FAILED - " + "; ".join(report.differences), style="bold red"))

    arms = Table(title="Arms", title_justify="left", show_lines=False)
    arms.add_column("arm")
    arms.add_column("settings")
    for name, settings in plan.get("arms", {}).items():
        arms.add_row(Text(name), Text(", ".join(f"{k}: {v}" for k, v in settings.items()) or "(none)"))
    parts.append(arms)

    strata = plan.get("strata", {})
    factor_text = "; ".join(f"{k}: {', '.join(map(str, v))}" for k, v in strata.get("factors", {}).items())
    n_strata = 1
    for levels in strata.get("factors", {}).values():
        n_strata *= len(levels)
    parts.append(Text(f"Strata: {factor_text} ({n_strata} strata x {strata.get('replicates')} replicate(s))"))
    for section in ("calibration", "held_out"):
        if strata.get(section):
            parts.append(Text(f"  {section.replace('_', ' ')}: {strata[section]}"))
    if strata.get("family_factor"):
        parts.append(
            Text(
                f"  families: the levels of '{strata['family_factor']}'; every gate is judged on each "
                "held-out family alone as well as pooled, and the claim needs every family"
            )
        )
    for factor, metric in (strata.get("region_factors") or {}).items():
        parts.append(
            Text(
                f"  uncertainty region: '{factor}' (where a run fell inside it: metric {metric}); the "
                "ranking is given per family x region"
            )
        )
    comparator = plan.get("comparator")
    if comparator:
        from prereg.family_checks import rule_words  # lazy: pydantic
        from prereg.plan import plan_from_canonical  # lazy: pydantic

        ranking = comparator.get("ranking", {})
        op = "/" if ranking.get("scale", "ratio") == "ratio" else "-"
        parts.append(
            Text(
                f"Comparator '{comparator.get('name', 'comparator')}', chosen from the calibration strata ONLY (held-out "
                f"strata never enter the choice): {rule_words(plan_from_canonical(plan))}. Ranked per family x region: "
                f"{comparator['challenger']} {op} comparator on {ranking.get('metric') or comparator['metric']} "
                f"({ranking.get('method', 't')}, {ranking.get('confidence', 0.9):g}) as challenger, comparator, flip (the "
                "order changes across the region) or abstain."
            )
        )
    if strata.get("analysis_unit") == "replicate":
        parts.append(Text("  unit of analysis: every replicate pair is an independent block (as the plan states)"))
    else:
        parts.append(Text("  unit of analysis: one pair per stratum, its replicates' contrasts averaged (the default)"))
    controls = list(strata.get("controls") or []) + [
        inv["where"] for inv in plan.get("invalidators", []) if inv.get("kind") == "controls_identical"
    ]
    if controls:
        paired = (
            "they ALSO give pairs to the gates (pair_controls: true)"
            if strata.get("pair_controls")
            else "checked by invalidators, they give no pairs to the gates"
        )
        parts.append(Text(f"  no-failure controls: {controls}; {paired}"))
    data = plan.get("data")
    if data and data.get("pre_existing"):
        parts.append(
            Text(
                f"Data: PRE-EXISTING DATA declared: runs may have started before this plan was frozen "
                f'("{data.get("reason")}"); every report says so',
                style="bold yellow",
            )
        )
    else:
        parts.append(
            Text(
                "Data: every run must start after the plan was frozen (and after any amendment it is "
                "judged under); an earlier run refuses the decision"
            )
        )
    code = plan.get("code_identity")
    if code:
        parts.append(
            Text(
                f"Code: MAY DIFFER between runs in {', '.join(code.get('may_differ', []))} "
                f'("{code.get("reason")}"); every report says so; any other part that differs refuses '
                "the decision",
                style="bold yellow",
            )
        )
    else:
        parts.append(
            Text(
                "Code: every run must be made by the same code (files, git, Python, packages, toolkit, "
                "as recorded); a difference refuses the decision"
            )
        )
    experiment = plan.get("experiment")
    if experiment:
        params = ", ".join(f"{k}: {v}" for k, v in experiment.get("params", {}).items())
        parts.append(Text(f"Experiment: collector {experiment['collector']}; params {params or '(none)'}"))
    else:
        parts.append(Text("Experiment: none (runs are imported)"))

    mtable = Table(title="Metrics", title_justify="left")
    for col in ("metric", "unit", "better", "evidence", "signal"):
        mtable.add_column(col)
    for name, m in metrics.items():
        mtable.add_row(
            *(Text(x) for x in (name, m["unit"], m["better"], EVIDENCE_WORDS[m["evidence"]], m.get("signal", "-")))
        )
    parts.append(mtable)
    parts.append(
        Text(
            "Evidence rule: a gate reports the weakest of the class declared here and what the collector "
            "or sensor records; collect run refuses a declaration stronger than its collector gives."
        )
    )

    sentences = plan_sentences(lock)
    gtable = Table(title="Gates", title_justify="left", show_lines=True)
    gtable.add_column("gate", no_wrap=True)
    gtable.add_column("passes if ...", ratio=1)
    for gate in plan.get("gates", []):
        label = f"{gate['id']}\n{gate.get('role', 'primary')}" + (
            f"\ngroup {gate['group']}" if gate.get("group") else ""
        )
        gtable.add_row(Text(label), Text(sentences["gates"][gate["id"]].removeprefix("passes if ")))
    parts.append(gtable)
    if plan.get("invalidators"):
        itable = Table(title="Invalidators", title_justify="left", show_lines=True)
        itable.add_column("invalidator", no_wrap=True)
        itable.add_column("fires when ... / refuses", ratio=1)
        for inv in plan["invalidators"]:
            itable.add_row(
                Text(f"{inv['id']}\n{inv['kind']}"), Text(sentences["invalidators"][inv["id"]].removeprefix("fires "))
            )
        parts.append(itable)
    else:
        parts.append(Text("Invalidators: none"))

    decision = plan.get("decision", {})
    parts.append(Text("Decision", style="bold"))
    parts.append(
        Text(
            f'  Claim: "{decision.get("claim")}"\n  Supported only if every primary gate passes '
            f"(require: {decision.get('require')}, an intersection-union test); multiplicity: "
            f"{decision.get('multiplicity')}; refused if any invalidator blocking a primary gate fires."
        )
    )
    if plan.get("scope"):
        parts.append(Text(f"Scope (what the evidence will not cover): {plan['scope']}"))
    for pred in plan.get("predecessors", []):
        parts.append(Text(f"Predecessor {pred['path']} (sha256 {pred['sha256'][:12]}): {pred['changes']}"))

    amendments = lock.get("amendments", [])
    if not amendments:
        parts.append(Text("Amendments: none; this is the plan as first frozen"))
    else:
        atable = Table(title="Amendments", title_justify="left", show_lines=True)
        atable.add_column("version", no_wrap=True)
        atable.add_column("when / data", ratio=1)
        atable.add_column("reason and changes", ratio=2)
        for entry in amendments:
            when = Text(f"{entry.get('amended_at')}\n")
            if entry.get("post_data"):
                when.append("POST-DATA: runs already existed", style="bold red")
            elif entry.get("runs_checked"):
                when.append("before data (runs folder held no ledger)")
            else:
                when.append("not checked against a runs folder", style="yellow")
            changed_paths = entry.get("changed")
            changed = ", ".join(map(str, changed_paths)) if isinstance(changed_paths, list) else str(changed_paths)
            atable.add_row(Text(f"v{entry.get('version')}"), when, Text(f'"{entry.get("reason")}"\nchanged: {changed}'))
        parts.append(atable)
    return Group(*parts)
