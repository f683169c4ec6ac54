"""The strict YAML loader: what PyYAML's safe_load accepts but a plan must not."""

from __future__ import annotations

import pytest

from prereg.yamlsafe import MAX_BYTES, YamlError, load_yaml


def load(text: str):
    return load_yaml(text.encode()).data


def error(text: str | bytes) -> YamlError:
    with pytest.raises(YamlError) as info:
        load_yaml(text if isinstance(text, bytes) else text.encode())
    return info.value


def test_yaml_12_core_scalars():
    data = load("a: yes\nb: no\nc: on\nd: 1e-3\ne: 1:20\nf: 0777\ng: true\nh: ~\ni: 0x1F\nj: -2.5\nk: '3'\n")
    assert data == {
        "a": "yes",
        "b": "no",
        "c": "on",
        "d": 0.001,
        "e": "1:20",
        "f": 777,
        "g": True,
        "h": None,
        "i": 31,
        "j": -2.5,
        "k": "3",
    }
    assert isinstance(data["f"], int) and isinstance(data["d"], float)


def test_duplicate_key_refused_with_its_line():
    err = error("a: 1\nb:\n  c: 1\n  c: 2\n")
    assert "duplicate key 'c'" in err.message
    assert (err.line, err.column) == (4, 3)


@pytest.mark.parametrize(
    "text, words",
    [
        ("a: &x 1\nb: 2\n", "anchors"),
        ("a: &x [1]\nb: *x\n", "anchors"),
        ("b: *x\n", "alias"),
        ("a: !!python/object/apply:os.system ['echo hi']\n", "tags"),
        ("a: !!str 1\n", "tags"),
        ("a: !custom 1\n", "tags"),
        ("a: .inf\n", "non-finite"),
        ("a: -.Inf\n", "non-finite"),
        ("a: .nan\n", "non-finite"),
        ("a: 1\n---\nb: 2\n", "another document"),
        ("a: [1, 2\n", "invalid YAML"),
        ("? [1, 2]\n: x\n", "plain scalars"),
    ],
)
def test_refusals(text, words):
    assert words in error(text).message


def test_alias_bomb_refused_before_expansion():
    bomb = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n" for i in range(9)
    )
    assert "anchors" in error(bomb).message


def test_nesting_bounded():
    assert "nesting" in error("[" * 200 + "]" * 200).message


def test_size_bounded():
    assert "under" in error(b"a: 1\n" * (MAX_BYTES // 5 + 1)).message


@pytest.mark.parametrize(
    "raw, words",
    [(b"", "empty"), (b"   \n# only a comment\n", "empty"), (b"\xff\xfe\x00a", "NUL"), (b"\xc3\x28: 1", "UTF-8")],
)
def test_junk(raw, words):
    assert words in error(raw).message


def test_positions_are_one_based_and_cover_keys():
    loaded = load_yaml(b"top:\n  - id: a\n    x: [1, 2]\n")
    assert loaded.positions[("top", 0, "x", 1)] == (3, 12)
    assert loaded.positions[("top", 0, "id")] == (2, 9)
    assert loaded.position(("top", 0, "missing", "deeper")) == (2, 5)
