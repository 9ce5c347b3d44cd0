"""Footnote definitions (`[^label]: text`, indented continuation lines) in markdown source, outside code."""

from __future__ import annotations

import re

from gitwiki.errors import NotFoundError
from gitwiki.markdown.links import code_flags

_DEFINITION = re.compile(r"^ {0,3}\[\^([^\]\s]+)\]:[ \t]?(.*)$")


def footnotes(text: str) -> dict[str, tuple[int, str]]:
    """Footnote label → (1-based line of its definition, its text with continuation lines joined).

    Definitions inside code fences do not count (fences as CommonMark closes them: an info-string line
    such as ```` ```python ```` inside a fence is content); the first definition of a label wins.
    """
    found: dict[str, tuple[int, list[str]]] = {}
    label: str | None = None
    lines = text.splitlines()
    for i, (line, code) in enumerate(zip(lines, code_flags(lines), strict=True), 1):
        if code:
            label = None
        elif definition := _DEFINITION.match(line):
            label = definition.group(1) if definition.group(1) not in found else None
            if label:
                found[label] = (i, [definition.group(2)])
        elif label is not None and (line.startswith(("    ", "\t")) or not line.strip()):
            found[label][1].append(line.strip())
        else:
            label = None
    return {key: (line, "\n".join(body).strip()) for key, (line, body) in found.items()}


def footnote(text: str, label: str, page: str) -> tuple[int, str]:
    """The definition of `[^label]` in the page `page` (named in the error when it has none)."""
    notes = footnotes(text)
    if label not in notes:
        known = ", ".join(f"[^{k}]" for k in notes) or "none"
        raise NotFoundError(f"{page!r} has no footnote [^{label}]; its footnotes: {known}")
    return notes[label]
