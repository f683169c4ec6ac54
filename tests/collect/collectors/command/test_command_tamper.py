"""The ``command`` collector's run folder against a hostile program: links and hard links to the
ledger, a folder replaced by a link, huge or sparse files, daemons that leave the group, a killed
supervisor, numbers Python cannot hold. Nothing outside the run's folder is ever written; the run
fails with a reason in words; the other runs go on; no process of the program survives."""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from pathlib import Path

import pytest

import collect.engine.runner as engine
from collect.collectors.command.outputs import RunFailure, parse_mark, parse_metrics
from collect.collectors.command.process import Finished, run_program
from collect.collectors.command.runfolder import RunFolder, read_marks_in
from collect.ledger.chain import verify_chain
from collect.ledger.store import read_ledger
from prereg.jsoncodec import JSONFormatError, loads
from tests.helpers import alive
from tests.helpers.engine import loaded

TARGET = "collect.collectors.command.collector:CommandCollector"
INTERNAL_NAMES = ("OverflowError", "RecursionError", "ValueError", "Exceeds the limit", "set_int_max_str_digits")


@pytest.fixture(autouse=True)
def registered(monkeypatch):
    monkeypatch.setitem(engine.COLLECTORS, "command", TARGET)


# ---------------------------------------------------------------- the run folder, without a program


def test_a_link_at_the_run_folders_name_is_removed_itself_never_followed(tmp_path):
    traces, outside = tmp_path / "traces", tmp_path / "outside"
    traces.mkdir()
    outside.mkdir()
    (outside / "precious.txt").write_text("keep me")
    (traces / "r.run").symlink_to(outside)  # an earlier attempt's folder replaced by a link
    with RunFolder(traces, "r.run") as folder:
        folder.write_new("run.json", b"{}")
    assert (outside / "precious.txt").read_text() == "keep me" and sorted(os.listdir(outside)) == ["precious.txt"]
    assert not (traces / "r.run").is_symlink() and (traces / "r.run" / "run.json").read_bytes() == b"{}"
    (traces / "r.run" / "inner").symlink_to(outside)  # a link inside an earlier attempt's folder
    with RunFolder(traces, "r.run") as folder:
        assert folder.files() == []
    assert sorted(os.listdir(outside)) == ["precious.txt"]


def test_files_read_back_are_regular_single_link_and_bounded_before_reading(tmp_path):
    traces = tmp_path / "traces"
    traces.mkdir()
    ledger = tmp_path / "ledger.jsonl"
    ledger.write_text('{"record": "collect/run/v1"}\n')
    with RunFolder(traces, "r.run") as folder:
        assert folder.read("metrics.json", 100, "metrics file") is None and read_marks_in(folder) == []
        (folder.path / "metrics.json").symlink_to(ledger)
        with pytest.raises(RunFailure, match="metrics.json is a symbolic link; never followed"):
            folder.read("metrics.json", 1 << 20, "metrics file")
        os.unlink(folder.path / "metrics.json")
        os.link(ledger, folder.path / "metrics.json")
        with pytest.raises(RunFailure, match="has 2 names"):
            folder.read("metrics.json", 1 << 20, "metrics file")
        with pytest.raises(RunFailure, match=r"'metrics.json', a file with 2 names"):
            folder.files()
        os.unlink(folder.path / "metrics.json")
        with open(folder.path / "metrics.json", "wb") as fh:  # 6 GiB, sparse
            fh.truncate(6 << 30)
        with pytest.raises(RunFailure, match=f"is {6 << 30} bytes, more than the {1 << 20} allowed; not read"):
            folder.read("metrics.json", 1 << 20, "metrics file")
        os.unlink(folder.path / "metrics.json")
        with open(folder.path / "marks.txt", "wb") as fh:  # 5 GiB, sparse: refused by its size, never read
            fh.truncate(5 << 30)
        with pytest.raises(
            RunFailure, match=f"marks.txt is {5 << 30} bytes, more than the {64 << 20} allowed; not read"
        ):
            read_marks_in(folder)
        os.unlink(folder.path / "marks.txt")
        os.mkfifo(folder.path / "marks.txt")  # never blocks the reader
        with pytest.raises(RunFailure, match="not a regular file"):
            read_marks_in(folder)
        assert folder.read_at("marks.txt", 0, 10) == b""
        with pytest.raises(RunFailure, match="'marks.txt', not a regular file"):
            folder.files()
    assert ledger.read_text() == '{"record": "collect/run/v1"}\n'


def test_a_replaced_folder_or_a_replaced_toolkit_file_is_a_run_failure(tmp_path):
    traces, elsewhere = tmp_path / "traces", tmp_path / "elsewhere"
    traces.mkdir()
    elsewhere.mkdir()
    with RunFolder(traces, "r.run") as folder:
        fd = folder.create("stdout.txt")
        folder.check_intact()
        os.unlink(folder.path / "stdout.txt")
        (folder.path / "stdout.txt").symlink_to(tmp_path / "victim.txt")
        RunFolder.rewrite(fd, b"program output")  # goes to the toolkit's own file, not through the link
        os.close(fd)
        assert not (tmp_path / "victim.txt").exists()
        with pytest.raises(RunFailure, match="stdout.txt in the run's folder was replaced by the program"):
            folder.check_intact()
    with RunFolder(traces, "r.run") as folder:
        os.rename(folder.path, tmp_path / "moved")
        (traces / "r.run").symlink_to(elsewhere)
        with pytest.raises(RunFailure, match="was replaced \\(now a symbolic link\\)"):
            folder.check_intact()
        folder.write_new("late.txt", b"x")  # written in the folder held open, wherever it was moved
    assert os.listdir(elsewhere) == [] and (tmp_path / "moved" / "late.txt").read_bytes() == b"x"


# ---------------------------------------------------------------- reasons in words, never Python's


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ('{"x": ' + "1" * 4301 + "}", "an integer with more than 4300 digits"),
        ('{"x": ' + "9" * 400 + "}", "metric x = <a 400-digit integer> is beyond the range of a double"),
        ('{"x": -' + "9" * 400 + "}", "metric x = <a 400-digit integer> is beyond the range of a double"),
        ('{"x": 1e400}', "metric x = 1e400 is beyond the range of a double"),
        ("[" * 100_000 + "]" * 100_000, "nested too deeply (arrays or objects deeper than about"),
        ('{"x": "' + "a" * 10_000 + '"}', "is not a number"),
    ],
)
def test_metrics_python_cannot_hold_fail_the_run_in_words(text, words):
    with pytest.raises(RunFailure) as err:
        parse_metrics(text.encode(), ["x"])
    message = str(err.value)
    assert words in message and not any(name in message for name in INTERNAL_NAMES), message
    assert len(message) < 400  # a 10 000-character value is shown shortened


def test_the_codec_refuses_what_python_cannot_hold_as_a_format_error():
    for text, words in [("1" * 4301, "more than 4300 digits"), ("[" * 100_000, "nested too deeply")]:
        with pytest.raises(JSONFormatError, match=words):
            loads(text)


def test_mark_times_past_64_bits_are_refused_in_words():
    for line, words in [
        (f"begin a {1 << 63}", "past the 64-bit range"),
        ("begin a " + "1" * 5000, "more than 19 digits"),
    ]:
        with pytest.raises(RunFailure, match=words):
            parse_mark(line, 1)


def test_a_run_failure_naming_a_file_shows_its_control_characters_escaped(tmp_path):
    traces = tmp_path / "traces"
    traces.mkdir()
    with RunFolder(traces, "r.run") as folder:
        os.symlink("x", folder.path / "\x1b[31mred")
        with pytest.raises(RunFailure) as err:
            folder.files()
    assert "\x1b" not in str(err.value) and "\\x1b[31mred" in str(err.value)


def test_cli_error_messages_escape_control_characters(capsys):
    from prereg.errors import InputError
    from prereg_toolkit_cli.kit import ArgumentParser, run_main

    def build() -> ArgumentParser:
        parser = ArgumentParser(prog="x")

        def handler(args: object) -> int:
            raise InputError("bad file \x1b[31mred\x1b[0m\x9b2J\tand\nmore")

        parser.set_defaults(handler=handler)
        return parser

    assert run_main("x", build, []) == 2
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\x9b" not in err and "\\x1b[31mred" in err and "\tand\nmore" in err

    def build_int() -> ArgumentParser:
        parser = ArgumentParser(prog="x")
        parser.add_argument("--jobs", type=int)
        return parser

    with pytest.raises(SystemExit) as exit_:  # a usage error quoting an argument as it was given
        run_main("x", build_int, ["--jobs", "3", "\x1b[2Jextra"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "\x1b" not in err and "unrecognized arguments: \\x1b[2Jextra" in err


# ---------------------------------------------------------------- a program tampering with its folder

TAMPER = r"""
import json, os, sys
run = json.load(open(os.environ["PREREG_RUN"]))
folder = os.environ["PREREG_RUN_DIR"]
runs = os.path.dirname(os.path.dirname(folder))
mode = run["params"]["mode"] if run["params"]["site"] == 1 and not os.path.exists(os.environ["CALM"]) else "ok"
json.dump({"value": run["params"]["offset"] + run["seed"] % 7}, open(os.environ["PREREG_METRICS"], "w"))
print("hello from", run["run_id"])
out = os.path.join(folder, "stdout.txt")
if mode.endswith(("_ledger", "_outside")) and os.path.lexists(out):
    os.unlink(out)
if mode == "symlink_ledger":
    os.symlink("../../ledger.jsonl", out)
elif mode == "hardlink_ledger":
    os.link(os.path.join(runs, "ledger.jsonl"), out)
elif mode == "symlink_outside":
    os.symlink(os.environ["VICTIM"], out)
elif mode == "metrics_link":
    os.unlink(os.environ["PREREG_METRICS"]); os.symlink(os.environ["VICTIM"], os.environ["PREREG_METRICS"])
elif mode == "folder_link":
    os.rename(folder, folder + ".moved"); os.symlink(os.path.dirname(os.environ["VICTIM"]), folder)
"""

PLAN = """schema: prereg/v1
study: tamper
title: Tamper
hypothesis: Arm b's value is higher.
experiment:
  collector: command
  params:
    argv: [{python}, prog.py]
    timeout_s: 60
    code: [prog.py]
    mode: {mode}
arms:
  a: {{offset: 0.0}}
  b: {{offset: 1.0}}
strata:
  factors:
    site: [0, 1]
  replicates: 1
metrics:
  value: {{unit: unit, better: higher, evidence: measured, deterministic: true}}
gates:
  - {{id: offset, metric: value, contrast: b - a, method: t, confidence: 0.9, pass_if: lower > 0.5}}
decision: {{claim: b is higher}}
"""


@pytest.mark.slow  # six runs of a program (four, then a resume of two): about 1 s
@pytest.mark.parametrize(
    ("mode", "words"),
    [
        ("symlink_ledger", "stdout.txt in the run's folder was replaced by the program (now a symbolic link)"),
        ("hardlink_ledger", "stdout.txt in the run's folder was replaced by the program (now another file)"),
        ("symlink_outside", "stdout.txt in the run's folder was replaced by the program (now a symbolic link)"),
        ("metrics_link", "metrics file metrics.json is a symbolic link; never followed"),
        ("folder_link", "was replaced (now a symbolic link) while the program ran"),
    ],
)
def test_a_program_cannot_make_the_toolkit_write_or_read_through_its_folder(tmp_path, monkeypatch, mode, words):
    (tmp_path / "prog.py").write_text(TAMPER)
    victim = tmp_path / "victim" / "precious.txt"
    victim.parent.mkdir()
    victim.write_text("the user's data\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("VICTIM", str(victim))
    monkeypatch.setenv("CALM", str(tmp_path / "calm"))
    plan, sha = loaded(PLAN.format(python=json.dumps(sys.executable), mode=mode))
    runs = tmp_path / "runs"
    summary = engine.run_plan(plan, sha, runs)
    assert (summary.completed, summary.failed) == (2, 2)  # the tampering runs fail; the others go on
    ledger = read_ledger(runs)
    assert verify_chain(ledger).status == "intact" and not ledger.problems
    failed = [r for r in ledger.records if r.status == "failed"]
    assert {r.stratum["site"] for r in failed} == {1}
    for r in failed:
        assert words in (r.error or ""), r.error
    assert victim.read_text() == "the user's data\n" and os.listdir(victim.parent) == ["precious.txt"]
    (tmp_path / "calm").write_text("")  # the program behaves now: a resume redoes the failed runs
    again = engine.run_plan(plan, sha, runs)
    assert (again.completed, again.failed, again.skipped) == (2, 0, 2)
    ledger = read_ledger(runs)
    assert verify_chain(ledger).status == "intact"
    assert sorted(r.status for r in ledger.records) == ["complete"] * 4 + ["failed"] * 2


# ---------------------------------------------------------------- the program's whole tree


GRANDCHILD = r"""
import os, sys, time
pids = os.environ["PIDS"]
if os.fork() == 0:  # a child; with DAEMON it leaves the session and its parent exits (a daemon)
    if os.environ.get("DAEMON"):
        os.setsid()
        if os.fork() != 0:
            os._exit(0)
    with open(pids + ".tmp", "w") as f:
        f.write(f"{os.getppid()} {os.getpid()}")
    os.rename(pids + ".tmp", pids)
    time.sleep(300)
    os._exit(0)
while not os.path.exists(pids):
    time.sleep(0.01)
if os.environ.get("DAEMON"):
    sys.exit(0)
time.sleep(300)
"""


def _wait_for(condition, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s  # generous: only catches a hang
    while not condition():
        assert time.monotonic() < deadline, "the condition never held"
        time.sleep(0.02)


def test_a_daemon_that_leaves_the_programs_session_is_killed_when_the_program_ends(tmp_path):
    (tmp_path / "prog.py").write_text(GRANDCHILD)
    pids = tmp_path / "pids"
    env = {**os.environ, "PIDS": str(pids), "DAEMON": "1"}
    finished = run_program([sys.executable, "prog.py"], str(tmp_path), env, 120)
    assert finished.returncode == 0 and not finished.timed_out
    _, daemon = (int(x) for x in pids.read_text().split())
    _wait_for(lambda: not alive(daemon))


def test_killing_the_supervisor_leaves_no_grandchild(tmp_path):
    (tmp_path / "prog.py").write_text(GRANDCHILD)
    pids = tmp_path / "pids"
    env = {**os.environ, "PIDS": str(pids)}
    result: list[Finished] = []
    thread = threading.Thread(
        target=lambda: result.append(run_program([sys.executable, "prog.py"], str(tmp_path), env, 120)), daemon=True
    )
    thread.start()
    _wait_for(pids.exists)
    program, grandchild = (int(x) for x in pids.read_text().split())
    supervisor = int(Path(f"/proc/{program}/stat").read_text().rsplit(")", 1)[1].split()[1])
    assert alive(grandchild) and alive(supervisor)
    os.kill(supervisor, signal.SIGKILL)
    thread.join(60)
    assert not thread.is_alive() and result and result[0].returncode == -signal.SIGKILL
    _wait_for(lambda: not alive(program) and not alive(grandchild))


def test_collect_echoes_a_path_s_control_characters_escaped(tmp_path, capsys):
    """What ``collect`` says before and after a refusal echoes the paths it was given, escaped."""
    from prereg_toolkit_cli.collect import main as collect_main

    lock = tmp_path / "\x1b[2Jplan.lock.json"
    assert collect_main(["run", str(lock), "--out", str(tmp_path / "runs")]) == 2
    err = capsys.readouterr().err
    assert "verifying" in err and "\\x1b[2Jplan" in err and "\x1b" not in err
