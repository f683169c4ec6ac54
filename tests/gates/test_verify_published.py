"""`gates verify --published SEAL [--head HASH] [--looks-head HASH]`: a reviewer holds the lock and the
runs to what the author published, and any mismatch is exit 3 before anything is re-evaluated."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import gates
from collect.api import ledger_head, run_plan
from collect.ledger.looks import read_looks
from gates.integrity import LooksTampered
from gates.verify import verify_evaluation
from prereg.api import Lock
from prereg.lock_seal import lock_seal
from prereg_toolkit_cli.gates import main
from tests.helpers.looks import frozen, plan_text, run_strata


def _study(tmp_path: Path, margin: str, name: str) -> tuple[Lock, Path]:
    """The unmonitored looks-test plan with gate margin ``margin``, frozen as ``name``, run and
    evaluated into ``tmp_path/name-runs`` (evaluation.json there)."""
    lock = frozen(tmp_path, plan_text(margin=margin).split("monitoring:")[0], name=name)
    runs = tmp_path / f"{name}-runs"
    run_plan(lock, runs)
    gates.evaluate(lock, runs, out=runs / "evaluation.json")
    return lock, runs


def _verify(runs: Path, lock: Lock, *extra: str) -> int:
    return main(["verify", str(runs / "evaluation.json"), str(lock.path), str(runs), *extra])


def test_a_refrozen_lock_with_a_looser_margin_is_refused_with_the_published_seal(tmp_path, capsys):
    original, _ = _study(tmp_path, "1.0", "study")
    published = lock_seal(original.data)  # what `prereg freeze` printed for the author to publish
    # the forgery: the plan frozen again with a loosened margin, the runs collected (chained) under it,
    # the evaluation regenerated -- consistent with itself, so a re-evaluation alone re-verifies it
    forged, runs = _study(tmp_path, "2.0", "forged")
    assert _verify(runs, forged) == 0 and "re-verified" in capsys.readouterr().out
    assert _verify(runs, forged, "--published", published) == 3
    err = capsys.readouterr().err
    assert "does not match the published seal" in err and "nothing was re-evaluated" in err
    from gates.verify import Published  # the library call behind it

    ev = gates.read_evaluation(runs / "evaluation.json")
    result = verify_evaluation(ev, forged.path, runs, Published(seal=published))
    assert not result.ok and result.unpublished


def test_the_genuine_study_matches_everything_published(tmp_path, capsys):
    lock, runs = _study(tmp_path, "1.0", "study")
    head = ledger_head(runs)
    assert _verify(runs, lock, "--published", lock_seal(lock.data), "--head", head, "--json") == 0
    out = json.loads(capsys.readouterr().out)
    assert out["ok"] and "matches the published seal" in out["published"]


def test_a_ledger_head_other_than_the_published_one_is_refused(tmp_path, capsys):
    lock, runs = _study(tmp_path, "1.0", "study")
    seal = lock_seal(lock.data)
    assert _verify(runs, lock, "--published", seal, "--head", "ab" * 32) == 3
    assert "the run ledger's head is" in capsys.readouterr().err


def test_a_look_ledger_head_other_than_the_published_one_is_refused(tmp_path, capsys):
    lock = frozen(tmp_path)
    runs = tmp_path / "runs"
    run_strata(lock, runs, 4)
    gates.evaluate(lock, runs)
    ev = gates.evaluate(lock, runs, out=runs / "evaluation.json")  # the look evaluated twice: two look records
    seal, head, looks_head = lock_seal(lock.data), ledger_head(runs), ev.monitoring.looks_head
    assert looks_head == read_looks(runs).head and ev.monitoring.sequence == 2
    assert _verify(runs, lock, "--published", seal, "--head", head, "--looks-head", looks_head) == 0
    capsys.readouterr()
    # both looks erased together with the evaluation (no run record saw them), and the look taken once more
    (runs / "looks.jsonl").unlink()
    (runs / "evaluation.json").unlink()
    gates.evaluate(lock, runs, out=runs / "evaluation.json")
    assert _verify(runs, lock, "--published", seal, "--head", head) == 0  # the one gap the published head closes
    assert _verify(runs, lock, "--published", seal, "--head", head, "--looks-head", looks_head) == 3
    assert "the look ledger's head is" in capsys.readouterr().err


def test_a_forged_looks_head_in_the_artifact_does_not_re_verify(tmp_path):
    from gates.artifact import seal_hash

    lock = frozen(tmp_path)
    runs = tmp_path / "runs"
    run_strata(lock, runs, 4)
    gates.evaluate(lock, runs, out=runs / "evaluation.json")
    data = json.loads((runs / "evaluation.json").read_text())
    data["monitoring"]["looks_head"] = "cd" * 32
    data.pop("seal_sha256")
    data["seal_sha256"] = seal_hash(data)
    path = tmp_path / "forged.json"  # beside the runs, not in them
    path.write_text(json.dumps(data))
    result = verify_evaluation(gates.read_evaluation(path), lock.path, runs)
    assert not result.ok and any("monitoring.looks_head" in d for d in result.differences)
    (runs / "evaluation.json").write_text(json.dumps(data))  # in the runs folder it names a look never taken
    with pytest.raises(LooksTampered, match="names look ledger head cdcdcdcdcdcd"):
        verify_evaluation(gates.read_evaluation(runs / "evaluation.json"), lock.path, runs)


@pytest.mark.parametrize("option", ["--published", "--head", "--looks-head"])
def test_a_malformed_published_hash_is_exit_2(tmp_path, capsys, option):
    lock, runs = _study(tmp_path, "1.0", "study")
    assert _verify(runs, lock, option, "not-a-hash") == 2
    err = capsys.readouterr().err
    assert "64 hexadecimal digits" in err and "Traceback" not in err
