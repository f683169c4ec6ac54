"""The column-wise import path (collect.importing.columns) against the row-by-row path it replaces at scale.

For generated tables -- numbers in every spelling, NaN and infinities, big integers, floats with
17 digits, unicode and escapes, levels of every type, optional columns present or not, repeated
rows, rows already in the ledger -- both paths must give the same result: the same ledger bytes
(records, hashes, chain), the same records returned and rows skipped, or the same refusal word for
word. The pieces the fast path is built from are checked against the canonical encoder directly.
"""

from __future__ import annotations

import csv
import hashlib
import json
import math
import tempfile
from contextlib import nullcontext
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import collect.importing.importer as importer
from collect.engine.runs import stratum_seed
from collect.importing.columns import Declined, Table, prepare, seal
from collect.importing.rows import CellError, level_cell, parse_number, replicate_cell
from collect.importing.text import float_text, rows_of_objects, string_text, value_text
from collect.ledger.hashing import FIELD, chain_parts, chain_runs, chained, sealed_line
from collect.ledger.store import GENESIS, Ledger, read_ledger, verify_chain
from prereg.api import load_lock
from prereg.jsoncodec import canonical_bytes, oversized_number
from tests.conftest import REPO
from tests.helpers import frozen_shared

PLAN = """schema: prereg/v1
study: fast-import
title: The fast import path, against the row path
hypothesis: Arm B_2 is noninferior to arm a.
arms:
  a: {policy: a}
  B_2: {policy: b}
strata:
  factors:
    site: [0, 1, "x", "ü€\\"\\\\", true, 2.5, "1"]
    Zone: ["north", "süd"]
  replicates: 3
metrics:
  nll: {unit: nats, better: lower, evidence: modeled}
  Flop: {unit: FLOP, better: lower, evidence: modeled}
  _energy: {unit: J, better: lower, evidence: modeled, signal: energy_counter}
  e_total: {unit: J, better: lower, evidence: modeled, signal: power_meter}
  e_ckpt: {unit: J, better: lower, evidence: modeled, signal: power_meter}
gates:
  - {id: nll_t, metric: nll, contrast: B_2 - a, method: t, confidence: 0.90, pass_if: upper < 0.05}
decision:
  claim: B_2 is noninferior to a.
  require: all
  multiplicity: none
"""
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.fixture(scope="module")
def plan(tmp_path_factory):
    lock = load_lock(frozen_shared(tmp_path_factory.mktemp("plan"), "fast.yaml", PLAN))
    return lock.plan, lock.plan_sha256


# -- cells ---------------------------------------------------------------------------------------

number_text = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.floats(allow_nan=False, allow_infinity=False).map(lambda f: f"{f:.17g}"),
    st.integers(-(10**40), 10**40).map(str),
    st.sampled_from(
        [
            "",
            " ",
            "nan",
            "NaN",
            "-nan",
            "inf",
            "-inf",
            "+inf",
            "Infinity",
            "-Infinity",
            "INF",
            "1_000",
            " 2.50 ",
            "1e308",
            "1e309",
            "-0",
            "-0.0",
            "0.1",
            "1E-320",
            "x",
            "１２",
            "1,5",
            "0x10",
            "True",
        ]
    ),
)
DERIVED = "<derived>"  # a seed cell to fill with the plan's derived seed of its row's cell (with_seeds)
CSV_CELLS: dict[str, st.SearchStrategy[str]] = {
    "arm": st.sampled_from(["a", "B_2", " a ", "B_2 ", "b"]),
    "site": st.sampled_from(["0", "1", "x", 'ü€"\\', "true", "True", "2.5", "1.0", " 0", "3"]),
    "Zone": st.sampled_from(["north", "süd", "south"]),
    "replicate": st.sampled_from(["", "0", "1", "2", "2.0", "3", "-1", "1e0"]),
    "status": st.sampled_from(["", "complete", "failed", " failed", "done"]),
    "nll": number_text,
    "Flop": number_text,
    "_energy": number_text,
    "energy_counter.updates": st.sampled_from(["", "0", "5", "5.0", "-1", "1e3", "2.5"]),
    "energy_counter.bound": number_text,
    "energy_counter.effective_period_ms": st.sampled_from(["", "100", "99.99999999999999", "0", "-1"]),
    "energy_counter.evidence": st.sampled_from(["", "measured", "modeled", " modeled ", "prior", "bogus"]),
    "e_total.bound": number_text,
    "e_ckpt.bound": st.sampled_from(["", "0", "600", "-1", "x", "inf"]),
    "power_meter.bound": st.sampled_from(["", "60"]),
    "power_meter.updates": st.sampled_from(["", "5"]),
    "run_id": st.sampled_from(["", "", "r1", "r2", "x.y_z-9", " r3 ", "run-ü", "-bad"]),
    "seed": st.sampled_from(["", "7", "7.0", "7.5", "-3", "12345678901234567890123", DERIVED]),
    "started_at": st.sampled_from(["", "2026-01-01T00:00:00Z", "2026-01-01T00:00:00+02:00", "2026-01-01", "soon"]),
    "finished_at": st.text(max_size=8),
}
REQUIRED = ["arm", "site", "Zone"]
OPTIONAL = [c for c in CSV_CELLS if c not in REQUIRED]


@st.composite
def csv_tables(draw: Any) -> list[dict[str, str]]:
    columns = REQUIRED + draw(st.lists(st.sampled_from(OPTIONAL), unique=True))
    n = draw(st.integers(1, 8))
    return [{c: draw(CSV_CELLS[c]) for c in columns} for _ in range(n)]


json_cell = st.one_of(st.none(), st.booleans(), st.integers(-(10**30), 10**30), st.floats(), st.text(max_size=6))


@st.composite
def json_tables(draw: Any) -> list[dict[str, Any]]:
    rows = draw(csv_tables())
    out = []
    for row in rows:  # typed JSON values in place of some cells (levels, numbers, anything)
        typed = {
            c: draw(st.one_of(st.just(v), json_cell, st.sampled_from([0, 1, True, 2.5, 1.0, 7, -0.0])))
            for c, v in row.items()
        }
        out.append(typed)
    return out


@st.composite
def valid_tables(draw: Any) -> list[dict[str, str]]:
    """Tables both paths import: distinct cells, valid values (numbers in every spelling)."""
    cells = draw(
        st.lists(
            st.tuples(
                st.sampled_from(["a", "B_2"]),
                st.sampled_from(["0", "1", "x", 'ü€"\\', "true", "2.5"]),
                st.sampled_from(["north", "süd"]),
                st.sampled_from(["0", "1", "2"]),
            ),
            min_size=1,
            max_size=12,
            unique=True,
        )
    )
    optional = draw(
        st.lists(
            st.sampled_from(
                [
                    "replicate",
                    "nll",
                    "Flop",
                    "_energy",
                    "energy_counter.updates",
                    "energy_counter.bound",
                    "energy_counter.evidence",
                    "seed",
                    "started_at",
                    "finished_at",
                    "status",
                    "e_total.bound",
                    "e_ckpt.bound",
                    "power_meter.updates",
                ]
            ),
            unique=True,
        )
    )
    good_number = number_text.filter(lambda t: t.strip() == "" or _is_number(t))
    valid = {
        "nll": good_number,
        "Flop": good_number,
        "_energy": good_number,
        "energy_counter.updates": st.sampled_from(["", "0", "5", "5.0", "1e3"]),
        "energy_counter.bound": st.sampled_from(["", "0.5", "1e-9", "12345.678901234567"]),
        "energy_counter.evidence": st.sampled_from(["", "measured", "modeled"]),
        "e_total.bound": st.sampled_from(["", "0", "60", "1e-9", "12345.678901234567"]),
        "e_ckpt.bound": st.sampled_from(["", "600", "0.5"]),
        "power_meter.updates": st.sampled_from(["", "5"]),
        "seed": st.sampled_from(["", DERIVED]),
        "started_at": st.sampled_from(["", "2026-01-01T00:00:00Z"]),
        "finished_at": st.text(max_size=8),
        "status": st.sampled_from(["", "complete", "failed"]),
    }
    rows = []
    for arm, site, zone, rep in cells:
        row = {"arm": arm, "site": site, "Zone": zone}
        for c in optional:
            row[c] = rep if c == "replicate" else draw(valid[c])
        if "replicate" not in optional and rep != "0":
            continue  # without the column every row is replicate 0
        rows.append(row)
    return rows or [{"arm": "a", "site": "0", "Zone": "north"}]


@st.composite
def valid_json_tables(draw: Any) -> list[dict[str, Any]]:
    """Valid tables of typed JSON values: typed levels, numbers of every kind, given run ids."""
    levels = {"0": 0, "true": True, "2.5": 2.5, "x": "x"}
    rows = draw(valid_tables())
    number = st.one_of(st.floats(), st.integers(-(10**30), 10**30), st.none())
    out = []
    for i, row in enumerate(rows):
        typed: dict[str, Any] = dict(row)
        typed["site"] = levels.get(row["site"], row["site"])
        for c in ("nll", "Flop", "_energy"):
            if c in row:
                typed[c] = draw(number)
        if "seed" in row:
            typed["seed"] = draw(st.sampled_from([None, DERIVED]))
        if "replicate" in row:
            typed["replicate"] = int(row["replicate"])
        typed["run_id"] = draw(st.sampled_from(["", None, f"given-{i}", f" r.{i}_x "]))
        out.append(typed)
    return out


def _is_number(text: str) -> bool:
    """A cell the import reads as a number: ``float`` accepts it and it is no overflow (``1e309``)."""
    try:
        float(text)
    except ValueError:
        return False
    return oversized_number(text) is None


# -- both paths ----------------------------------------------------------------------------------


def _write(rows: list[dict[str, Any]], folder: Path, kind: str) -> Path:
    if kind == "csv":
        path = folder / "t.csv"
        with path.open("w", newline="", encoding="utf-8") as fh:
            writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
    else:
        path = folder / "t.jsonl"
        path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


def _outcome(table: Path, plan: Any, runs: Path, fast: bool, only_fast: bool = False) -> tuple[Any, ...]:
    """What one import did: ("ok", records, skipped, ledger bytes) or ("refused", type, message).
    ``only_fast``: the row path must not be taken."""
    patch = nullcontext() if fast else mock.patch.object(importer, "_append_fast", return_value=None)
    rows = mock.patch.object(importer, "build_records", side_effect=AssertionError("the row path was taken"))
    skipped: list[str] = []
    with patch, rows if only_fast else nullcontext():
        try:
            records = importer.import_table(table, plan[0], plan[1], runs, skipped, lock_seal="5e" * 32)
        except AssertionError:
            raise
        except Exception as err:  # noqa: BLE001 - the refusal is what is compared
            return ("refused", type(err).__name__, str(err))
    ledger = runs / "ledger.jsonl"
    return ("ok", records, skipped, ledger.read_bytes() if ledger.exists() else b"")


def with_seeds(rows: list[dict[str, Any]], plan: Any, kind: str) -> list[dict[str, Any]]:
    """``rows`` with each ``DERIVED`` seed cell replaced by the seed ``collect run`` derives for the
    row's cell (text in a CSV table, a number in JSON Lines; a row whose cell does not fit the plan
    gets 1, which cannot match)."""
    out = []
    for row in rows:
        if row.get("seed") == DERIVED:
            try:
                stratum = {f: level_cell(row.get(f), f, plan[0]) for f in plan[0].strata.factors}
                seed = stratum_seed(stratum, replicate_cell(row.get("replicate"), plan[0]))
            except CellError:
                seed = 1
            row = {**row, "seed": str(seed) if kind == "csv" else seed}
        out.append(row)
    return out


def _same_both_ways(
    rows: list[dict[str, Any]], plan: Any, kind: str, already: int = 0, only_fast: bool = False
) -> tuple[Any, ...]:
    """Import ``rows`` both ways (after the first ``already`` rows went in row by row); the outcome.
    ``only_fast``: the fast way must take the table (not hand it to the row path). ``DERIVED`` seed
    cells are filled in first (``with_seeds``)."""
    rows = with_seeds(rows, plan, kind)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        outcomes = []
        for fast in (True, False):
            runs = folder / ("fast" if fast else "slow")
            if already:
                _outcome(_write(rows[:already], folder, kind), plan, runs, fast=False)
            outcomes.append(_outcome(_write(rows, folder, kind), plan, runs, fast, only_fast and fast))
        assert outcomes[0] == outcomes[1]
        if outcomes[0][0] == "ok":
            assert verify_chain(read_ledger(folder / "fast")).ok
        return outcomes[0]


@pytest.mark.subprocess
@SETTINGS
@given(rows=csv_tables(), already=st.integers(0, 2))
def test_csv_tables_import_the_same_both_ways(plan, rows, already):
    _same_both_ways(rows, plan, "csv", already=min(already, len(rows) - 1))


@pytest.mark.subprocess
@SETTINGS
@given(rows=json_tables())
def test_jsonl_tables_import_the_same_both_ways(plan, rows):
    _same_both_ways(rows, plan, "jsonl")


@pytest.mark.subprocess
@SETTINGS
@given(rows=valid_tables(), already=st.integers(0, 3))
def test_valid_tables_take_the_fast_path_and_write_the_same_bytes(plan, rows, already):
    outcome = _same_both_ways(rows, plan, "csv", already=min(already, len(rows) - 1), only_fast=True)
    assert outcome[0] == "ok", outcome


@pytest.mark.subprocess
@SETTINGS
@given(rows=valid_json_tables())
def test_valid_jsonl_tables_take_the_fast_path_and_write_the_same_bytes(plan, rows):
    outcome = _same_both_ways(rows, plan, "jsonl", only_fast=True)
    assert outcome[0] == "ok", outcome


@pytest.mark.subprocess
def test_the_scale_benchmark_table_byte_for_byte(plan, tmp_path):
    """The table bench_scale.py imports (2 000 rows here): identical ledgers, and the fast path is taken."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_scale", REPO / "benchmarks" / "bench_scale.py")
    assert spec and spec.loader
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    plan_yaml, table = bench.write_study(tmp_path, 2000)
    lock = load_lock(frozen_shared(tmp_path, "scale.yaml", plan_yaml.read_text()))
    scale = (lock.plan, lock.plan_sha256)
    rows = importer.read_table(table)
    batch = prepare(Table.of_rows(rows), *scale, table.name, Ledger(path=tmp_path / "none"))
    assert len(batch.data) == 2000
    fast = _outcome(table, scale, tmp_path / "fast", fast=True, only_fast=True)
    slow = _outcome(table, scale, tmp_path / "slow", fast=False)
    assert fast[0] == "ok" and fast == slow
    again = _outcome(table, scale, tmp_path / "fast", fast=True, only_fast=True)  # all skipped, nothing written
    assert again[1] == [] and len(again[2]) == 2000 and again[3] == fast[3]


@pytest.mark.subprocess
def test_declines_rather_than_guess(plan):
    rows = [{"arm": "a", "site": "0", "Zone": "north", "energy_counter.bound": "inf"}]
    with pytest.raises(Declined):
        prepare(Table.of_rows(rows), *plan, "t.csv", Ledger(path=Path("x")))
    with pytest.raises(Declined):
        Table.of_rows([{"arm": "a"}, {"arm": "a", "site": "0"}])
    with pytest.raises(Declined):  # a repeated cell: the row path names it
        prepare(Table.of_rows([{"arm": "a", "site": "0", "Zone": "north"}] * 2), *plan, "t.csv", Ledger(path=Path("x")))


# -- the pieces ----------------------------------------------------------------------------------

json_values = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(10**30), 10**30),
        st.floats(allow_nan=False, allow_infinity=False),
        st.text(),
    ),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=6), inner, max_size=4)),
    max_leaves=12,
)


@pytest.mark.slow  # many generated cases or a reference library: the slow tier
@settings(max_examples=300, deadline=None)
@given(value=json_values)
def test_the_codec_is_json_dumps_with_the_canonical_settings(value):
    try:  # the reference: the standard library's encoder with the settings the formats document
        expected = json.dumps(
            value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
        ).encode()
    except (ValueError, UnicodeEncodeError) as err:  # a lone surrogate: both refuse it
        with pytest.raises(type(err)):
            canonical_bytes(value)
        return
    assert canonical_bytes(value) == expected and value_text(value).encode() == expected


@settings(max_examples=300, deadline=None)
@given(
    data=st.dictionaries(
        st.text(max_size=14).filter(lambda k: k not in (FIELD, "prev_sha256")), json_values, max_size=8
    ),
    prev=st.text(alphabet="0123456789abcdef", min_size=64, max_size=64),
)
@pytest.mark.slow  # many generated cases or a whole simulation: the slow tier
def test_sealing_from_item_runs_is_the_canonical_line_and_hash(data, prev):
    try:
        canonical_bytes(data)
    except (ValueError, UnicodeEncodeError):
        return
    full = {**data, "prev_sha256": prev}
    line, digest = sealed_line(full)
    assert digest == hashlib.sha256(canonical_bytes(full)).hexdigest()
    assert line == canonical_bytes({**full, FIELD: digest})
    assert chained(chain_parts(data), prev) == (line, digest)
    second = {**data, "x": 1}
    expected = [(line, digest), chained(chain_parts(second), digest)]
    assert list(chain_runs([chain_parts(data), chain_parts(second)], prev)) == expected


@settings(max_examples=300, deadline=None)
@given(value=st.one_of(st.floats(), st.sampled_from(["NaN", "Infinity", "-Infinity"]), st.none()), text=st.text())
def test_pieces_are_the_encoder_s_texts(value, text):
    stored = value if not isinstance(value, float) or math.isfinite(value) else "NaN"
    assert float_text(stored) == value_text(stored)
    assert string_text(text) == json.dumps(text, ensure_ascii=False)
    columns = {"b": ['"b":1', None], "a": ['"a":' + string_text(text), '"a":null'], "B": ['"B":true', '"B":[]']}
    assert rows_of_objects(2, columns) == [
        json.dumps({"b": 1, "a": text, "B": True}, sort_keys=True, separators=(",", ":"), ensure_ascii=False),
        json.dumps({"a": None, "B": []}, sort_keys=True, separators=(",", ":"), ensure_ascii=False),
    ]


@settings(max_examples=500, deadline=None)
@given(text=st.one_of(number_text, st.text(max_size=12)))
def test_float_of_a_text_cell_is_parse_number_when_it_accepts_it(text):
    try:
        fast = float(text)
    except ValueError:
        return
    if oversized_number(text) is not None:  # 1e309 is refused by name, never read as a silent infinity
        with pytest.raises(CellError, match="beyond the range of a double"):
            parse_number(text, "m")
        return
    slow = parse_number(text, "m")
    assert slow is not None and (repr(fast) == repr(slow) or (math.isnan(fast) and math.isnan(slow)))


@pytest.mark.subprocess
def test_seal_chains_from_the_head(plan):
    rows = [{"arm": "a", "site": "0", "Zone": "north"}, {"arm": "B_2", "site": "0", "Zone": "north"}]
    payload, records, head = seal(prepare(Table.of_rows(rows), *plan, "t.csv", Ledger(path=Path("x"))), GENESIS)
    lines = payload.splitlines()
    assert [r.prev_sha256 for r in records] == [GENESIS, records[0].record_sha256] and head == records[1].record_sha256
    assert [
        hashlib.sha256(canonical_bytes({k: v for k, v in json.loads(line).items() if k != FIELD})).hexdigest()
        for line in lines
    ] == [r.record_sha256 for r in records]


csv_text = st.lists(
    st.lists(st.sampled_from(["a", "b", "", " x ", '"q,1"', '"multi\nline"', "1.0", "é", '"', "\r"]), max_size=4),
    max_size=6,
).map(lambda lines: "\n".join(",".join(cells) for cells in lines))


@settings(max_examples=300, deadline=None)
@given(text=csv_text, bom=st.booleans())
def test_csv_columns_are_read_tables_rows(text, bom):
    """The column reader gives read_table's rows exactly, or stands aside (None) for read_table to read it."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "t.csv"
        path.write_bytes(("\ufeff" if bom else "").encode() + text.encode())
        try:
            rows: Any = importer.read_table(path)
        except Exception as err:  # noqa: BLE001 - what read_table refuses, the column reader leaves to it
            rows = err
        try:
            table = importer._csv_columns(path)
        except Exception as err:  # noqa: BLE001
            assert type(err) is type(rows) and str(err) == str(rows)
            return
        if table is not None:
            assert table.rows() == rows


@pytest.mark.subprocess
def test_both_paths_carry_the_look_ledger_head_the_same_way(plan, tmp_path):
    """A runs folder that already holds looks: each record of either path carries the look ledger's head
    and count (evidence that those looks existed), in the same bytes."""
    seen = ("ab" * 32, 2)
    rows = [{"arm": arm, "site": "0", "Zone": "north", "nll": "0.5"} for arm in ("a", "B_2")]
    with (
        mock.patch.object(importer, "looks_evidence", return_value=seen),
        mock.patch("collect.ledger.store.looks_evidence", return_value=seen),
    ):
        fast = _outcome(_write(rows, tmp_path, "csv"), plan, tmp_path / "fast", fast=True, only_fast=True)
        slow = _outcome(_write(rows, tmp_path, "csv"), plan, tmp_path / "slow", fast=False)
    assert fast[0] == "ok" and fast == slow
    stored = [json.loads(line) for line in fast[3].splitlines()]
    assert [(r["looks_head"], r["looks_count"]) for r in stored] == [seen, seen]
    assert verify_chain(read_ledger(tmp_path / "fast")).ok
