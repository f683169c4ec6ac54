"""Matching a run ledger to a frozen plan: every (stratum, arm, replicate) exactly once.

More in ``docs/internals.md``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from collect.ledger.cells import split_repeats
from collect.ledger.columns import LedgerColumns, Record
from collect.ledger.store import Ledger
from prereg.schema import Plan, Strata, level_key

BlockKey = tuple[tuple[str, ...], int]
NAMED_PROBLEMS = 3  # a gate's refusal names up to this many runs of one kind, then counts them


def stratum_key(plan: Plan, stratum: dict[str, Any]) -> tuple[str, ...] | None:
    """A hashable key for a stratum of ``plan`` (None if it names other factors or levels)."""
    if set(stratum) != set(plan.strata.factors):
        return None
    lookup = plan.strata.level_lookup
    key = []
    for factor in plan.strata.factors:
        k = level_key(stratum[factor])
        if k not in lookup[factor][0]:  # the factor's levels by type-aware key
            return None
        key.append(k)
    return tuple(key)


def stratum_label(stratum: dict[str, Any]) -> str:
    """``outage_site=0, seed=101``."""
    return ", ".join(f"{k}={v}" for k, v in stratum.items())


def block_label(stratum: dict[str, Any], replicate: int) -> str:
    """``outage_site=0, seed=101 #0``."""
    return f"{stratum_label(stratum)} #{replicate}"


@dataclass
class Block:
    """A stratum x replicate, with the records of its arms (one per arm when complete)."""

    stratum: dict[str, Any]
    replicate: int
    calibration: bool
    records: dict[str, Record] = field(default_factory=dict)
    control: bool = False  # a no-failure control block
    pair_controls: bool = False  # the plan lets control blocks give pairs
    rows: dict[str, int] = field(default_factory=dict)  # arm -> its record's index in ``ledger`` (as ``records``)
    ledger: LedgerColumns | None = None  # the columns the records are rows of

    @property
    def gives_pairs(self) -> bool:
        """Whether the gates pair arms in this block (not calibration; not a control unless allowed)."""
        return not self.calibration and (not self.control or self.pair_controls)

    @cached_property
    def stratum_text(self) -> str:
        """``stratum_label(self.stratum)``, formatted once (every gate groups its blocks by it)."""
        return stratum_label(self.stratum)

    @property
    def label(self) -> str:
        """Human-readable block name."""
        return f"{self.stratum_text} #{self.replicate}"


@dataclass
class Match:
    """The ledger laid onto the plan's blocks, and every problem found, by name."""

    blocks: dict[BlockKey, Block]
    missing: list[tuple[str, str]] = field(default_factory=list)  # (arm, description)
    missing_calibration: list[tuple[str, str]] = field(default_factory=list)  # never refuses a gate
    failed: list[tuple[str, str]] = field(default_factory=list)
    duplicate: list[tuple[str, str]] = field(default_factory=list)
    unplanned: list[tuple[str, str]] = field(default_factory=list)
    other_plan: list[tuple[str, str]] = field(default_factory=list)
    ledger_problems: list[str] = field(default_factory=list)
    n_arms: int = 0
    where: dict[str, dict[str, Any]] = field(default_factory=dict)  # problem text -> the stratum it names
    gate_blocks: list[Block] | None = field(default=None, repr=False)  # gates.verdicts.gate_blocks, listed once

    @property
    def planned(self) -> int:
        """Number of planned cells (blocks x arms)."""
        return len(self.blocks) * self.n_arms

    @property
    def matched(self) -> int:
        """Number of planned cells filled by a valid record."""
        return sum(len(b.records) for b in self.blocks.values())

    def arm_problems(self, arms: set[str]) -> list[str]:
        """Every problem touching any of ``arms``, as refusal reasons."""
        out = []
        # Failed runs are listed in the accounting but refuse nothing by themselves: a failed
        # run whose cell was later completed is a retry; one whose cell stayed empty is missing.
        for kind, items in (
            ("missing run", self.missing),
            ("duplicate run", self.duplicate),
            ("unplanned run", self.unplanned),
        ):
            texts = [text for arm, text in items if arm in arms]
            if len(texts) > NAMED_PROBLEMS:  # said once; the run accounting names every run
                out.append(f"{len(texts)} {kind}s of arms {', '.join(sorted(arms))} (listed in the run accounting)")
            else:
                out.extend(f"{kind}: {text}" for text in texts)
        other = sum(arm in arms for arm, _ in self.other_plan)
        if other:  # said once: the run accounting (and the artifact) name every run
            out.append(f"{other} run(s) of these arms were recorded under another plan hash (see the run accounting)")
        return out

    def subset(self, keep: Callable[[dict[str, Any]], bool]) -> Match:
        """The match restricted to the blocks whose stratum ``keep`` accepts, with only the problems
        that name such a stratum (problems naming no readable stratum stay: they touch every subset)."""

        def named(items: list[tuple[str, str]]) -> list[tuple[str, str]]:
            return [(arm, text) for arm, text in items if text not in self.where or keep(self.where[text])]

        blocks = {k: b for k, b in self.blocks.items() if keep(b.stratum)}
        return Match(
            blocks,
            named(self.missing),
            named(self.missing_calibration),
            named(self.failed),
            named(self.duplicate),
            named(self.unplanned),
            named(self.other_plan),
            list(self.ledger_problems),
            self.n_arms,
            self.where,
        )

    def records(self) -> list[Record]:
        """Every matched record (calibration blocks included)."""
        return [r for b in self.blocks.values() for r in b.records.values()]


def match_ledger(plan: Plan, plan_sha256: str, ledger: Ledger | LedgerColumns) -> Match:
    """Lay ``ledger`` (read column-wise, or record by record) onto ``plan``; see the module doc."""
    columns = ledger if isinstance(ledger, LedgerColumns) else LedgerColumns.from_ledger(ledger)
    blocks: dict[BlockKey, Block] = {}
    controls = plan.control_selectors()
    for stratum in plan.strata.enumerate():
        skey = stratum_key(plan, stratum)
        assert skey is not None
        calibration = any(Strata.selects(sel, stratum) for sel in plan.strata.calibration)
        control = any(Strata.selects(sel, stratum) for sel in controls)
        for replicate in range(plan.strata.replicates):
            blocks[(skey, replicate)] = Block(
                stratum,
                replicate,
                calibration,
                control=control,
                pair_controls=bool(plan.strata.pair_controls),
                ledger=columns,
            )
    match = Match(blocks, n_arms=len(plan.arms))
    match.ledger_problems = [f"ledger line {p.line}: {p.message}" for p in columns.problems]

    def where_of(record: Record) -> str:
        return f"{record.run_id} (arm {record.arm}, {block_label(record.stratum, record.replicate)})"

    planned: list[int] = []
    cells: dict[int, tuple[tuple[str, ...], int, str]] = {}  # row -> its cell, keyed once
    col = columns.columns
    for i, (sha, arm, stratum, replicate, status) in enumerate(
        zip(col["prereg_sha256"], col["arm"], col["stratum"], col["replicate"], col["status"], strict=True)
    ):
        # a record's description is formatted only for a problem it has
        if sha != plan_sha256:
            record = columns.row(i)
            text = f"{where_of(record)} was recorded under plan {sha[:12]}"
            match.other_plan.append((arm, text))
            match.where[text] = stratum
            continue
        skey = stratum_key(plan, stratum)
        if arm not in plan.arms or skey is None or (skey, replicate) not in blocks:
            match.unplanned.append((arm, text := f"{where_of(columns.row(i))} is not a cell of the plan"))
            match.where[text] = stratum
            continue
        if status != "complete":
            match.failed.append((arm, text := f"{where_of(columns.row(i))} has status {status}"))
            match.where[text] = stratum
            continue
        planned.append(i)
        cells[i] = (skey, replicate, arm)
    # The ledger's one duplicate rule (``collect.ledger.cells``): the first complete record of a cell
    # stands; a later one is listed in ``duplicate``, and gates using that arm are refused through
    # ``arm_problems`` (the cell is ambiguous: which run is the real one?).
    first, repeats = split_repeats([columns.row(i) for i in planned], key=lambda r: cells[r.index])
    for record in first.values():
        skey, replicate, arm = cells[record.index]
        block = blocks[(skey, replicate)]
        block.records[arm] = record
        block.rows[arm] = record.index
    for record, earlier in repeats:
        text = f"{where_of(record)} repeats {earlier.run_id}"
        match.duplicate.append((record.arm, text))
        match.where[text] = record.stratum
    for block in blocks.values():
        for arm in plan.arms:
            if arm not in block.records:
                target = match.missing_calibration if block.calibration else match.missing
                target.append((arm, f"arm {arm} in {block.label}"))
                match.where[f"arm {arm} in {block.label}"] = block.stratum
    return match
