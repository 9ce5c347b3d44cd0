"""Loggers for the modules a `gitwiki serve` bridge runs (`mcp/early.py`, `mcp/bridge.py`), which import `logging`
only at a record's first use: the module and its imports (traceback, tokenize, string, weakref) are 0.6 MiB and
~5 ms of a bridge's start, and a bridge logs a line or two in a session, if any.

A process that set `logging` up (`gitwiki serve` alone, the owner, the tests) gets every record through it, as
from `logging.getLogger(name)`. The bridge's fast start (`gitwiki.cli`) calls `plain(level)` instead: records at
`level` and above are then written to stderr here in the same FORMAT, and `logging` is never imported.
"""

from __future__ import annotations

import sys

LEVELS = {"DEBUG": 10, "INFO": 20, "WARNING": 30, "ERROR": 40}
FORMAT = "gitwiki serve: %(levelname)s %(name)s: %(message)s"  # `gitwiki serve`'s lines (`mcp.early.log_to_stderr`)

_plain: list[int] = []  # the level records are written at without `logging`; empty: through `logging`


def plain(level: str) -> None:
    """From now on write records of `level` (a name of LEVELS) and above to stderr here, not through `logging`."""
    _plain[:] = [LEVELS[level]]


class Logger:
    """`logging.getLogger(name)`'s debug, info, warning and exception, with `logging` imported at the first record
    (none when `plain` was called)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def debug(self, message: str, *args: object) -> None:
        self._log("DEBUG", message, args)

    def info(self, message: str, *args: object) -> None:
        self._log("INFO", message, args)

    def warning(self, message: str, *args: object) -> None:
        self._log("WARNING", message, args)

    def exception(self, message: str, *args: object) -> None:
        """An ERROR record with the exception being handled, as `logging.Logger.exception` writes it."""
        self._log("ERROR", message, args, exc_info=True)

    def _log(self, level: str, message: str, args: tuple[object, ...], exc_info: bool = False) -> None:
        if not _plain:
            import logging

            logging.getLogger(self.name).log(LEVELS[level], message, *args, exc_info=exc_info)
            return
        if LEVELS[level] < _plain[0]:
            return
        text = message % args if args else message
        if exc_info and sys.exc_info()[0] is not None:
            import traceback

            text += "\n" + traceback.format_exc().rstrip("\n")
        try:
            sys.stderr.write(FORMAT % {"levelname": level, "name": self.name, "message": text} + "\n")
            sys.stderr.flush()
        except (OSError, ValueError):  # stderr closed: a log line is not worth the session
            pass
