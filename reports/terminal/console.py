"""The terminal console every report renders to: plain when not a TTY or when NO_COLOR is set."""

from __future__ import annotations

import os
from typing import Any

from rich.console import Console


def make_console(**kwargs: Any) -> Any:
    """A rich Console; colour only on a TTY without NO_COLOR, 80 columns when not a terminal."""
    no_color = "NO_COLOR" in os.environ
    return Console(no_color=no_color, highlight=False, soft_wrap=False, **kwargs)
