"""CLI plumbing shared by the toolkit's console scripts (``prereg``, ``collect``, ``gates``, ``reports``).

Kept import-light (argparse, json, os, sys only) so every ``--help`` starts instantly.

Exit codes are defined once in :mod:`prereg.errors` (with the exception base that carries them).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence

TYPE_CHECKING = False  # typing stays unloaded at --help (mypy treats this name as true)
if TYPE_CHECKING:
    from typing import Any, NoReturn

from prereg.errors import (  # noqa: F401 - re-exported for the console scripts
    EXIT_BAD_INPUT,
    EXIT_INTEGRITY,
    EXIT_INTERNAL,
    EXIT_NOT_SUPPORTED,
    EXIT_OK,
    InputError,
    IntegrityError,
    ToolkitError,
)

_OOM_MESSAGE = b"out of memory: the input is too large for this machine\n"

#: the name the console scripts use for bad input (one class: :class:`prereg.errors.InputError`)
UserError = InputError


class ArgumentParser(argparse.ArgumentParser):
    """argparse that reports usage errors in the toolkit's style (one line, exit 2)."""

    def error(self, message: str) -> NoReturn:  # noqa: D102 - argparse API
        self.print_usage(sys.stderr)
        print(f"{self.prog}: error: {safe(message)}", file=sys.stderr)  # it may quote an argument
        raise SystemExit(EXIT_BAD_INPUT)


def emit_json(obj: Any) -> None:
    """Print ``obj`` as indented JSON on stdout (strict: no NaN/Infinity; control characters escaped)."""
    from prereg.jsoncodec import as_json_data, readable_json  # lazy: startup
    from reports.words.safe_text import clean_json_text  # lazy: startup

    # through json once: keys sorted and made strings, tuples made lists, exactly as json.dumps does
    print(clean_json_text(readable_json(as_json_data(obj))))


def safe(text: str) -> str:
    """``text`` with terminal control characters escaped (``reports.words.safe_text.clean``)."""
    from reports.words.safe_text import clean  # lazy: startup

    return clean(text)


def _report_failure(prog: str, message: str, exit_code: int, details: Any, as_json: bool) -> int:
    print(f"{prog}: {safe(message)}", file=sys.stderr)
    if as_json:
        emit_json({"ok": False, "exit_code": exit_code, "error": message, "details": details})
    return exit_code


def run_main(prog: str, build_parser: Callable[[], argparse.ArgumentParser], argv: Sequence[str] | None) -> int:
    """Parse ``argv``, dispatch to ``args.handler(args)`` and map every failure to an exit code.

    Handlers return an exit code. A ``ToolkitError`` prints ``prog: message`` (and a JSON error object on
    stdout when ``--json`` was given); any other exception is a toolkit bug and exits
    ``EXIT_INTERNAL`` with a one-line message, never a traceback.
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return EXIT_BAD_INPUT
    as_json = bool(getattr(args, "json", False))
    try:
        return int(handler(args))
    except ToolkitError as err:  # every deliberate error, mapped once to its exit code
        return _report_failure(prog, err.message, err.exit_code, err.details, as_json)
    except BrokenPipeError:
        return EXIT_OK
    except OSError as err:  # a path that cannot be read or written: the user's environment, not a bug
        where = f"{err.filename}: " if err.filename else ""
        return _report_failure(prog, f"{where}{err.strerror or err}", EXIT_BAD_INPUT, None, as_json)
    except MemoryError:  # allocate nothing here: the message is ready-made bytes
        try:
            os.write(2, _OOM_MESSAGE)
        except OSError:
            pass
        return EXIT_BAD_INPUT
    except RecursionError:
        print(f"{prog}: the input is nested too deeply to be read", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
    except Exception as err:  # noqa: BLE001 - the last line of defence: never a traceback
        print(
            f"{prog}: internal error ({type(err).__name__}: {safe(str(err))}); please report it with the input "
            "that caused it",
            file=sys.stderr,
        )
        return EXIT_INTERNAL
