"""The markers of a generated index block, `<!-- GITWIKI:INDEX-START … -->` to `<!-- GITWIKI:INDEX-END -->`,
and the options on the START marker. Pure functions over text; rendering is `gitwiki.pages.index_blocks`."""

from __future__ import annotations

import re
import shlex
from typing import Any, NamedTuple

from gitwiki.errors import GitwikiError
from gitwiki.markdown.links import fenced_lines

START_MARKER = "<!-- GITWIKI:INDEX-START -->"
END_MARKER = "<!-- GITWIKI:INDEX-END -->"
START_LINE = re.compile(r"^\s*<!--\s*GITWIKI:INDEX-START\b(.*?)-->\s*$")  # group 1: the options
END_LINE = re.compile(r"^\s*<!--\s*GITWIKI:INDEX-END\s*-->\s*$")


class BlockError(GitwikiError):
    """A malformed block (no END, nested START, bad option): the file is left unchanged."""


class BlockOptions(NamedTuple):
    depth: int | None = None  # 1: only the index's own folder; 2: one level of subfolders too; None: all
    sort: str = "path"  # or "title"
    summary: bool = True
    heading: int = 2  # level of the per-folder headings


class Block(NamedTuple):
    start: int  # 0-based line of the START marker
    end: int  # 0-based line of the END marker
    options: BlockOptions


def parse_options(raw: str, where: str) -> BlockOptions:
    """`depth=1 sort=title summary=false heading=3` from a START marker."""
    values: dict[str, Any] = {}
    try:
        words = shlex.split(raw)
    except ValueError as e:
        raise BlockError(f"{where}: cannot read the START marker options ({e}); write key=value pairs") from None
    for word in words:
        key, eq, value = word.partition("=")
        if not eq:
            raise BlockError(f"{where}: marker option {word!r} needs a value, e.g. depth=1")
        if key in ("depth", "heading") and value.isdigit() and int(value) >= 1 and (key == "depth" or int(value) <= 6):
            values[key] = int(value)
        elif key == "sort" and value in ("path", "title"):
            values[key] = value
        elif key == "summary" and value.lower() in ("true", "false", "yes", "no"):
            values[key] = value.lower() in ("true", "yes")
        else:
            raise BlockError(
                f"{where}: bad marker option {word!r}; use depth=N (N ≥ 1), sort=path|title, "
                "summary=true|false, heading=1..6"
            )
    return BlockOptions(**values)


def find_blocks(text: str, path: str) -> list[Block]:
    """The blocks in `text`, ignoring markers inside code fences; BlockError names the file and line."""
    lines = text.split("\n")
    code = fenced_lines(lines)
    blocks: list[Block] = []
    open_at: int | None = None
    options = BlockOptions()
    for i, line in enumerate(lines):
        if i in code or "GITWIKI:INDEX-" not in line:
            continue
        start, end = START_LINE.match(line), END_LINE.match(line)
        if start:
            if open_at is not None:
                raise BlockError(
                    f"{path}:{i + 1}: INDEX-START inside the block opened on line {open_at + 1}; blocks cannot "
                    f"nest — add {END_MARKER} before it"
                )
            open_at, options = i, parse_options(start.group(1), f"{path}:{i + 1}")
        elif end:
            if open_at is None:
                raise BlockError(
                    f"{path}:{i + 1}: INDEX-END without an INDEX-START above it; add {START_MARKER} or remove this line"
                )
            blocks.append(Block(open_at, i, options))
            open_at = None
    if open_at is not None:
        raise BlockError(
            f"{path}:{open_at + 1}: INDEX-START has no INDEX-END; add {END_MARKER} where the listing should end"
        )
    return blocks
