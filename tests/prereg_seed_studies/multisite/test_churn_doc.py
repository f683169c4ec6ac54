"""docs/churn-law.md cannot go stale: every documented command is rerun and its output compared with the
page, and the figures quoted in the prose are recomputed from the closed forms (and brute force)."""

from __future__ import annotations

import json
import math
import re
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from prereg_seed_studies.cli import main
from prereg_seed_studies.multisite import churn_law as law
from tests.conftest import REPO

DOC = REPO / "docs" / "churn-law.md"
BLOCK = re.compile(r"^```console\n\$ (prereg-studies churn [^\n]*)\n(.*?)^```$", re.S | re.M)
M, C, R = 86_400.0, 12.0, 30.0  # section 1's worker MTBF, checkpoint and restart (s)


def _blocks() -> list[tuple[str, str]]:
    return BLOCK.findall(DOC.read_text(encoding="utf-8"))


def _prose() -> str:
    """The page outside its console blocks, whitespace collapsed (the prose wraps anywhere)."""
    return " ".join(BLOCK.sub("", DOC.read_text(encoding="utf-8")).split())


def _run(command: str, capsys: pytest.CaptureFixture[str], *extra: str) -> str:
    argv = shlex.split(command)
    assert argv[0] == "prereg-studies"
    assert main([*argv[1:], *extra]) == 0, command
    return capsys.readouterr().out


def _pct(x: float) -> str:
    return f"{100 * x:.3f}%"


def test_the_page_lists_the_commands_of_every_headline_figure() -> None:
    commands = [c for c, _ in _blocks()]
    assert len(commands) == 6
    assert sum("--scan-workers" in c for c in commands) == 3 and sum("--pool" in c for c in commands) == 2
    assert any("--workers 700" in c for c in commands)


@pytest.mark.parametrize("number", range(6))
def test_each_documented_command_prints_what_the_page_shows(number: int, capsys: pytest.CaptureFixture[str]) -> None:
    command, shown = _blocks()[number]
    assert _run(command, capsys) == shown, f"docs/churn-law.md is stale: rerun `{command}` and paste its output"


@pytest.mark.subprocess
def test_one_documented_command_through_the_console_script() -> None:
    command, shown = next(b for b in _blocks() if "--pool" in b[0])
    exe = Path(sys.executable).with_name("prereg-studies")
    proc = subprocess.run([str(exe), *shlex.split(command)[1:]], capture_output=True, text=True, check=False)
    assert proc.returncode == 0 and proc.stdout == shown, proc.stderr


def test_young_daly_and_the_two_x_losses_match_the_closed_forms() -> None:
    text = _prose()
    for n, young_pct in ((1, "+0.558%"), (700, "+16.450%"), (10_000, "+85.502%")):
        lam = n / M
        w = law.optimal_interval(lam, C)
        assert f"+{_pct(math.sqrt(2 * C / lam) / w - 1)}" == young_pct
        assert f"{young_pct} at lambda C = {lam * C:.3g}" in text
    assert f"sqrt(2 lambda C)/3 = {_pct(math.sqrt(2 * C / M) / 3)}" in text  # the leading order, one worker
    daly = [_pct(1 - law.daly_interval(n / M, C) / law.optimal_interval(n / M, C)) for n in (700, 3000, 10_000)]
    assert f"undershoots w* by {daly[0]} at lambda C = 0.0972, {daly[1]} at 0.417 and {daly[2]} at 1.39" in text
    losses = []
    for n in (1, 100, 700, 10_000):
        lam = n / M
        w = law.optimal_interval(lam, C)
        losses.append(
            f"{_pct(law.efficiency_loss(0.5 * w, lam, C, R))} and {_pct(law.efficiency_loss(2 * w, lam, C, R))}"
        )
    assert (
        f"costs {losses[0]} of the optimum's efficiency at lambda C = 0.000139 (sqrt(2 lambda C)/4 = "
        f"{_pct(math.sqrt(2 * C / M) / 4)}), {losses[1]} at 0.0139, {losses[2]} at 0.0972, and {losses[3]} at 1.39"
        in text
    )


def test_restart_cost_moves_the_efficiency_but_not_the_optimum(capsys: pytest.CaptureFixture[str]) -> None:
    text = _prose()
    scans = {}
    for command, _ in _blocks():
        if "--scan-workers" in command:
            data = json.loads(_run(command, capsys, "--json"))
            scans[data["params"]["restart_s"]] = data
    assert set(scans) == {0.0, 30.0, 3600.0}
    at = {r: {row["workers"]: row for row in s["rows"]} for r, s in scans.items()}
    for n in (1, 100, 700, 3000):
        assert len({at[r][n]["interval_s"] for r in at}) == 1  # bitwise: R never enters w*
        for key in ("loss_half", "loss_double"):  # R cancels from the ratio analytically; floats to ~1e-15
            assert max(at[r][n][key] for r in at) == pytest.approx(min(at[r][n][key] for r in at), rel=1e-12)
        assert at[0.0][n]["efficiency"] > at[30.0][n]["efficiency"] > at[3600.0][n]["efficiency"]
    assert at[0.0][700]["interval_s"] == law.optimal_interval(700 / M, C)
    assert f"w* = {at[30.0][700]['interval_s']:.5g} s at 700 workers for R = 0, 30 and 3600 s" in text
    effs = ", ".join(f"{law.optimal_efficiency(700 / M, C, r):.4f}" for r in (0.0, 30.0))
    assert f"{effs} and {law.optimal_efficiency(700 / M, C, 3600.0):.4f} at 700 workers" in text
    half = {r: s["half_efficiency_workers"] for r, s in scans.items()}
    assert (
        f"from n = {half[0.0]} workers (R = 0) to n = {half[30.0]} (R = 30 s) and n = {half[3600.0]} (R = 3600 s)"
    ) in text


def test_efficiency_halves_at_700_workers_by_brute_force(capsys: pytest.CaptureFixture[str]) -> None:
    n = np.arange(1, 5001)
    eff = np.array([law.optimal_efficiency(k / M, C, R) for k in n])
    half = int(n[np.argmax(eff <= 0.5)])
    peak = int(n[np.argmax(n * eff)])
    assert half == 700
    text = _prose()
    assert (
        f"falls to 50% at n = {half} workers ({eff[half - 2]:.5f} at {half - 1} workers, {eff[half - 1]:.5f} at "
        f"{half}, where lambda C = {half * C / M:.3g} and the job's MTBF is {M / half:.6g} s)"
    ) in text
    assert f"peaks at n = {peak} workers ({peak * eff[peak - 1]:.5g} worker-equivalents)" in text
    command = next(c for c, _ in _blocks() if "--workers 700" in c)
    mc = json.loads(_run(command, capsys, "--json"))["intervals"]
    exact = mc["exact"]
    assert exact["mc"]["lower"] < exact["efficiency"] < exact["mc"]["upper"]
    assert (
        f"{exact['efficiency']:.5f}, lies inside the Monte Carlo's 95% interval [{exact['mc']['lower']:.5f}, "
        f"{exact['mc']['upper']:.5f}]"
    ) in text
    young, daly1 = law.young_interval(700 / M, C), law.daly_first_order_interval(700 / M, C, R)
    assert f"Young's interval ({young:.5g} s) loses {_pct(law.efficiency_loss(young, 700 / M, C, R))}" in text
    assert f"keeps R, loses {_pct(law.efficiency_loss(daly1, 700 / M, C, R))}" in text


def test_the_flaky_admission_figures_match_the_closed_forms() -> None:
    text = _prose()
    reliable = law.pool_throughput([1e-6] * 600, C, R)
    everyone = law.pool_throughput([1e-6] * 600 + [1e-4] * 200, C, R)
    assert (
        f"cuts the throughput from {reliable:.2f} to {everyone:.2f} worker-equivalents, by "
        f"{_pct(1 - everyone / reliable)}"
    ) in text
    assert (
        f"falls from {1 / 6e-4:.5g} s to {1 / 0.0206:.5g} s and its efficiency from "
        f"{law.optimal_efficiency(6e-4, C, R):.4f} to {law.optimal_efficiency(0.0206, C, R):.4f}"
    ) in text
    # the mixed pools, by brute force over how many of the milder and the flaky pool to admit
    k2 = np.arange(0, 1001, dtype=float)
    best = (0.0, 0, 0)
    for k3 in range(4):
        rate = 600 * 1e-6 + k2 * 1.5e-5 + k3 * 1e-3
        thr = (600 + k2 + k3) * law.optimal_curves(rate, C, R)[1]
        i = int(np.argmax(thr))
        if thr[i] > best[0]:
            best = (float(thr[i]), i, k3)
    assert best[1:] == (761, 0)
    all_milder = law.pool_throughput([1e-6] * 600 + [1.5e-5] * 1000, C, R)
    all_three = law.pool_throughput([1e-6] * 600 + [1.5e-5] * 1000 + [1e-3] * 3, C, R)
    assert (
        f"761 of the 1000 milder ones ({best[0]:.2f} worker-equivalents, against {all_milder:.2f} with all 1000 "
        f"and {reliable:.2f} with none)"
    ) in text
    assert f"cut the throughput to {all_three:.2f}, {_pct(1 - all_three / best[0])} below the best" in text
