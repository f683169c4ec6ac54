"""The paired-contrast core: outcome matrix + contrast -> one value per block.

Blocks are stratum x replicate cells; every arm of a block shares the stratum's seed and
failures, so the contrast is taken *inside* the block (design: "pair inside strata").
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._common import check_scale


def _check_design(outcomes: ArrayLike, coefficients: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    y = np.asarray(outcomes, dtype=np.float64)
    c = np.asarray(coefficients, dtype=np.float64)
    if y.ndim != 2:
        raise ValueError(f"outcomes must be a 2-D (n_blocks, n_arms) array, got shape {y.shape}")
    if c.ndim != 1 or c.size != y.shape[1]:
        raise ValueError(f"coefficients must be a 1-D array of length n_arms = {y.shape[1]}, got shape {c.shape}")
    if not np.all(np.isfinite(c)):
        raise ValueError("coefficients must be finite")
    if not np.any(c != 0):
        raise ValueError("coefficients are all zero: not a contrast")
    if abs(float(c.sum())) > 1e-9 * float(np.abs(c).sum()):
        raise ValueError(
            f"coefficients must sum to 0 (a contrast; e.g. [1, -1] for A - B or A / B), got sum {float(c.sum())!r}"
        )
    return y, c


def paired_contrast(outcomes: ArrayLike, coefficients: ArrayLike, scale: str = "difference") -> NDArray[np.float64]:
    """Per-block contrast values.

    Parameters
    ----------
    outcomes : (n_blocks, n_arms) array in the metric's unit, one row per block.
    coefficients : length n_arms, summing to 0. For ``scale="difference"`` they are linear
        coefficients (``[1, -1]`` is arm 0 minus arm 1; ``[1, -1, -1, 1]`` an interaction).
        For ``scale="ratio"`` they are exponents of a ratio of products, analysed on the log
        scale (``[1, -1]`` is arm 0 / arm 1).
    scale : ``"difference"`` or ``"ratio"``.

    Returns
    -------
    ``outcomes @ coefficients`` (difference) or ``log(outcomes) @ coefficients`` (ratio: the
    per-block natural-log ratios; interval functions with ``scale="ratio"`` exponentiate back).

    Raises ValueError on NaN/inf outcomes, and for ratios on non-positive outcomes.
    """
    check_scale(scale)
    y, c = _check_design(outcomes, coefficients)
    if y.shape[0] < 1:
        raise ValueError("outcomes has no blocks (rows)")
    bad = ~np.isfinite(y)
    if bad.any():
        r, a = np.argwhere(bad)[0]
        raise ValueError(f"outcomes contain NaN or inf (first at block {r}, arm {a})")
    if scale == "ratio":
        used = c != 0
        nonpos = (y <= 0) & used[None, :]
        if nonpos.any():
            r, a = np.argwhere(nonpos)[0]
            raise ValueError(f"a ratio contrast needs positive outcomes; block {r}, arm {a} is {y[r, a]!r}")
        logs = np.zeros_like(y)
        logs[:, used] = np.log(y[:, used])
        return np.asarray(logs @ c, dtype=np.float64)
    return np.asarray(y @ c, dtype=np.float64)


def propagate_bounds(
    outcomes: ArrayLike, coefficients: ArrayLike, bounds: ArrayLike, scale: str = "difference"
) -> NDArray[np.float64]:
    """Worst-case bound on each block's contrast from each value's measurement bound.

    ``bounds`` is the absolute measurement bound of each outcome, in the metric's unit; it
    broadcasts against ``outcomes`` (a scalar, one per arm, or a full matrix), and must be >= 0.
    Each true value lies in ``[x - b, x + b]``.

    * difference: ``sum_j |c_j| * b_ij`` (the contrast is linear, so this is attained).
    * ratio (log scale): ``sum_j |c_j| * max(log((x+b)/x), -log((x-b)/x)) = sum_j |c_j| *
      -log(1 - b_ij / x_ij)``; the downward move dominates. If ``b >= x`` the true value may be
      zero and the bound is ``inf`` (the rule is then unresolvable).

    Returns one non-negative bound per block, on the analysis scale (log scale for ratios).
    """
    check_scale(scale)
    y, c = _check_design(outcomes, coefficients)
    b = np.broadcast_to(np.asarray(bounds, dtype=np.float64), y.shape)
    if np.any(~np.isfinite(b)) or np.any(b < 0):
        raise ValueError("measurement bounds must be finite and non-negative")
    if scale == "difference":
        return np.asarray(b @ np.abs(c), dtype=np.float64)
    used = c != 0
    if np.any((y[:, used] <= 0) | ~np.isfinite(y[:, used])):
        raise ValueError("a ratio contrast needs positive, finite outcomes")
    frac = np.zeros_like(y)
    frac[:, used] = b[:, used] / y[:, used]
    with np.errstate(divide="ignore"):
        per_value = np.where(frac >= 1.0, np.inf, -np.log1p(-np.minimum(frac, 1.0)))
    per_value[:, ~used] = 0.0
    return np.asarray(per_value @ np.abs(c), dtype=np.float64)
