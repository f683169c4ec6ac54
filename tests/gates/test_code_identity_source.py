"""The code identity says whose Python and packages the ``command`` runs recorded: the program's own
interpreter (asked) or the collector's, with why; the reports' Code lines carry the sentence."""

from __future__ import annotations

import copy
from types import SimpleNamespace
from typing import Any

from collect.collectors.command.identity import ASKED
from gates import code_identity
from gates.code_identity import check_code_identity
from reports.words.provenance import code_identity_lines

NOT_ASKED = (
    "the collector's Python (the program's interpreter was not asked: /usr/bin/bash is not a Python "
    "interpreter or a Python script)"
)
COMMAND: dict[str, Any] = {
    "files_sha256": "1a2b" * 16,
    "python": {"version": "3.11.2", "implementation": "CPython"},
    "packages": {"numpy": None},
}


def _runs(*sources: str | None, interpreter: str = "/usr/bin/python3") -> list[SimpleNamespace]:
    runs = []
    for i, source in enumerate(sources):
        command = copy.deepcopy(COMMAND)
        if source is not None:
            command.update(source=source, interpreter=interpreter if source == ASKED else None)
        runs.append(SimpleNamespace(run_id=f"run-{i}", code={"collector": "command", "command": command}))
    return runs


PLAN = SimpleNamespace(code_identity=None)


def test_gates_reads_the_words_the_collector_records():
    assert code_identity.ASKED == ASKED


def test_runs_that_asked_their_interpreter_say_so_and_name_it():
    c = check_code_identity(PLAN, _runs(ASKED, ASKED))
    assert c.status == "same"
    assert c.notes == [
        "2 run(s) record the Python and packages of the program's own interpreter, asked (/usr/bin/python3)"
    ]
    lines = code_identity_lines(SimpleNamespace(code_identity=c))
    assert ("Code", c.notes[0], False) in lines


def test_runs_that_record_the_collectors_python_say_why():
    c = check_code_identity(PLAN, _runs(ASKED, NOT_ASKED))
    assert c.notes == [
        "1 run(s) record the Python and packages of the program's own interpreter, asked "
        "(/usr/bin/python3); 1 run(s) record the collector's Python and packages, which need not be "
        f"the program's (e.g. run-1: {NOT_ASKED})"
    ]


def test_records_that_do_not_say_give_no_note():
    assert check_code_identity(PLAN, _runs(None, None)).notes == []
