"""A failed run's reason in words, and a program's undeclared metrics kept as descriptive (no subprocess)."""

from __future__ import annotations

import pytest

from collect.collectors.command.outputs import MAX_UNDECLARED, RunFailure, parse_metrics, undeclared_info
from collect.ledger.failed_runs import failed_run_lines, failed_runs, failure_words, undeclared_words
from collect.ledger.store import RunRecord

STDERR = "epoch 1\nloading shard 7\n\nRuntimeError: CUDA error: out of memory\n"


def record(run_id: str, status: str = "complete", error: str | None = None, code: dict | None = None) -> RunRecord:
    return RunRecord.model_validate(
        {
            "run_id": run_id,
            "prereg_sha256": "a" * 64,
            "stratum": {"site": 1},
            "arm": "b",
            "replicate": 0,
            "status": status,
            "metrics": {},
            "error": error,
            "code": code or {},
        }
    )


@pytest.mark.parametrize(
    ("error", "reason", "tail"),
    [
        (
            f"the program exited with status 1; stderr ends: {STDERR.strip()!r}",
            "the program exited with status 1",
            ["epoch 1", "loading shard 7", "RuntimeError: CUDA error: out of memory"],
        ),
        (
            f"the program exited with status 2; stderr ends: {'x' * 50 + chr(10) + 'a' + chr(10) + 'b' + chr(10) + 'c'!r}",
            "the program exited with status 2",
            ["a", "b", "c"],
        ),  # the last three lines only
        ("the program was ended by signal 9 (nothing on stderr)", "the program was ended by signal 9", []),
        ("ValueError: bad shape at trainer.py:212", "ValueError: bad shape", []),  # the collector code's source line
        (
            "marks file line 3: phase 'x' begun but never ended",
            "marks file line 3: phase 'x' begun but never ended",
            [],
        ),
        ("first line\nsecond line", "first line", []),
        ("odd; stderr ends: not a literal", "odd; stderr ends: not a literal", []),
        (None, "no reason recorded", []),
    ],
)
def test_a_failure_reads_as_its_reason_and_the_last_lines_of_stderr(error, reason, tail):
    assert failure_words(error) == (reason, tail)


def test_a_long_reason_is_cut_for_people_and_kept_whole_in_the_record():
    reason, _ = failure_words("x" * 1000)
    assert len(reason) == 300 and reason.endswith("...")


def test_failed_runs_are_listed_one_line_each_with_their_stderr_indented():
    records = [
        record("run-ok"),
        record("run-oom", "failed", f"the program exited with status 1; stderr ends: {STDERR!r}"),
        record("run-sig", "failed", "the program was ended by signal 9 (nothing on stderr)"),
    ]
    failed = failed_runs(records)
    assert [f.run_id for f in failed] == ["run-oom", "run-sig"]
    assert failed_run_lines(failed) == [
        "run-oom: arm b, site=1 #0: the program exited with status 1",
        "    epoch 1",
        "    loading shard 7",
        "    RuntimeError: CUDA error: out of memory",
        "run-sig: arm b, site=1 #0: the program was ended by signal 9",
    ]
    assert failed_run_lines(failed, limit=1, more="see the ledger")[-1] == "... and 1 more failed run (see the ledger)"
    assert failed[0].to_json()["stderr_tail"][-1] == "RuntimeError: CUDA error: out of memory"


def test_runs_that_wrote_the_same_undeclared_metrics_share_one_warning():
    kept = {"undeclared_metrics": {"tokens_per_s": 1.5, "lr": None}}
    records = [record(f"run-{i}", code=kept) for i in range(4)] + [record("run-x")]
    records.append(record("run-y", code={"undeclared_metrics": {"extra": 2.0}, "undeclared_metrics_more": 70}))
    assert undeclared_words(records) == [
        "4 runs (run-0, run-1 and 2 more) wrote metric(s) lr, tokens_per_s the plan does not declare: kept as "
        "descriptive, not analysed",
        "run run-y wrote metric(s) extra and 70 more (not kept) the plan does not declare: kept as descriptive, "
        "not analysed",
    ]


def test_undeclared_metrics_are_kept_as_descriptive_and_fail_nothing():
    data = b'{"loss": 2.5, "tokens_per_s": 1200, "note": "fast", "flag": true, "big": 1e400}'
    assert parse_metrics(data, ["loss"]) == {"loss": 2.5}
    assert undeclared_info(data, ["loss"]) == {
        "undeclared_metrics": {"tokens_per_s": 1200.0, "note": None, "flag": None, "big": None}
    }
    assert undeclared_info(b'{"loss": 2.5}', ["loss"]) == {}


def test_declared_metrics_still_fail_the_run_when_missing_or_not_finite_numbers():
    for data, words in [
        (b'{"tokens_per_s": 1}', "declared metric(s) loss missing"),
        (b'{"loss": "2.5"}', "is not a number"),
        (b'{"loss": NaN}', "non-finite value"),
        (b'{"loss": 1e400}', "beyond the range of a double"),
    ]:
        with pytest.raises(RunFailure, match=words.replace("(", r"\(").replace(")", r"\)")):
            parse_metrics(data, ["loss"])


def test_a_metric_the_sensor_computes_may_not_be_written_by_the_program():
    with pytest.raises(RunFailure, match="energy come from the sensor"):
        undeclared_info(b'{"loss": 1, "energy": 5}', ["loss"], sensor_metrics=["energy"])


def test_a_flood_of_undeclared_metrics_is_kept_up_to_its_cap_and_counted():
    names = {f"m{i}": i for i in range(MAX_UNDECLARED + 5)} | {"n" * 200: 1}
    body = ", ".join(f'"{k}": {v}' for k, v in names.items())
    info = undeclared_info(("{" + body + "}").encode(), [])
    assert len(info["undeclared_metrics"]) == MAX_UNDECLARED and info["undeclared_metrics_more"] == 6
    assert "n" * 200 not in info["undeclared_metrics"]
