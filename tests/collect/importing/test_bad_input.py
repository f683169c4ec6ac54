"""Hostile and extreme inputs: one clear message and exit 2 (never 4, a hang or a memory blow-up)."""

from __future__ import annotations

import errno
import gzip
import os
from pathlib import Path

import pytest

from tests.conftest import shared_example_path
from tests.helpers import equal_work_rows, frozen_shared, run, write_csv

DEEP = "[" * 100_000 + "]" * 100_000


@pytest.fixture
def lock(tmp_path: Path) -> Path:
    return frozen_shared(tmp_path)


def _bad(proc, *words: str) -> None:
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert len(proc.stderr.strip().splitlines()) >= 1 and "internal error" not in proc.stderr
    for word in words:
        assert word in proc.stderr, proc.stderr


@pytest.mark.subprocess
def test_plan_expansion_is_bounded_at_validate(tmp_path):
    text = shared_example_path("equal-work.yaml").read_text()
    extra = "".join(f"    f{i}: [{', '.join(str(j) for j in range(20))}]\n" for i in range(8))
    plan = tmp_path / "huge.yaml"
    plan.write_text(text.replace("    seed: [101, 102]\n", "    seed: [101, 102]\n" + extra))
    for command in ("validate", "freeze"):
        _bad(run("prereg", command, str(plan)), "expands into", "at most 100,000")


@pytest.mark.subprocess
@pytest.mark.parametrize(
    "args, words",
    [
        (["--sensor", "sim", "--poll-ms", "1e-7"], "--poll-ms must be"),
        (["--sensor", "sim", "--seconds", "1e12"], "--seconds must be"),
        (["--sensor", "sim", "--window-s", "nan"], "--window-s must be"),
        (["--sensor", "sim", "--poll-ms", "0.1", "--seconds", "3600"], "polls"),
        (["--sensor", "sim:cell_ms=1e-4"], "at least 0.1 ms"),
        (["--sensor", "sim:update_ms=inf"], "finite"),
        (["--sensor", "sim:noise_w=nan"], "finite"),
    ],
)
def test_probe_options_are_bounded(args, words):
    _bad(run("collect", "probe", *args), words)


@pytest.mark.subprocess
@pytest.mark.parametrize(
    "args",
    [
        ["--mtbf-s", "1e-300", "--checkpoint-s", "1", "--restart-s", "1"],
        ["--mtbf-s", "100", "--checkpoint-s", "1e300", "--restart-s", "1"],
        ["--mtbf-s", "100", "--checkpoint-s", "1", "--restart-s", "1e308"],
        ["--mtbf-s", "100", "--checkpoint-s", "1", "--restart-s", "1", "--workers", "1000000000"],
        ["--mtbf-s", "100", "--checkpoint-s", "1", "--restart-s", "1", "--segments", "1000000000"],
        ["--mtbf-s", "1", "--checkpoint-s", "100", "--restart-s", "1"],
    ],
)
def test_churn_refuses_extreme_numbers(args):
    _bad(run("prereg-studies", "churn", *args))


@pytest.mark.subprocess
def test_deeply_nested_json_everywhere(tmp_path, lock):
    (tmp_path / "deep.lock.json").write_text(DEEP)
    _bad(run("prereg", "show", str(tmp_path / "deep.lock.json")), "nested too deeply")
    _bad(run("gates", "evaluate", str(tmp_path / "deep.lock.json"), str(tmp_path)), "nested too deeply")
    (tmp_path / "deep.json").write_text('{"a": ' + DEEP + "}")
    _bad(run("reports", "show", str(tmp_path / "deep.json")), "nested too deeply")
    (tmp_path / "deep.jsonl").write_text('{"a": ' + DEEP + "}\n")
    _bad(
        run("collect", "import", str(tmp_path / "deep.jsonl"), "--lock", str(lock), "--out", str(tmp_path / "r")),
        "nested too deeply",
    )
    runs = tmp_path / "runs"
    table = write_csv(tmp_path / "t.csv", equal_work_rows())
    assert run("collect", "import", str(table), "--lock", str(lock), "--out", str(runs)).returncode == 0
    with open(runs / "ledger.jsonl", "a") as fh:
        fh.write('{"a": ' + DEEP + "}\n")
    proc = run("gates", "evaluate", str(lock), str(runs))
    assert proc.returncode == 3 and "complete but not a valid record" in proc.stderr


@pytest.mark.subprocess
def test_junk_parquet_and_gzip_bomb(tmp_path, lock):
    (tmp_path / "junk.parquet").write_bytes(b"PAR1" + os.urandom(2000) + b"PAR1")
    _bad(
        run("collect", "import", str(tmp_path / "junk.parquet"), "--lock", str(lock), "--out", str(tmp_path / "r")),
        "not a readable Parquet file",
    )
    bomb = tmp_path / "bomb.csv.gz"
    with gzip.open(bomb, "wb", compresslevel=9) as fh:
        chunk = b"0" * (1 << 20)
        for _ in range(80):  # 80 MiB of zeros in about 80 kB
            fh.write(chunk)
    assert bomb.stat().st_size < 1 << 20
    _bad(run("collect", "import", str(bomb), "--lock", str(lock), "--out", str(tmp_path / "r")), "decompresses to more")
    assert not (tmp_path / "r" / "ledger.jsonl").exists()


def test_row_count_is_bounded(tmp_path, monkeypatch):
    import collect.importing.importer as importer

    monkeypatch.setattr(importer, "MAX_ROWS", 5)
    table = write_csv(tmp_path / "t.csv", equal_work_rows())
    with pytest.raises(importer.ImportProblem, match="more than 5 rows"):
        importer.read_table(table)


@pytest.mark.subprocess
def test_special_files_are_named_for_what_they_are(tmp_path, lock):
    os.mkfifo(tmp_path / "fifo")
    cases = {"/dev/zero": "is a device", str(tmp_path / "fifo"): "named pipe", str(tmp_path): "is a folder"}
    for path, words in cases.items():
        _bad(run("collect", "import", path, "--lock", str(lock), "--out", str(tmp_path / "r")), words)
        _bad(run("reports", "show", path), words)


def test_disk_full_names_the_file(tmp_path, monkeypatch):
    from collect.ledger.store import write_all
    from prereg import fileio

    fd = os.open("/dev/full", os.O_WRONLY)
    try:
        with pytest.raises(OSError) as caught:
            write_all(fd, b"x" * 100, tmp_path / "ledger.jsonl")
    finally:
        os.close(fd)
    assert caught.value.filename == str(tmp_path / "ledger.jsonl") and caught.value.errno == errno.ENOSPC

    def full(_fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(fileio.os, "fsync", full)
    with pytest.raises(OSError) as caught:
        fileio.atomic_write(tmp_path / "evaluation.json", b"{}")
    assert caught.value.filename == str(tmp_path / "evaluation.json") and "No space left" in str(caught.value)
    assert list(tmp_path.iterdir()) == []  # no temporary file left behind
