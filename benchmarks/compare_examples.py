"""Freeze, collect and evaluate every ``examples/*.yaml``; print (or diff) what each evaluation decided.

Run from the repository root (inside the venv)::

    python benchmarks/compare_examples.py collect DIR          # freeze + collect/import each example into DIR
    python benchmarks/compare_examples.py evaluate DIR OUT.json  # gates evaluate each; the summary to OUT.json
    python benchmarks/compare_examples.py diff A.json B.json     # what differs between two summaries

The toolkit used is the one on ``PYTHONPATH`` (so ``PYTHONPATH=/path/to/other/checkout`` evaluates the same
runs with another version). Collection uses each example's own route: ``collect run`` for plans with an
``experiment`` (simulators, the torch trainer, the command collector), ``collect import`` of its table in
``examples/runs/`` otherwise. The summary holds, per example: the decision, and per gate the verdict,
estimate, interval, p-values (raw and adjusted), method, pairs and resamples; per invalidator whether it
fired; and the ledger's SHA-256 (so two collections can be compared too).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
#: plans whose runs are imported: plan stem -> (table, extra ``collect import`` arguments)
IMPORTED = {
    "continuation": ("continuation.csv", []),
    "cadence-continuation": ("cadence-energy.csv", []),
    "byo-smi": (
        "byo-smi.csv",
        ["--telemetry", str(ROOT / "examples/runs/byo-smi-logs"), "--telemetry-format", "nvidia-smi"],
    ),
}
GATE_KEYS = (
    "verdict",
    "estimate",
    "lower",
    "upper",
    "pvalue",
    "pvalue_adjusted",
    "method",
    "n_pairs",
    "attained_confidence",
    "refused_by",
)


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN / args[0]), *args[1:]], capture_output=True, text=True, cwd=ROOT, timeout=3600)


def collect(folder: Path) -> None:
    """Freeze every example and collect (or import) its runs into ``folder/<stem>/``."""
    for plan in sorted((ROOT / "examples").glob("*.yaml")):
        out = folder / plan.stem
        out.mkdir(parents=True, exist_ok=True)
        lock = out / "plan.lock.json"
        done = _run("prereg", "freeze", str(plan), "-o", str(lock))
        if done.returncode != 0:
            raise SystemExit(f"{plan.name}: prereg freeze failed: {done.stderr}")
        if plan.stem in IMPORTED:
            table, extra = IMPORTED[plan.stem]
            done = _run(
                "collect",
                "import",
                str(ROOT / "examples/runs" / table),
                "--lock",
                str(lock),
                "--out",
                str(out / "runs"),
                *extra,
            )
        else:
            done = _run("collect", "run", str(lock), "--out", str(out / "runs"), "--jobs", "2")
        print(f"{plan.stem}: collected (exit {done.returncode})", flush=True)
        if done.returncode != 0:
            print(done.stderr[-2000:], file=sys.stderr)


def evaluate(folder: Path) -> dict[str, object]:
    """``gates evaluate --json`` of every collected example: the summary described in the module doc."""
    import hashlib

    summary: dict[str, object] = {}
    for out in sorted(p for p in folder.iterdir() if (p / "plan.lock.json").is_file()):
        artifact = out / "evaluation.json"
        artifact.unlink(missing_ok=True)
        done = _run("gates", "evaluate", str(out / "plan.lock.json"), str(out / "runs"), "--out", str(artifact))
        if not artifact.is_file():
            summary[out.name] = {"exit": done.returncode, "error": done.stderr[-500:]}
            continue
        ev = json.loads(artifact.read_text())
        ledger = out / "runs" / "ledger.jsonl"
        summary[out.name] = {
            "exit": done.returncode,
            "decision": ev["decision"],
            "gates": {g["id"]: {k: g.get(k) for k in GATE_KEYS} for g in ev["gates"]},
            "families": [[f.get("family"), f.get("decision")] for f in ev.get("families", [])],
            "invalidators": {i["id"]: i["fired"] for i in ev["invalidators"]},
            "ledger_sha256": hashlib.sha256(ledger.read_bytes()).hexdigest() if ledger.is_file() else None,
        }
        print(f"{out.name}: {ev['decision']} (exit {done.returncode})", flush=True)
    return summary


def diff(a: dict[str, object], b: dict[str, object], path: str = "") -> list[str]:
    """Every path where the two summaries differ."""
    if isinstance(a, dict) and isinstance(b, dict):
        out: list[str] = []
        for key in sorted(set(a) | set(b)):
            if key not in a or key not in b:
                out.append(f"{path}/{key}: only in {'B' if key not in a else 'A'}")
            else:
                out += diff(a[key], b[key], f"{path}/{key}")  # type: ignore[arg-type]
        return out
    return [] if a == b else [f"{path}: {a!r} != {b!r}"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    sub.add_parser("collect").add_argument("folder", type=Path)
    ev = sub.add_parser("evaluate")
    ev.add_argument("folder", type=Path)
    ev.add_argument("out", type=Path)
    df = sub.add_parser("diff")
    df.add_argument("a", type=Path)
    df.add_argument("b", type=Path)
    args = parser.parse_args()
    if args.cmd == "collect":
        collect(args.folder)
    elif args.cmd == "evaluate":
        args.out.write_text(json.dumps(evaluate(args.folder), indent=1, sort_keys=True))
    else:
        differences = diff(json.loads(args.a.read_text()), json.loads(args.b.read_text()))
        print("\n".join(differences) if differences else "identical")
        return 1 if differences else 0
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
