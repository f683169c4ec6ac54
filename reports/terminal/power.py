"""``prereg power``'s table: per gate, the blocks a pilot says it needs, in words and numbers.

``render_power(report)`` turns a :class:`gates.power.PowerReport` into rich renderables; it computes
nothing. The SD convention and the expected-power convention are printed in words under the table,
then one line per gate the pilot could not plan (why) and the report's notes.
"""

from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text

from reports.words.safe_text import clean_tree


def _n(x: int | None) -> str:
    return "more than 100000" if x is None else str(x)


def _p(x: float | None, se: float | None = None) -> str:
    if x is None:
        return "-"
    return f"{100 * x:.1f}%" + (f" (+-{100 * se:.1f})" if se is not None else "")


def _margin(m: Any) -> str:
    if m is None:
        return "-"
    if isinstance(m, list):
        return f"within [{m[0]:.4g}, {m[1]:.4g}]"
    return f"{m:.4g}"


def render_power(report: Any) -> Group:
    """The table and its conventions (``report``: a ``gates.power.PowerReport``)."""
    table = Table(
        title=f"Blocks needed for {100 * report.target_power:.0f}% power (pilot: {report.pilot})", show_lines=True
    )
    for col in (
        "gate",
        "rule / method",
        "pilot",
        "assumed effect",
        "blocks needed: at SD / at SD's UCL / for expected power",
        "at the plan's blocks: power / at UCL / expected",
        "minimum detectable margin",
    ):
        table.add_column(col, overflow="fold")
    for g in report.gates:
        scale = "log ratio" if g.scale == "ratio" else "difference"
        pilot = f"{g.pilot_pairs} pairs, SD {g.sd:.4g} ({scale}); {100 * g.sd_ucl_level:.0f}% UCL {g.sd_ucl:.4g}"
        effect = "-" if g.delta_reported is None else f"{g.delta_reported:.4g} ({g.delta_source})"
        needed = f"{_n(g.blocks_needed)} / {_n(g.blocks_needed_ucl)} / {_n(g.blocks_needed_expected)}"
        at_plan = (
            f"{g.planned_blocks} blocks: {_p(g.power_planned)} / {_p(g.power_planned_ucl)} / "
            f"{_p(g.expected_power_planned)}"
        )
        if g.simulated_power_planned is not None:
            at_plan += f"; simulated {g.method}: {_p(g.simulated_power_planned, g.simulated_se)}"
        if g.sequential is not None:
            s = g.sequential
            at_plan += (
                f"; with looks {s['looks']} ({s['spending']}): {_p(s['power'], s['se'])}, expected "
                f"{s['expected_blocks']:.1f} blocks ({s['expected_blocks_saved']:.1f} saved)"
            )
        rule = f"{g.rule} at one-sided {g.alpha:.4g}; {g.method}"
        if g.notes:
            rule += "; " + "; ".join(g.notes)
        table.add_row(
            *clean_tree([g.gate, rule, pilot, effect, needed, at_plan, _margin(g.detectable_margin_reported)])
        )
    lines = [
        Text(clean_tree(f"SD convention: {report.sd_convention}.")),
        Text(clean_tree(f"Expected power: {report.expected_convention}.")),
        Text(
            "Blocks needed and margins use the exact t power; other methods add their simulated power "
            "(pilot contrasts shifted to the assumed effect, seeded)."
        ),
    ]
    lines += [
        Text(clean_tree(f"not planned: gate {n['gate']} ({n['role']}): {n['reason']}"))
        for n in getattr(report, "not_planned", [])
    ]
    lines += [Text(clean_tree(f"note: {n}")) for n in report.notes]
    return Group(table, *lines)
