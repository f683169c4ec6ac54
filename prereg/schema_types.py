"""The building blocks every ``prereg/v1`` model uses: the strict base model and the field types.

Shared by :mod:`prereg.schema` (the plan) and :mod:`prereg.schema_invalidators` (its invalidators).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, StringConstraints

Identifier = Annotated[str, StringConstraints(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$", max_length=64)]
ItemId = Annotated[str, StringConstraints(pattern=r"^[A-Za-z][A-Za-z0-9_.-]*$", max_length=64)]


def _not_blank(text: str) -> str:
    if not text.strip():
        raise ValueError("is only white space: write the text (an empty reason, claim or title says nothing)")
    return text


#: free text (a title, a claim, a reason): at least one character that is not white space
Text = Annotated[str, StringConstraints(min_length=1, max_length=10_000), AfterValidator(_not_blank)]
Scalar = str | bool | int | float


def level_key(value: Scalar) -> str:
    """A type-aware key for a factor level (``1``, ``1.0``, ``"1"`` and ``true`` stay distinct):
    the type's name and the value's ``repr`` (injective for str, bool, int and float; in memory only)."""
    return f"{type(value).__name__}:{value!r}"


class StrictModel(BaseModel):
    """Forbids unknown keys, validates strictly (no string-to-number coercion), immutable."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)
