"""The commit-timeline figure: WAN conditions, one lane of commits per run, held-out NLL, on one wall-time axis.

Panels and encodings: docs/controller-and-energy.md. The data and the text equivalent are
:mod:`.commit_timeline`'s; matplotlib is imported only in :func:`commit_figure` (no pyplot).
"""

from __future__ import annotations

import math
from typing import Any

from prereg_seed_studies.controller.report.commit_timeline import (
    CommitRun,
    CommitTimeline,
    StressInfo,
    membership_changes,
    throughput_mbps,
)
from reports.plots.figures import new_figure

#: Okabe-Ito (colour-blind safe), by mode in the order sync, local:H ascending; then the rest
MODE_COLOURS = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#999999")
#: per-run lines of the NLL and throughput panels: (colour, marker, dash)
RUN_STYLES: tuple[tuple[str, str, Any], ...] = (
    ("#000000", "o", "-"),
    ("#8c510a", "s", "--"),
    ("#5e3c99", "^", ":"),
    ("#01665e", "D", "-."),
    ("#b2182b", "v", "-"),
    ("#4d4d4d", "P", "--"),
)
#: site state at a commit -> (face colour, hatch, legend words)
SITE_STYLE = {
    "member": ("#4d4d4d", "", "site merged into the commit"),
    "idle": ("#e0e0e0", "", "site up, not merged"),
    "partitioned": ("#fdb863", "////", "site partitioned (up, unreachable)"),
    "down": ("#ffffff", "....", "site down"),
}
#: stress episode kind -> (colour, hatch) of its band in the WAN panel
EPISODE_STYLE = {
    "down": ("#b2182b", "xx"),
    "unreachable": ("#e08214", "////"),
    "slow": ("#8073ac", "\\\\"),
    "latency": ("#35978f", ".."),
    "bandwidth": ("#bababa", ""),
}


def _plain(text: str) -> str:
    """Text for matplotlib with ``$`` escaped (no mathtext from run ids or arm names)."""
    return text.replace("$", r"\$")


def _mode_key(mode: str) -> tuple[int, str]:
    head, _, tail = mode.partition(":")
    return (1 if mode == "sync" else int(tail) if head == "local" and tail.isdigit() else 10**9), mode


def mode_colours(tl: CommitTimeline) -> dict[str, str]:
    """Every mode of the runs' commits -> its colour (sync first, then by H)."""
    modes = sorted({r["mode"] for run in tl.runs for r in run.commits}, key=_mode_key)
    return {m: MODE_COLOURS[i % len(MODE_COLOURS)] for i, m in enumerate(modes)}


def _site_state(row: dict[str, Any], site: int) -> str:
    if site not in row["up_sites"]:
        return "down"
    if site not in row["reachable_sites"]:
        return "partitioned"
    return "member" if site in row["members"] else "idle"


def _stress_shown(tl: CommitTimeline) -> tuple[StressInfo | None, str]:
    """The stress drawn (the first run's that has one) and a note when the runs' stresses differ."""
    stresses = [r.stress for r in tl.runs if r.stress is not None]
    if not stresses:
        return None, ""
    note = "" if all(s == stresses[0] for s in stresses) else " (stress of the first run; the runs' differ)"
    return stresses[0], note


def _wan_panel(ax: Any, tl: CommitTimeline, end_s: float) -> list[Any]:
    from matplotlib.lines import Line2D  # lazy: matplotlib
    from matplotlib.patches import Patch  # lazy: matplotlib

    handles: list[Any] = []
    stress, note = _stress_shown(tl)
    values: list[float] = []
    if stress is not None and stress.base_bandwidth_mbps is not None:
        cuts = sorted(
            {
                0.0,
                end_s * 1e3,
                *(
                    t
                    for e in stress.episodes
                    if e.kind == "bandwidth"
                    for t in (e.start_ms, e.end_ms)
                    if 0 <= t <= end_s * 1e3
                ),
            }
        )
        ys = [stress.bandwidth_mbps(t) or math.nan for t in cuts]
        ax.step([t / 1e3 for t in cuts], ys, where="post", color="#333333", linewidth=1.6, zorder=3)
        values += [y for y in ys if y > 0]
        handles.append(
            Line2D(
                [], [], color="#333333", linewidth=1.6, label=_plain(f"modeled link bandwidth ({stress.family}){note}")
            )
        )
    for i, run in enumerate(tl.runs):
        colour, marker, _ = RUN_STYLES[i % len(RUN_STYLES)]
        seen = [((r["wall_start_ms"] + r["wall_tick_ms"]) / 2e3, throughput_mbps(r)) for r in run.commits]
        pts = [(x, y) for x, y in seen if y is not None and y > 0]
        if pts:
            ax.plot(
                [x for x, _ in pts],
                [y for _, y in pts],
                linestyle="none",
                marker=marker,
                markersize=4,
                markerfacecolor="white",
                markeredgecolor=colour,
                zorder=4,
            )
            values += [y for _, y in pts]
            handles.append(
                Line2D(
                    [],
                    [],
                    linestyle="none",
                    marker=marker,
                    markerfacecolor="white",
                    markeredgecolor=colour,
                    label=_plain(f"{run.arm}: effective link throughput of the cycle (latency included)"),
                )
            )
    kinds: list[str] = []
    for e in stress.episodes if stress is not None else ():
        colour, hatch = EPISODE_STYLE.get(e.kind, ("#bababa", "++"))
        ax.axvspan(
            e.start_ms / 1e3,
            e.end_ms / 1e3,
            facecolor=colour,
            alpha=0.18,
            hatch=hatch or None,
            edgecolor=colour,
            linewidth=0,
            zorder=1,
        )
        if e.site is not None and (e.end_ms - e.start_ms) / 1e3 > 0.03 * end_s:
            ax.text(
                (e.start_ms + e.end_ms) / 2e3,
                0.97,
                f"site {e.site}",
                transform=ax.get_xaxis_transform(),
                ha="center",
                va="top",
                fontsize=7,
                color="#222222",
                zorder=5,
            )
        if e.kind not in kinds:
            kinds.append(e.kind)
            handles.append(
                Patch(
                    facecolor=colour,
                    alpha=0.35,
                    hatch=hatch or None,
                    edgecolor=colour,
                    label=f"stress episode: {e.kind}",
                )
            )
    if values:
        from matplotlib.ticker import FuncFormatter, LogLocator  # lazy: matplotlib

        ax.set_yscale("log")
        lo, hi = min(values), max(values)
        ax.set_ylim(lo / 2, hi * 2)
        ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))
        ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, _pos: ""))
    else:
        ax.set_yticks([])
        ax.text(
            0.5,
            0.5,
            "no WAN conditions recorded (no stress in the records, no WAN transfer in the commits)",
            transform=ax.transAxes,
            ha="center",
            va="center",
            fontsize=8,
            style="italic",
        )
    ax.set_ylabel("WAN (Mbit/s)", fontsize=9)
    return handles


def _lane(ax: Any, y: int, run: CommitRun, colours: dict[str, str], end_s: float) -> None:
    """One run's lane: mode bars at ``[y - 0.42, y + 0.02]``, the site strip at ``[y + 0.08, y + 0.42]``."""
    bar_y, bar_h = y - 0.42, 0.44
    for mode, colour in colours.items():
        spans = [
            (r["wall_start_ms"] / 1e3, (r["wall_tick_ms"] - r["wall_start_ms"]) / 1e3)
            for r in run.commits
            if r["mode"] == mode and r["wall_tick_ms"] > r["wall_start_ms"]
        ]
        if spans:
            ax.broken_barh(spans, (bar_y, bar_h), facecolors=colour, edgecolor="white", linewidth=0.6, zorder=2)
    abst = [r for r in run.commits if r["action"] == "abstain"]
    if abst:
        ax.broken_barh(
            [(r["wall_start_ms"] / 1e3, (r["wall_tick_ms"] - r["wall_start_ms"]) / 1e3) for r in abst],
            (bar_y, bar_h),
            facecolors="none",
            edgecolor="#222222",
            hatch="xx",
            linewidth=0.6,
            zorder=3,
        )
        ax.plot(
            [(r["wall_start_ms"] + r["wall_tick_ms"]) / 2e3 for r in abst],
            [bar_y + 0.02] * len(abst),
            linestyle="none",
            marker="x",
            color="black",
            markersize=6,
            zorder=5,
        )
    sites = run.sites
    cell = 0.34 / max(1, len(sites))
    for k, site in enumerate(sites):
        top = y + 0.08 + k * cell
        for state, (face, hatch, _) in SITE_STYLE.items():
            spans = [
                (r["wall_start_ms"] / 1e3, (r["wall_tick_ms"] - r["wall_start_ms"]) / 1e3)
                for r in run.commits
                if _site_state(r, site) == state and r["wall_tick_ms"] > r["wall_start_ms"]
            ]
            if spans:
                ax.broken_barh(
                    spans,
                    (top, cell * 0.9),
                    facecolors=face,
                    hatch=hatch or None,
                    edgecolor="#b2182b" if state == "down" else "#777777",
                    linewidth=0.3,
                    zorder=2,
                )
    for r, _what, _sites in membership_changes(run):
        ax.plot(
            [r["wall_start_ms"] / 1e3] * 2, [y + 0.06, y + 0.44], color="black", linestyle="--", linewidth=0.9, zorder=4
        )
    rejoins = [r["wall_start_ms"] / 1e3 for r in run.commits if r["wan_bytes"].get("rejoin_transfer", 0) > 0]
    if rejoins:
        ax.plot(
            rejoins,
            [y + 0.06] * len(rejoins),
            linestyle="none",
            marker="^",
            markersize=6,
            markerfacecolor="white",
            markeredgecolor="black",
            zorder=6,
        )
    ax.plot([run.end_s] * 2, [y - 0.46, y + 0.46], color="black", linewidth=1.6, zorder=6)
    ax.annotate(
        f"done {run.end_s:.3g} s",
        (run.end_s, y - 0.46),
        xytext=(3, 0),
        textcoords="offset points",
        fontsize=7,
        va="bottom",
    )


def _nll_panel(ax: Any, tl: CommitTimeline) -> list[Any]:
    from matplotlib.lines import Line2D  # lazy: matplotlib

    handles = []
    for i, run in enumerate(tl.runs):
        colour, marker, dash = RUN_STYLES[i % len(RUN_STYLES)]
        pts = [(r["wall_tick_ms"] / 1e3, r["heldout_nll"]) for r in run.rows]
        ax.plot(
            [x for x, _ in pts],
            [y for _, y in pts],
            color=colour,
            linestyle=dash,
            marker=marker,
            markersize=3.5,
            linewidth=1.3,
            zorder=3,
        )
        final = run.rows[-1]["heldout_nll"]
        handles.append(
            Line2D(
                [],
                [],
                color=colour,
                linestyle=dash,
                marker=marker,
                label=_plain(f"{run.arm} (run {run.run_id}): final {final:.4f}"),
            )
        )
    ax.set_ylabel("held-out NLL at\neach commit (nats/token)", fontsize=9)
    return handles


def commit_figure(tl: CommitTimeline) -> Any:
    """The figure (module doc): WAN conditions, one commit lane per run, held-out NLL; shared time axis."""
    from matplotlib.lines import Line2D  # lazy: matplotlib
    from matplotlib.patches import Patch  # lazy: matplotlib

    n = len(tl.runs)
    fig = new_figure(12, 2.4 + 0.75 * n + 2.2 + 2.2)
    wan, lanes, nll = fig.subplots(
        3, 1, sharex=True, gridspec_kw={"height_ratios": [2.2, 0.75 * n + 0.3, 2.2], "hspace": 0.1}
    )
    end_s = max(tl.end_s, 1e-9)
    colours = mode_colours(tl)
    wan_handles = _wan_panel(wan, tl, end_s)
    for y, run in enumerate(tl.runs):
        _lane(lanes, y, run, colours, end_s)
        if y:
            lanes.axhline(y - 0.5, color="#888888", linewidth=0.8)
    labels = [
        _plain(f"{r.arm}\n{r.run_id}") if [x.arm for x in tl.runs].count(r.arm) > 1 else _plain(r.arm) for r in tl.runs
    ]
    lanes.set_yticks(range(n), labels, fontsize=8)
    lanes.set_ylim(n - 0.5, -0.5)
    nll_handles = _nll_panel(nll, tl)
    for ax in (wan, lanes, nll):
        ax.set_xlim(0, end_s * 1.08)
        ax.grid(axis="x", color="#dddddd", linewidth=0.6, zorder=0)
        ax.tick_params(labelsize=8)
    nll.grid(axis="y", color="#eeeeee", linewidth=0.6, zorder=0)
    nll.set_xlabel("modeled wall time since each run's start (s)")
    arms = ", ".join(r.arm for r in tl.runs)
    wan.set_title(_plain(f"Commit timeline, {tl.title}: {arms} (run {tl.run_id})"), fontsize=10)
    if wan_handles:
        wan.legend(handles=wan_handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7, frameon=False)
    nll.legend(handles=nll_handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7, frameon=False)
    handles: list[Any] = [Patch(facecolor=c, edgecolor="white", label=f"mode {m}") for m, c in colours.items()]
    handles.append(Patch(facecolor="white", hatch="xx", edgecolor="#222222", label="abstained (ran the safe mode)"))
    handles += [
        Patch(facecolor=face, hatch=hatch or None, edgecolor="#b2182b" if s == "down" else "#777777", label=words)
        for s, (face, hatch, words) in SITE_STYLE.items()
    ]
    handles += [
        Line2D([], [], color="black", linestyle="--", linewidth=0.9, label="membership change"),
        Line2D(
            [],
            [],
            linestyle="none",
            marker="^",
            markerfacecolor="white",
            markeredgecolor="black",
            label="rejoin transfer",
        ),
        Line2D([], [], color="black", linewidth=1.6, label="run done"),
    ]
    lanes.legend(
        handles=handles,
        loc="upper left",
        bbox_to_anchor=(1.01, 1.15),
        fontsize=7,
        frameon=False,
        title="lane: modes above, one strip\nper site below (site 0 on top)",
        title_fontsize=7,
    )
    return fig
