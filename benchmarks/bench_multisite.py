"""Multi-site recovery simulator (``sim.multisite``): runs per second for each policy, default params.

Run: python benchmarks/bench_multisite.py [--runs N] [--repeats R] [--outage-site none|random|0|1|2]

Each policy runs N times with seeds 0..N-1 (Poisson outages drawn per seed, as in a plan's strata),
two ways: the model alone (validate + draw + simulate + invariant checks) and the full collector
run (plus writing the JSONL event trace to a temporary folder). Policies are timed in R interleaved
rounds and the best round is kept (the machine's noise only ever slows a round). Printed per
policy: runs per second, milliseconds per run, and the mean completion time, lost work and goodput
over the seeds (so the speed is read beside what was simulated).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from collect.collectors.base import RunContext
from prereg_seed_studies.multisite.multisite import MultisiteCollector, run_params
from prereg_seed_studies.multisite.recovery import POLICIES, SimResult


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=500)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--outage-site", default="random")
    args = ap.parse_args()
    site: int | str = int(args.outage_site) if args.outage_site.isdigit() else args.outage_site
    collector = MultisiteCollector()
    print(
        f"sim.multisite, default params, outage_site={site}, {args.runs} seeds per policy, "
        f"best of {args.repeats} rounds"
    )
    print(
        f"{'policy':<9} {'model runs/s':>13} {'ms/run':>7} {'collector runs/s':>17} {'ms/run':>7} "
        f"{'completion s':>13} {'lost work':>10} {'goodput':>8}"
    )
    tick_s = MultisiteCollector.PARAMS["tick_ms"].default / 1000.0
    model_s = dict.fromkeys(POLICIES, float("inf"))
    full_s = dict.fromkeys(POLICIES, float("inf"))
    results: dict[str, list[SimResult]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.repeats):
            for policy in POLICIES:
                params = {"policy": policy, "outage_site": site}
                start = time.perf_counter()
                results[policy] = [run_params(params, seed)[0] for seed in range(args.runs)]
                model_s[policy] = min(model_s[policy], time.perf_counter() - start)
                start = time.perf_counter()
                for seed in range(args.runs):
                    collector.run(RunContext(f"run{seed}", params, seed, {}, policy, 0, Path(tmp)))
                full_s[policy] = min(full_s[policy], time.perf_counter() - start)
    for policy in POLICIES:
        rs, m, f = results[policy], model_s[policy], full_s[policy]
        completion = statistics.mean(r.end_tick for r in rs) * tick_s
        lost = statistics.mean(r.lost for r in rs)
        goodput = statistics.mean(r.retained / r.attempted for r in rs)
        print(
            f"{policy:<9} {args.runs / m:>13.0f} {1e3 * m / args.runs:>7.3f} {args.runs / f:>17.0f} "
            f"{1e3 * f / args.runs:>7.3f} {completion:>13.1f} {lost:>10.1f} {goodput:>8.4f}"
        )


if __name__ == "__main__":
    main()
