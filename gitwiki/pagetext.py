"""Whether a file's bytes are a page: UTF-8 text without NULs or control characters.

A file named `.md` can hold anything. Decoding it with replacement characters and indexing or listing
it anyway made git treat a generated `index.md` as binary and lint report false orphans, so readers
that need text (the index, index blocks, lint) skip such a file and say why, once.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

# C0 controls other than tab, line feed, vertical tab, form feed, carriage return and escape (which
# terminal-colour snippets in pages carry): git itself calls a file binary on the first NUL.
_CONTROL = re.compile(rb"[\x00-\x08\x0e-\x1a\x1c-\x1f]")


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
