"""clean_model: its one-scan shortcut returns the model only when the walk would change nothing."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from reports.words.safe_text import clean_model, clean_tree


class _Doc(BaseModel):
    title: str
    notes: list[str] = []
    extra: dict[str, str] = {}


@pytest.mark.parametrize(
    "text",
    [
        "plain",
        "tab\tand\nnewline",
        "caf\u00e9 \u2014 ok",
        "back\\slash r",
        "esc\x1b[2K",
        "cr\rline",
        "bs\bx",
        "ff\fx",
        "nul\x00",
        "del\x7f",
        "c1\x9b",
        "bidi\u202e",
        "bom\ufeff",
        "ls\u2028",
    ],
)
def test_clean_model_equals_the_full_walk(text: str) -> None:
    for doc in (_Doc(title=text), _Doc(title="t", notes=["a", text]), _Doc(title="t", extra={text: "v"})):
        walked = _Doc.model_validate(clean_tree(doc.model_dump(by_alias=True)))
        assert clean_model(doc) == walked
        if walked == doc:  # nothing to escape: the model itself comes back
            assert clean_model(doc) is doc
