"""Every GPU of a multi-GPU log summed into one device (``LogOptions.all_gpus``: a data-parallel run).

More in ``docs/internals.md``.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from collect.telemetry.logs.common import LogError, LogOptions

#: statuses are object arrays of these words; "error" marks a poll that lacks a GPU's reading
OK = "ok"


def summed_options(options: LogOptions, gpus: int) -> LogOptions:
    """``options`` for the sum of ``gpus`` devices: the power range ``gpus`` times the per-GPU one
    (one GPU: ``options`` as they are)."""
    if gpus == 1:
        return options
    low, high = options.power_range
    return replace(options, power_range_w=(low * gpus, high * gpus), gpu=None)


def refuse_gpu_with_all(options: LogOptions, where: str) -> None:
    """``LogError`` when both one GPU and every GPU are asked for."""
    if options.all_gpus and options.gpu is not None:
        raise LogError(
            f"{where}: --gpu {options.gpu} and --gpus all contradict each other (one GPU, or the sum of "
            "every GPU); give one of them"
        )


def polls_by_order(position: np.ndarray) -> np.ndarray:
    """The poll of each row of a log that writes its GPUs in a fixed order each poll (nvidia-smi):
    a new poll starts at a row whose GPU comes no later in that order than the row before it
    (``position``: each row's GPU by order of first appearance). A poll holds each GPU at most once."""
    new = np.ones(position.size, dtype=bool)
    new[1:] = position[1:] <= position[:-1]
    return np.cumsum(new) - 1


def polls_by_rank(device: np.ndarray) -> np.ndarray:
    """The poll of each row of a log whose ``k``-th line of each GPU is its ``k``-th sample (dcgmi
    dmon): each row's rank among its own GPU's rows."""
    order = np.argsort(device, kind="stable")
    sorted_codes = device[order]
    starts = np.flatnonzero(np.r_[True, sorted_codes[1:] != sorted_codes[:-1]])
    first_of = np.repeat(starts, np.diff(np.r_[starts, sorted_codes.size]))
    rank = np.empty(device.size, dtype=np.int64)
    rank[order] = np.arange(device.size) - first_of
    return rank


def sum_over_gpus(
    values: np.ndarray, status: np.ndarray | None, poll: np.ndarray, polls: int, gpus: int
) -> tuple[np.ndarray, np.ndarray]:
    """``(summed values, statuses)`` per poll of one additive column read one row per GPU per poll
    (``poll``: each row's poll, each GPU at most once per poll): the sum where all ``gpus`` GPUs
    have an ok reading in the poll, NaN with a status that is not ok elsewhere (a GPU's own status
    where it had one that is not ok, ``error`` where its line is missing)."""
    ok = np.isfinite(values) if status is None else (status == OK) & np.isfinite(values)
    total = np.bincount(poll, weights=np.where(ok, values, 0.0), minlength=polls)
    count = np.bincount(poll, weights=ok.astype(np.float64), minlength=polls)
    complete = count == gpus
    out_status = np.full(polls, "error", dtype=object)
    out_status[complete] = OK
    if status is not None:
        bad = np.flatnonzero(~ok & (status != OK))
        keep = ~complete[poll[bad]]
        out_status[poll[bad][keep]] = status[bad][keep]
    return np.where(complete, total, np.nan), out_status


def first_rows(poll: np.ndarray, polls: int) -> np.ndarray:
    """The first row of each poll (rows of a poll are consecutive or ranked: the smallest row)."""
    first = np.full(polls, poll.size, dtype=np.int64)
    np.minimum.at(first, poll, np.arange(poll.size))
    return first


def last_rows(poll: np.ndarray, polls: int) -> np.ndarray:
    """The last row of each poll."""
    last = np.full(polls, -1, dtype=np.int64)
    np.maximum.at(last, poll, np.arange(poll.size))
    return last


__all__ = [
    "first_rows",
    "last_rows",
    "polls_by_order",
    "polls_by_rank",
    "refuse_gpu_with_all",
    "sum_over_gpus",
    "summed_options",
]
