"""Whether a file's bytes are a page: UTF-8 text without NULs or control characters.

A file named `.md` can hold anything. Decoding it with replacement characters and indexing or listing
it anyway made git treat a generated `index.md` as binary and lint report false orphans, so readers
that need text (the index, index blocks, lint) skip such a file and say why, once.
"""

from __future__ import annotations

import functools
import re
import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")

# C0 controls other than tab, line feed, vertical tab, form feed, carriage return and escape (which
# terminal-colour snippets in pages carry): git itself calls a file binary on the first NUL.
_CONTROL = re.compile(rb"[\x00-\x08\x0e-\x1a\x1c-\x1f]")


# What a terminal acts on instead of showing it: escape sequences (CSI `ESC [ … m` colours and cursor moves, OSC
# `ESC ] … BEL|ST` window titles and hyperlinks, DCS/PM/APC strings, their 8-bit forms) and the other control
# characters (CR rewinds the line, BS erases). A page may hold ESC (`decode` lets terminal snippets through), and a
# checkout's pages are untrusted: a heading must not recolour, retitle or rewrite what the user reads.
_ESCAPES = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]"
    r"|(?:\x1b[\]P^_X]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c\n]*(?:\x07|\x1b\\|\x9c)?"
    r"|\x1b[ -/]*[0-~]?"
)
_UNPRINTABLE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """`text` without terminal escape sequences and control characters (newlines and tabs kept): page-derived
    text made safe for a terminal, an error message or an agent's context."""
    if _UNPRINTABLE.search(text) is None:
        return text
    return _UNPRINTABLE.sub("", _ESCAPES.sub("", text))


class NotText(ValueError):
    """The bytes are not a text page; the message says why and where."""


def decode(data: bytes) -> str:
    """The page text of `data`; NotText when it is not one."""
    control = _CONTROL.search(data)
    if control:
        raise NotText(f"binary content (control byte 0x{control.group()[0]:02x} at offset {control.start()})")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise NotText(f"not UTF-8 (byte 0x{data[e.start]:02x} at offset {e.start})") from None


def problem(data: bytes) -> str | None:
    """Why `data` is not a text page, or None when it is one."""
    try:
        decode(data)
    except NotText as e:
        return str(e)
    return None


def attempt(read: Callable[[], T]) -> tuple[T, None] | tuple[None, str]:
    """(`read()`, None), or (None, why) when the page is not text or a parser fails on it: one bad page
    costs that page, never the whole run."""
    try:
        return read(), None
    except NotText as e:
        return None, str(e)
    except RecursionError:
        return None, "nested too deeply to parse"
    except Exception as e:  # hostile input reaching a parser bug still costs only its page
        return None, f"cannot be parsed ({type(e).__name__}: {e})"


def text_memo(max_chars: int) -> Callable[[Callable[[str], R]], Callable[[str], R]]:
    """`functools.lru_cache` for a function of one text, bounded by the total length of the texts it keeps
    rather than their number: the texts remembered are page sections and chunks, from a few bytes to a
    2 MB front index.md listing 20,000 pages, so a count bound could hold gigabytes."""

    def wrap(function: Callable[[str], R]) -> Callable[[str], R]:
        kept: dict[str, R] = {}  # oldest use first
        size = 0
        lock = threading.Lock()

        @functools.wraps(function)
        def call(text: str) -> R:
            nonlocal size
            with lock:
                if text in kept:
                    kept[text] = value = kept.pop(text)
                    return value
            value = function(text)
            with lock:
                if text not in kept and len(text) <= max_chars:
                    kept[text] = value
                    size += len(text)
                    while size > max_chars:
                        size -= len(oldest := next(iter(kept)))
                        del kept[oldest]
            return value

        return call

    return wrap


def head(data: bytes, limit: int) -> bytes:
    """At most `limit` bytes of `data`, ending after a whole line (a whole UTF-8 character when one line is
    longer than the limit)."""
    if len(data) <= limit:
        return data
    cut = data.rfind(b"\n", 0, limit) + 1 or limit
    while 0 < cut < len(data) and data[cut] & 0xC0 == 0x80:  # never split a character: back to its first byte
        cut -= 1
    return data[:cut]
