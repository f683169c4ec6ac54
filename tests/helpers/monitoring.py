"""A monitoring section of a study that stopped for success at look 2 of 3, for the report tests."""

from __future__ import annotations

from gates.artifact_monitoring import AfterStopEstimate, GateLooks, LookBoundary, MonitoringResult, RepeatedInterval


def stopped_monitoring() -> MonitoringResult:
    """Looks at 4, 8, 12 blocks; gate ``sooner`` (t, ratio, ``upper < 1``) stopped at look 2."""
    looks = [
        LookBoundary(look=k, blocks=4 * k, fraction=k / 3, nominal_alpha=a, cumulative_alpha=c, z_bound=z)
        for k, a, c, z in ((1, 1e-5, 1e-5, 4.26), (2, 0.02265, 0.03, 2.0), (3, 0.03, 0.05, 1.9))
    ]
    gate = GateLooks(
        id="sooner",
        method="t",
        alpha=0.05,
        kind="boundary",
        looks=looks,
        pvalue=0.0024,
        repeated_intervals=[
            RepeatedInterval(
                look=1, blocks=4, nominal_alpha=1e-5, estimate=0.92, lower=0.7, upper=1.2, source="look ledger"
            ),
            RepeatedInterval(
                look=2,
                blocks=8,
                nominal_alpha=0.02265,
                estimate=0.8824,
                lower=0.81,
                upper=0.95,
                source="this evaluation",
            ),
        ],
        after_stop=AfterStopEstimate(
            stop_look=2,
            stopped_early=True,
            confidence=0.9,
            null=1.0,
            ordering_pvalue=0.02358,
            median_unbiased=0.92686,
            final_lower=0.87718,
            final_upper=0.98604,
            naive_estimate=0.8824,
            meaning="at look 2 of 3 (an early stop) ...",
        ),
    )
    return MonitoringResult(
        looks=[4, 8, 12],
        spending="pocock",
        futility="none",
        status="decision",
        look=2,
        point_blocks=8,
        total_blocks=12,
        levels_from_look=2,
        action="stop_success",
        reason="look 2 of 3 (8 of 12 blocks): supported with the alpha spent so far; the study stops for success",
        strata_evaluated=8,
        strata_total=12,
        runs_evaluated=16,
        runs_planned=24,
        runs_saved=8,
        sequence=2,
        looks_head="c" * 64,
        gates=[gate],
        estimates_note=(
            "repeated confidence intervals hold at every look at once (jointly at least 1 - 2 alpha), so any of them "
            "may be read whether or not the study stopped there"
        ),
    )
