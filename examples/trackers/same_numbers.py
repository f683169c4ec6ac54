"""Compare evaluations (gates evaluate --json) of the same study imported from different sources.

Prints each file's decision and the largest relative difference of any gate number (estimate, interval
ends, p-values) from the first file's, over every gate. Standard library only.

    python examples/trackers/same_numbers.py demo/trk-csv.json demo/trk-mlflow.json demo/trk-tb.json
"""

from __future__ import annotations

import json
import sys


def numbers(value: object, path: str = "") -> dict[str, float]:
    """Every number in ``value`` by its JSON path (booleans left out)."""
    if isinstance(value, dict):
        return {k: v for key, item in value.items() for k, v in numbers(item, f"{path}.{key}").items()}
    if isinstance(value, list):
        return {k: v for i, item in enumerate(value) for k, v in numbers(item, f"{path}[{i}]").items()}
    if isinstance(value, int | float) and not isinstance(value, bool):
        return {path: float(value)}
    return {}


def main(paths: list[str]) -> int:
    evaluations = [json.loads(open(p, encoding="utf-8").read()) for p in paths]
    first = numbers(evaluations[0]["gates"])
    for path, ev in zip(paths, evaluations, strict=True):
        these = numbers(ev["gates"])
        assert these.keys() == first.keys(), f"{path}: other gate fields"
        worst = max(abs(these[k] - first[k]) / max(abs(first[k]), 1e-300) for k in first)
        print(f"{path}: {ev['decision']}, {len(these)} gate numbers, largest relative difference {worst:.1e}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
