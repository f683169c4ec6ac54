"""``reports html RUNS_OR_EVALUATION``: the reviewer's report as one self-contained HTML file.

The artifact is checked as ``reports show`` checks it (exit 3 when it contradicts itself or its
seal); the page is rendered from ``templates/page.html`` with autoescaping, a study's own sections
come from its plugin (:mod:`reports.sections`), the run sections from the runs folder when there is
one. What the page holds, in order: docs/cli.md (``reports html``).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from markupsafe import Markup

from collect.ledger.store import LEDGER_NAME
from gates.api import read_evaluation
from gates.artifact import MAX_ARTIFACT_BYTES, seal_status
from gates.consistency import consistency_problems
from prereg._version import __version__
from prereg.errors import InputError, IntegrityError
from prereg.fileio import check_output, read_regular_file, write_output
from reports.data.reverify import reverify
from reports.html import evaluation as he
from reports.html.aa import aa_section
from reports.html.assets import CSS, JS, content_security_policy
from reports.html.looks import looks_section
from reports.html.render import ENV, macro
from reports.html.runs import conservation_section, load_runs, runs_provenance, runs_section
from reports.html.telemetry import telemetry_section
from reports.html.timeline import timeline_section
from reports.sections import study_reports
from reports.words import aa as at
from reports.words import evaluation as et
from reports.words import runs as rt
from reports.words.palette import DECISION_WORDS
from reports.words.safe_text import clean_model

if TYPE_CHECKING:
    from gates.artifact import Evaluation
    from reports.html.runs import RunsContext

GENERATOR = "prereg-toolkit reports html"
NAV_WORDS = {
    "decision": "Decision",
    "looks": "Interim looks",
    "failed-runs": "Failed runs",
    "metrics": "Metrics per arm",
    "gates": "Gates",
    "invalidators": "Invalidators",
    "aa-pairs": "A/A check",
    "meter-support": "Meter support",
    "sensitivity": "Sensitivity",
    "diagnostics": "Diagnostics",
    "notes": "Notes",
    "reading": "Reading the verdicts",
    "runs": "Runs",
    "timeline": "Timeline",
    "telemetry": "Telemetry",
    "provenance": "Provenance",
}
DEFAULT_NAME = "report.html"


@dataclass
class Source:
    """What ``reports html`` was given, resolved: the artifact, its bytes' hash and the runs folder."""

    evaluation_path: Path
    evaluation_sha256: str
    runs: Path | None
    warnings: list[str] = field(default_factory=list)
    verification: str = ""  # re-verified from the lock and runs, or why it could not be (reports.data.reverify)


def resolve(source: str | Path) -> Source:
    """RUNS (``RUNS/evaluation.json``) or an ``evaluation.json`` (its folder is RUNS when it holds a ledger)."""
    path = Path(source)
    if not path.exists():
        raise InputError(f"{path}: no such file or folder (reports html takes a runs folder or an evaluation.json)")
    if path.is_dir():
        evaluation = path / "evaluation.json"
        if not (path / LEDGER_NAME).is_file():
            raise InputError(
                f"{path}: not a runs folder (no {LEDGER_NAME}); give the folder `collect run` or "
                "`collect import` wrote, or an evaluation.json"
            )
        if not evaluation.is_file():
            raise InputError(f"{path}: holds no evaluation.json yet; run 'gates evaluate LOCK {path}' first")
        runs: Path | None = path
    else:
        evaluation = path
        runs = path.parent if (path.parent / LEDGER_NAME).is_file() else None

    # a regular file of bounded size: never blocks on a FIFO, never reads a device without end
    digest = hashlib.sha256(read_regular_file(evaluation, MAX_ARTIFACT_BYTES)).hexdigest()
    return Source(evaluation, digest, runs)


def read_checked(path: Path) -> tuple[Evaluation, str]:
    """The artifact and its seal status; refused (exit 3) when it contradicts itself or its seal."""

    ev = read_evaluation(path)
    problems = consistency_problems(ev)
    if problems:
        raise IntegrityError(
            f"{path}: INCONSISTENT evaluation artifact; refusing to render it:\n- " + "\n- ".join(problems),
            details=problems,
        )
    return ev, seal_status(ev)


SEAL_WORDS = {
    "sealed": "sealed: the artifact still has the SHA-256 it was sealed with when written",
    "unsealed": "no seal (not written by gates evaluate, or its seal was removed): its consistency was checked, but edits that keep it "
    "consistent cannot be detected",
    "broken": "SEAL BROKEN",
}


def _provenance(ev: Evaluation, src: Source, seal: str, ctx: RunsContext | None) -> Markup:
    return macro("provenance.html", "provenance")(
        ev,
        ev.ledger,
        src,
        SEAL_WORDS[seal],
        et.ledger_text(ev).split("; ", 1)[-1],  # the words `reports show` prints
        __version__,
        GENERATOR,
        runs_provenance(ctx) if ctx is not None else "",
    )


def build_page(ev: Evaluation, src: Source, seal: str, ctx: RunsContext | None, run_id: str | None = None) -> str:
    """The whole page as text (``ev`` already cleaned of control characters)."""
    sections: list[tuple[str, str, Markup]] = [("decision", "Decision", he.decision_section(ev))]
    if ev.monitoring is not None:  # a monitored plan: the look or interim reading, a small look chart
        sections.append(("looks", "Interim looks", looks_section(ev)))
    failed = he.failed_runs_section(ev)
    if failed:
        sections.append(("failed-runs", rt.FAILED_TITLE, failed))
    primary = et.primary_gates(ev)
    evidence = [g for g in primary if g.verdict not in ("refused", "unresolvable")]
    gates_body = Markup().join(
        (
            he.gates_table(ev, primary, "gates-table", "Primary gates: verdict, interval, rule, method, p"),
            he.group_tallies(ev),
            he.forest_figure(ev, primary, "forest-primary"),
            he.strata_details(ev, evidence, "strata-primary"),
        )
    )
    sections.append(("gates", f"Primary gates (decide the claim; multiplicity {ev.multiplicity})", gates_body))
    sections.append(("invalidators", "Invalidators", he.invalidators_section(ev)))
    aa = aa_section(ev)  # A/A pairs (reports.html.aa)
    if aa is not None:
        sections.append(("aa-pairs", at.AA_HEADING, aa))
    support = he.phase_support_section(ev)
    if support:
        sections.append(("meter-support", "Meter support by phase (updates inside each phase)", support))
    sensitivity = et.sensitivity_gates(ev)
    if sensitivity:
        evidence = [g for g in sensitivity if g.verdict not in ("refused", "unresolvable")]
        body = Markup().join(
            (
                he.gates_table(ev, sensitivity, "sensitivity-table", "Sensitivity gates"),
                he.forest_figure(ev, sensitivity, "forest-sensitivity", table_name="the sensitivity table above"),
                he.strata_details(ev, evidence, "strata-sensitivity"),
            )
        )
        sections.append(("sensitivity", "Sensitivity (reported, never decides)", body))
    descriptive = he.descriptive_section(ev)
    if descriptive:
        sections.append(("metrics", rt.DESCRIPTIVE_TITLE, descriptive))
    studies = study_reports(ev)  # a study's own sections (plugins), already safe markup
    nav_words = dict(NAV_WORDS)
    for study in studies:
        sections += study.html_sections(ev)
        nav_words.update(study.nav_words())
    diagnostics = he.diagnostics_section(ev)

    runs_body = runs_section(ev, ctx) + (conservation_section(ctx) if ctx is not None else "")
    later = [*he.notes_and_reading(ev), ("runs", "Runs", runs_body)]
    if ctx is not None:
        own = [s for study in studies for s in study.html_run_sections(ev, ctx.folder)]
        later += own or [("timeline", "Recovery timeline", timeline_section(ctx, run_id))]
        later.append(("telemetry", "Telemetry traces", telemetry_section(ctx)))
    later.append(("provenance", "Provenance", _provenance(ev, src, seal, ctx)))
    anchors = [a for a, _, _ in sections] + (["diagnostics"] if diagnostics else []) + [a for a, _, _ in later]
    facts = [
        ("Study", ev.study),
        ("Plan", et.plan_text(ev)),
        ("Runs", "; ".join(et.run_lines(ev.runs, limit=10))),
        ("Evaluated", f"{ev.evaluated_at} with toolkit {ev.toolkit_version}; multiplicity {ev.multiplicity}"),
    ]
    return ENV.get_template("page.html").render(
        ev=ev,
        word=DECISION_WORDS[ev.decision],
        csp=content_security_policy(),
        generator=GENERATOR,
        css=Markup(CSS),  # the page's own blocks, allowed by their hashes in the CSP
        js=Markup(JS),
        header=facts,
        nav=[(a, nav_words[a]) for a in anchors],
        before=sections,
        diagnostics=diagnostics,
        after=later,
    )


def is_html_report(path: Path) -> bool:
    """Whether ``path`` holds a page this module wrote (safe to replace with a new one)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(4096).decode("utf-8", "replace")
    except OSError:
        return False
    return head.startswith("<!DOCTYPE html>") and f'<meta name="generator" content="{GENERATOR}">' in head


def html_report(source: str | Path, run_id: str | None = None, lock: str | Path | None = None) -> tuple[str, Source]:
    """The page for a runs folder or an ``evaluation.json`` (see the module doc), and what it was made from."""
    src = resolve(source)
    ev, seal = read_checked(src.evaluation_path)
    src.verification = reverify(ev, src.evaluation_path, src.runs, Path(lock) if lock is not None else None)
    if "could not be re-verified" in src.verification:
        src.warnings.append(f"{src.evaluation_path} {src.verification}")
    if seal == "unsealed":
        src.warnings.append(
            f"{src.evaluation_path} carries no seal (not written by gates evaluate, or its seal was removed); its consistency "
            "was checked, but edits that keep it consistent cannot be detected"
        )
    ev = clean_model(ev)  # no control characters reach the page
    ctx = None
    if src.runs is not None:
        try:
            ctx = load_runs(src.runs, ev)
        except OSError as err:
            raise InputError(f"{src.runs}: the ledger cannot be read ({err})") from None
        if not ctx.ledger_matches:
            src.warnings.append(
                f"{ctx.ledger.path} is not the ledger that was evaluated (its SHA-256 differs); the "
                "run sections show it as it is now, and the page says so"
            )
        bad = sum(len(p) for p in ctx.problems.values())
        if bad:
            src.warnings.append(
                f"{bad} trace file(s) do not match the SHA-256 in their record; the page names them "
                "and does not draw them"
            )
    elif run_id is not None:
        raise InputError(f"--run needs the runs folder: {src.evaluation_path.parent} holds no ledger.jsonl")
    return build_page(ev, src, seal, ctx, run_id), src


def write_html_report(
    source: str | Path,
    out: str | Path | None = None,
    run_id: str | None = None,
    force: bool = False,
    lock: str | Path | None = None,
) -> tuple[Path, int, list[str]]:
    """Write the page atomically (default ``report.html`` beside the evaluation); (path, bytes, warnings)."""
    src = resolve(source)
    target = Path(out) if out is not None else src.evaluation_path.parent / DEFAULT_NAME
    if not target.parent.exists():
        target.parent.mkdir(parents=True)
    check_output(target, force, is_html_report)  # before anything is computed: never over a ledger, lock, link...
    page, src = html_report(source, run_id, lock)
    data = page.encode("utf-8")
    write_output(target, data, force, is_html_report)  # re-checked just before it replaces anything
    return target, len(data), src.warnings
