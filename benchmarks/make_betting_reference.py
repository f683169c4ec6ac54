"""Write tests/estimators/data/betting_confseq.json: betting capital and interval ends computed by
the independent ``confseq`` package (Howard & Waudby-Smith; sdist 0.0.11, ``confseq/betting.py``
and ``confseq/betting_strategies.py``), which tests/estimators/test_betting.py compares with
:mod:`estimators.betting`. confseq is not a dependency of the toolkit or its tests; only this script
needs it. Its C++ extension does not build here, but the betting code is pure Python, so::

    python3 -m venv /tmp/csenv
    /tmp/csenv/bin/pip install "numpy<2" "scipy<1.14" matplotlib multiprocess
    /tmp/csenv/bin/pip download confseq --no-deps --no-binary :all: -d /tmp/cs
    tar xzf /tmp/cs/confseq-0.0.11.tar.gz -C /tmp/cs
    PYTHONPATH=/tmp/cs/confseq-0.0.11/src MPLBACKEND=Agg /tmp/csenv/bin/python \\
        benchmarks/make_betting_reference.py

(numpy < 2: confseq 0.0.11 uses ``np.float_``). This script imports nothing from the toolkit: the
data are drawn here with a seeded numpy generator and stored in the fixture as they are.

What is recorded per data set (rescaled to [0, 1] with the set's bounds):

* ``lambdas``: ``lambda_predmix_eb(x, alpha, fixed_n=horizon)`` (confseq's predictable-mixture
  empirical-Bernstein bets, prior mean 1/2, prior variance 1/4, one fake observation), with
  ``alpha = (1 - confidence) / 2``;
* ``capital_plus`` / ``capital_minus`` at several candidate means: ``betting_mart`` with
  ``theta=1`` (the positive process only, K+) / ``theta=0`` (K-), those bets, ``trunc_scale=1/2``,
  ``m_trunc=True`` (bets truncated at ``1/(2 m)`` / ``1/(2 (1 - m))``);
* ``ci``: confseq's grid interval (``breaks`` grid steps on [0, 1], running intersection over t):
  ``betting_ci`` (two-sided, ``alpha = 1 - confidence``, ``theta = 1/2``, which tunes each side's
  bets to ``alpha / 2`` and rejects where ``max(K+, K-) / 2 > 1 / alpha``: the same test) when the
  horizon is n, else ``betting_cs`` with the bets above passed explicitly.
  Its ``l`` is the grid point below the first non-rejected one, so the exact lower end lies in
  ``[l, l + 1/breaks)``; likewise the exact upper end lies in ``(u - 1/breaks, u]``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
from confseq.betting import betting_ci, betting_cs, betting_mart  # independent implementation
from confseq.betting_strategies import lambda_predmix_eb

OUT = Path(__file__).resolve().parent.parent / "tests" / "estimators" / "data" / "betting_confseq.json"
BREAKS = 20000
TRUNC = 0.5


def datasets() -> list[dict[str, object]]:
    """Seeded data sets on the analysis scale, with bounds, confidence and horizon."""
    rng = np.random.default_rng(20240537)
    normal = np.clip(rng.normal(0.4, 1.0, 10), -5, 5)
    rare = np.where(rng.uniform(size=20) < 0.1, 20.0, -2.0)
    rare[3] = 20.0  # at least one adverse event
    unif = rng.uniform(0.0, 1.0, 30)
    discrete = np.where(rng.uniform(size=12) < 0.25, 10.0, 0.0)
    beta = rng.beta(0.5, 2.0, 50) * 2.0 - 1.0
    lognormal = np.clip(rng.lognormal(0.0, 1.0, 15) - np.exp(0.5), -3.0, 12.0)
    return [
        {"name": "normal", "d": normal, "bounds": (-5.0, 5.0), "confidence": 0.90, "horizon": 10},
        {"name": "rare_adverse", "d": rare, "bounds": (-20.0, 20.0), "confidence": 0.90, "horizon": 20},
        {"name": "uniform_short_of_horizon", "d": unif, "bounds": (0.0, 1.0), "confidence": 0.95, "horizon": 40},
        {"name": "discrete_past_horizon", "d": discrete, "bounds": (-20.0, 20.0), "confidence": 0.80, "horizon": 6},
        {"name": "beta", "d": beta, "bounds": (-1.0, 1.0), "confidence": 0.99, "horizon": 50},
        {"name": "lognormal", "d": lognormal, "bounds": (-3.0, 12.0), "confidence": 0.90, "horizon": 15},
    ]


def reference(case: dict[str, object]) -> dict[str, object]:
    d = np.asarray(case["d"], dtype=float)
    lo, hi = case["bounds"]  # type: ignore[misc]
    conf, horizon = float(case["confidence"]), int(case["horizon"])  # type: ignore[arg-type]
    alpha = (1.0 - conf) / 2.0
    x = (d - lo) / (hi - lo)

    def bet(xs: np.ndarray, m: float) -> np.ndarray:
        return lambda_predmix_eb(xs, alpha=alpha, fixed_n=horizon)

    ms = sorted({0.05, 0.2, 0.35, 0.5, 0.65, 0.8, 0.95, round(float(np.mean(x)), 6)})
    plus = [betting_mart(x, m, theta=1, lambdas_fn_positive=bet, trunc_scale=TRUNC, m_trunc=True).tolist() for m in ms]
    minus = [betting_mart(x, m, theta=0, lambdas_fn_negative=bet, trunc_scale=TRUNC, m_trunc=True).tolist() for m in ms]
    if horizon == d.size:
        how = "betting_ci(alpha=1-confidence, theta=1/2, trunc_scale=1/2, m_trunc=True)"
        low, up = betting_ci(
            x,
            alpha=1.0 - conf,
            breaks=BREAKS,
            running_intersection=True,
            theta=0.5,
            convex_comb=False,
            trunc_scale=TRUNC,
            m_trunc=True,
        )
    else:
        how = "betting_cs(explicit fixed_n bets, alpha=1-confidence, theta=1/2, trunc_scale=1/2, m_trunc=True)"
        ls, us = betting_cs(
            x,
            lambdas_fns_positive=[bet],
            lambdas_fns_negative=[bet],
            alpha=1.0 - conf,
            breaks=BREAKS,
            running_intersection=True,
            theta=0.5,
            convex_comb=False,
            trunc_scale=TRUNC,
            m_trunc=True,
        )
        low, up = ls[-1], us[-1]
    return {
        "name": case["name"],
        "d": d.tolist(),
        "bounds": [lo, hi],
        "confidence": conf,
        "horizon": horizon,
        "lambdas": lambda_predmix_eb(x, alpha=alpha, fixed_n=horizon).tolist(),
        "m": ms,
        "capital_plus": plus,
        "capital_minus": minus,
        "ci_rescaled": [float(low), float(up)],
        "ci_function": how,
    }


def main() -> int:
    import confseq  # noqa: F401

    cases = [reference(c) for c in datasets()]
    doc = {
        "source": "confseq 0.0.11 (pip sdist; confseq/betting.py, confseq/betting_strategies.py), "
        "generated by benchmarks/make_betting_reference.py",
        "breaks": BREAKS,
        "trunc_scale": TRUNC,
        "cases": cases,
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {OUT} ({len(cases)} cases)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
