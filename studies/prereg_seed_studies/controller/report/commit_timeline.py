"""Controller runs' commit ledgers (``traces/<run_id>.commits.jsonl``), loaded for ``reports plot`` and checked.

:func:`load_commit_timeline` refuses a run without a commit ledger (``InputError``, exit 2) and a ledger
that does not match its record's SHA-256 (``IntegrityError``, exit 3, naming the file);
:func:`timeline_text` is the figure's text equivalent. Fields: docs/controller-and-energy.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from collect.ledger.cells import run_record
from collect.traces.lines import finite
from prereg.errors import InputError, IntegrityError
from prereg_seed_studies.controller.commits import read_commits
from reports.data.timeline import open_runs_ledger
from reports.words.safe_text import wrap_entries

if TYPE_CHECKING:
    from collect.ledger.store import RunRecord

COMMITS_SUFFIX = ".commits.jsonl"
CONTROLLERS = "sim.controller, torch.controller"
SYNC_CLASSES = ("gradient_sync", "parameter_sync")  # the all-reduces (rejoins are one-to-one; control is latency)
WRAP = 100
#: (state before, state after) at consecutive commits -> the words of the text equivalent
STATE_WORDS = {
    ("reachable", "down"): "down",
    ("partitioned", "down"): "down",
    ("reachable", "partitioned"): "partitioned (up, unreachable)",
    ("down", "partitioned"): "back up but unreachable (partitioned)",
    ("down", "reachable"): "back up",
    ("partitioned", "reachable"): "reachable again (partition healed)",
}


@dataclass(frozen=True)
class Episode:
    """One stress episode on ``[start_ms, end_ms)`` (``collect.collectors.controller.stress.Episode``)."""

    kind: str  # bandwidth | latency | down | unreachable | slow
    start_ms: float
    end_ms: float
    value: float = 1.0
    site: int | None = None


@dataclass(frozen=True)
class StressInfo:
    """The stress the run met, from its record's ``code.stress``."""

    family: str
    base_bandwidth_mbps: float | None
    base_latency_ms: float | None
    episodes: tuple[Episode, ...] = ()

    def bandwidth_mbps(self, t_ms: float) -> float | None:
        """The modeled WAN bandwidth at ``t_ms`` (base x active multipliers); None without a base."""
        if self.base_bandwidth_mbps is None:
            return None
        bw = self.base_bandwidth_mbps
        for e in self.episodes:
            if e.kind == "bandwidth" and e.start_ms <= t_ms < e.end_ms:
                bw *= e.value
        return bw


@dataclass
class CommitRun:
    """One controller run: its record's identity, its verified commit rows and its stress."""

    run_id: str
    arm: str
    status: str
    stratum: dict[str, Any]
    replicate: int
    trace: str  # traces/<run_id>.commits.jsonl, as the record lists it
    rows: list[dict[str, Any]]
    stress: StressInfo | None = None
    policy: str | None = None

    @property
    def commits(self) -> list[dict[str, Any]]:
        """The commits proper (commit 0, the lineage root, left out)."""
        return [r for r in self.rows if r["commit"] > 0]

    @property
    def end_s(self) -> float:
        return max((r["wall_tick_ms"] for r in self.rows), default=0.0) / 1e3

    @property
    def sites(self) -> list[int]:
        seen = {s for r in self.rows for key in ("members", "up_sites", "reachable_sites") for s in r[key]}
        return sorted(seen)


@dataclass
class CommitTimeline:
    """The runs drawn together (one stratum and replicate), in the order asked."""

    run_id: str
    stratum: dict[str, Any]
    replicate: int
    runs: list[CommitRun] = field(default_factory=list)

    @property
    def title(self) -> str:
        where = ", ".join(f"{k}={v}" for k, v in self.stratum.items()) or "no factors"
        return f"stratum {where}, replicate {self.replicate}"

    @property
    def end_s(self) -> float:
        return max((r.end_s for r in self.runs), default=0.0)


# --- loading ---------------------------------------------------------------------------------


def _stress(code: dict[str, Any]) -> StressInfo | None:
    """The record's ``code.stress``, or None when it has none or it is not readable."""
    raw = code.get("stress")
    if not isinstance(raw, dict):
        return None
    try:
        eps = tuple(
            Episode(
                str(e["kind"]),
                finite(e["start_ms"], "'start_ms'"),
                finite(e["end_ms"], "'end_ms'"),
                finite(e.get("value", 1.0), "'value'"),
                e.get("site") if isinstance(e.get("site"), int) else None,
            )
            for e in raw.get("episodes") or []
        )
        bw, lat = raw.get("base_bandwidth_mbps"), raw.get("base_latency_ms")
        return StressInfo(
            str(raw.get("family", "?")),
            None if bw is None else finite(bw, "'bandwidth'"),
            None if lat is None else finite(lat, "'latency'"),
            eps,
        )
    except (KeyError, TypeError, ValueError, AttributeError):
        return None


def _commit_run(folder: Path, record: RunRecord) -> CommitRun:
    from collect.ledger.store import trace_path, trace_problems  # lazy: pydantic
    from collect.ledger.trace_check import read_verified_trace  # lazy: pydantic

    name = next((t for t in record.traces if t.endswith(COMMITS_SUFFIX)), None)
    collector = record.code.get("collector")
    if name is None and record.status == "failed":
        raise InputError(
            f"run {record.run_id} (arm {record.arm}) failed ({record.error or 'no error recorded'}) and "
            "left no commit ledger to draw"
        )
    if name is None:
        made = f" (made by {collector})" if collector else f" (it came from {record.source})" if record.source else ""
        raise InputError(
            f"run {record.run_id} (arm {record.arm}){made}: no commit ledger: its record lists no "
            f"traces/...{COMMITS_SUFFIX}; only controller runs ({CONTROLLERS}) have a commit ledger"
        )
    bad = [(n, why) for n, why in trace_problems(folder, record) if n == name]
    if bad:
        raise IntegrityError(
            f"run {record.run_id}: commit ledger {folder / name} {bad[0][1]}; refusing to draw it "
            "(the ledger holds the SHA-256 the run recorded)",
            details=[name],
        )
    try:
        path = trace_path(folder, name)  # inside RUNS/traces, never through a link
    except OSError as err:
        raise IntegrityError(
            f"run {record.run_id}: commit ledger {folder / name}: {err.strerror or err}", details=[name]
        ) from None
    data = read_verified_trace(folder, record, name)  # the bytes parsed are the bytes checked
    policy = record.code.get("policy")
    return CommitRun(
        record.run_id,
        record.arm,
        record.status,
        dict(record.stratum),
        record.replicate,
        name,
        read_commits(path, data),
        _stress(record.code),
        policy if isinstance(policy, str) else None,
    )


def load_commit_timeline(runs_folder: str | Path, run_ids: list[str], asked: str | None = None) -> CommitTimeline:
    """The runs' verified commit ledgers, in the order given (see the module doc); ``asked`` (default:
    the first) is the run the timeline is named after."""
    folder = Path(runs_folder)
    ledger = open_runs_ledger(folder)
    runs = []
    for run_id in run_ids:
        record = run_record(ledger.records, run_id)  # the ledger's duplicate rule (collect.ledger.cells)
        if record is None:
            raise InputError(f"run {run_id}: not in {ledger.path}")
        runs.append(_commit_run(folder, record))
    if not runs:
        raise InputError(f"{folder}: no runs to draw")
    return CommitTimeline(asked or run_ids[0], dict(runs[0].stratum), runs[0].replicate, runs)


# --- the text equivalent -------------------------------------------------------------------------


def seconds_format(tl: CommitTimeline) -> str:
    """A format for seconds: finer for short runs."""
    return "{:.2f}" if tl.end_s < 10 else "{:.1f}" if tl.end_s < 1000 else "{:.0f}"


def mode_segments(run: CommitRun) -> list[tuple[float, float, str, int]]:
    """``(start_s, end_s, mode, commits)``: consecutive commits run in the same mode, merged."""
    out: list[tuple[float, float, str, int]] = []
    for r in run.commits:
        a, b = r["wall_start_ms"] / 1e3, r["wall_tick_ms"] / 1e3
        if out and out[-1][2] == r["mode"]:
            out[-1] = (out[-1][0], b, r["mode"], out[-1][3] + 1)
        else:
            out.append((a, b, r["mode"], 1))
    return out


def membership_changes(run: CommitRun) -> list[tuple[dict[str, Any], str, list[int]]]:
    """``(row, 'left' | 'rejoined', sites)`` for every commit whose members differ from the previous
    commit's (the lineage root counts every site as a member: all start in sync)."""
    prev = set(run.sites)
    out = []
    for r in run.commits:
        cur = set(r["members"])
        for what, sites in (("left", prev - cur), ("rejoined", cur - prev)):
            if sites:
                out.append((r, what, sorted(sites)))
        prev = cur
    return out


def site_states(row: dict[str, Any], site: int) -> str:
    """``down``, ``partitioned`` (up, unreachable) or ``reachable`` at the commit's end."""
    if site not in row["up_sites"]:
        return "down"
    return "partitioned" if site not in row["reachable_sites"] else "reachable"


def availability_changes(run: CommitRun) -> list[tuple[dict[str, Any], int, str, str]]:
    """``(row, site, before, after)`` for every change of a site's state between commits."""
    out = []
    for site in run.sites:
        before = "reachable"
        for r in run.rows:
            now = site_states(r, site)
            if now != before:
                out.append((r, site, before, now))
            before = now
    return sorted(out, key=lambda x: (x[0]["commit"], x[1]))


def throughput_mbps(row: dict[str, Any]) -> float | None:
    """The cycle's effective per-link WAN throughput (Mbit/s), latency included, or None (no sync traffic).

    A ring all-reduce over ``m`` sites moves ``2 (m - 1) B`` bytes in ``2 (m - 1)`` rounds of one
    latency plus ``B / m`` bytes at the link bandwidth, so ``bytes / m x 8 / ms`` is at most the
    link's bandwidth (equal with no latency). ``m`` is the commit's members: approximate when the
    membership changed inside a sync cycle."""
    m = len(row["members"])
    nbytes = sum(row["wan_bytes"].get(k, 0.0) for k in SYNC_CLASSES)
    ms = sum(row["wan_ms"].get(k, 0.0) for k in SYNC_CLASSES)
    return nbytes / m * 8 / (ms * 1e3) if m >= 2 and nbytes > 0 and ms > 0 else None


def _wrapped(head: str, entries: list[str]) -> list[str]:
    return wrap_entries(head, entries, WRAP)


def _episodes(stress: StressInfo, fmt: str) -> list[str]:
    out = []
    for e in sorted(stress.episodes, key=lambda e: (e.start_ms, e.kind)):
        where = f" site {e.site}" if e.site is not None else ""
        what = {"bandwidth": f" x{e.value:.3g}", "latency": f" +{e.value:.3g} ms", "slow": f" x{e.value:.3g} slower"}
        when = f"{fmt.format(e.start_ms / 1e3)}–{fmt.format(e.end_ms / 1e3)} s"
        out.append(f"{e.kind}{where}{what.get(e.kind, '')} {when}")
    return out


def _stress_lines(stress: StressInfo | None, fmt: str, head: str) -> list[str]:
    if stress is None:
        return [f"{head}not recorded (the run's record holds no code.stress)"]
    base = [f"family {stress.family}"]
    if stress.base_bandwidth_mbps is not None:
        base.append(f"base bandwidth {stress.base_bandwidth_mbps:.3g} Mbit/s")
    if stress.base_latency_ms is not None:
        base.append(f"base latency {stress.base_latency_ms:.3g} ms")
    n = len(stress.episodes)
    return [
        f"{head}{', '.join(base)}",
        *_wrapped(f"  stress episodes ({n}):", _episodes(stress, fmt) or ["none (no stress)"]),
    ]


def run_text(run: CommitRun, fmt: str, asked: bool = False, stress: bool = True) -> list[str]:
    """One run's part of the text equivalent."""
    s = lambda ms: fmt.format(ms / 1e3)  # noqa: E731
    last = run.rows[-1]
    evidence = (last.get("evidence") or {}).get("heldout_nll", "?") if isinstance(last.get("evidence"), dict) else "?"
    policy = f", policy {run.policy}" if run.policy else ""
    lines = [
        f"{run.arm}: run {run.run_id}{' (the run asked for)' if asked else ''}, {run.status}{policy}: "
        f"{len(run.commits)} commits, completed at {fmt.format(run.end_s)} s, final held-out NLL "
        f"{last['heldout_nll']:.4f} nats/token (commit {last['commit']}, evidence {evidence})"
    ]
    segs = [
        f"{fmt.format(a)}–{fmt.format(b)} s {m} ({n} commit{'s' if n != 1 else ''})"
        for a, b, m, n in mode_segments(run)
    ]
    lines += _wrapped("  modes:", segs or ["no commits"])
    abst = [r for r in run.commits if r["action"] == "abstain"]
    if abst:
        lines += _wrapped(
            f"  abstentions ({len(abst)}):",
            [
                f"commit {r['commit']} at {s(r['wall_start_ms'])}–{s(r['wall_tick_ms'])} s ran the safe mode "
                f"{r['mode']}: {r['reason']}"
                for r in abst
            ],
        )
    else:
        actions = sorted({r["action"] for r in run.commits})
        lines.append(f"  abstentions: none (actions: {', '.join(actions) or 'none'})")
    changes = [
        f"site{'s' if len(ss) > 1 else ''} {','.join(map(str, ss))} {what} at commit {r['commit']} "
        f"({s(r['wall_tick_ms'])} s)"
        for r, what, ss in membership_changes(run)
    ]
    lines += _wrapped("  membership:", changes or ["no changes (every commit merged the same sites)"])
    avail = [
        f"site {site} {STATE_WORDS[(before, after)]} at commit {r['commit']} ({s(r['wall_tick_ms'])} s)"
        for r, site, before, after in availability_changes(run)
    ]
    lines += _wrapped("  partitions and outages:", avail or ["none seen at the commits"])
    rejoins = [
        f"{s(r['wall_start_ms'])} s (commit {r['commit']}, {int(r['wan_bytes']['rejoin_transfer']):,} bytes)"
        for r in run.commits
        if r["wan_bytes"].get("rejoin_transfer", 0) > 0
    ]
    lines += _wrapped("  rejoin transfers:", rejoins or ["none"])
    seen = [x for x in (throughput_mbps(r) for r in run.commits) if x is not None]
    total = sum(v for r in run.commits for v in r["wan_bytes"].values())
    wan = (
        f"effective link throughput {min(seen):.3g}–{max(seen):.3g} Mbit/s over {len(seen)} cycles (latency included)"
        if seen
        else "no all-reduce between two or more sites"
    )
    lines.append(f"  WAN: {wan}; {int(total):,} bytes in all")
    stalls = [f"{s(r['stall_ms'])} s before commit {r['commit']}" for r in run.commits if r["stall_ms"] > 0]
    if stalls:
        lines += _wrapped("  stalls (no site could work):", stalls)
    if stress:
        lines += _stress_lines(run.stress, fmt, "  stress: ")
    return lines


def timeline_text(tl: CommitTimeline) -> list[str]:
    """The commit timeline's text equivalent (see the module doc), one line per item."""
    fmt = seconds_format(tl)
    shared = all(r.stress == tl.runs[0].stress for r in tl.runs)
    lines = [
        f"Commit timeline of {tl.title} (run {tl.run_id}); times in seconds of modeled wall time from each "
        "run's start; each commit's cycle is [wall_start, wall_tick]"
    ]
    if shared:
        lines += _stress_lines(tl.runs[0].stress, fmt, "Stress (the same for every run shown): ")
    for run in tl.runs:
        lines += run_text(run, fmt, asked=run.run_id == tl.run_id, stress=not shared)
    return lines
