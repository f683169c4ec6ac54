"""The ranking null benchmark (benchmarks/bench_ranking_null.py) on a tiny run: it goes through the product's
ranking path, is seeded, and Holm never orders a cell that each cell alone would not."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.bench_ranking_null import CONTROLS, main, null_table, simulate


def test_a_tiny_null_run_is_seeded_and_holm_orders_a_subset_of_the_per_cell_orders(
    capsys: pytest.CaptureFixture[str],
) -> None:
    first, again = simulate(6, 0, mixed=False), simulate(6, 0, mixed=False)
    assert set(first) == set(CONTROLS)
    for control in CONTROLS:
        for kind, counts in first[control].items():
            assert np.array_equal(counts, again[control][kind]), (control, kind)

    def ordered(control: str) -> np.ndarray:
        t = first[control]
        return t["challenger"] + t["comparator"] + t["flip"]

    assert np.all(ordered("holm") <= ordered("per_cell")) and np.all(ordered("per_cell") <= 12)
    assert np.array_equal(first["per_cell"]["false_claim"], (ordered("per_cell") > 0).astype(float))
    assert len(null_table(first)) == 2 + len(CONTROLS)
    assert main(["--studies", "3"]) == 0
    out = capsys.readouterr().out
    assert "| holm |" in out and "studies with a false claim" in out
