"""Links and anchors in markdown source: where they are (1-based line:col), GitHub heading slugs, and
what a relative link points at. Pure functions over text; no git, no file system.

The scanner is a masked regex pass rather than a full parse so that it can run over a whole corpus in
a pre-commit budget: code blocks (given by the caller, or found by a line-based fence tracker),
inline code spans and HTML comments are blanked out first, keeping offsets, so positions stay exact.
"""

from __future__ import annotations

import bisect
import posixpath
import re
from collections.abc import Iterable, Iterator
from typing import NamedTuple
from urllib.parse import unquote


class Link(NamedTuple):
    target: str  # the raw destination as written ("" for `[x]()`), angle brackets removed
    line: int  # 1-based line of the opening `[` (or `!` for an image)
    col: int  # 1-based column of the same character
    text: str  # the link text or image alt
    kind: str  # "link", "image" or "definition" (a `[label]: target` reference definition)


class Target(NamedTuple):
    path: str | None  # repo-relative, normalized; None for a same-page `#fragment`
    fragment: str | None  # decoded, without '#'; None when the link has no fragment
    outside: bool  # the path climbs above the repo root


# One level of nested brackets in the text is enough for real pages (`[a [b] c](x)`).
_TEXT = r"(?:[^\[\]\\]|\\.|\[(?:[^\[\]\\]|\\.)*\])*"
_DEST = r"<[^<>\n]*>|(?:[^\s()\\]|\\.|\((?:[^\s()\\]|\\.)*\))*"
_INLINE = re.compile(
    r"(?<!\\)(!?)\[(" + _TEXT + r")\]\(\s*(" + _DEST + r")(?:\s+(?:\"[^\"]*\"|'[^']*'|\([^)]*\)))?\s*\)"
)
_DEFINITION = re.compile(r"^ {0,3}\[((?:[^\[\]\\]|\\.)+)\]:[ \t]*(<[^<>\n]*>|\S+)", re.MULTILINE)
# A code span never crosses a blank line (the paragraph ends there).
_CODE_SPAN = re.compile(r"(`+)(?!`)((?:(?!\n[ \t]*\n).)+?)(?<!`)\1(?!`)", re.DOTALL)
_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
_HTML_ID = re.compile(r"<[A-Za-z][^>]*?\s(?:id|name)\s*=\s*[\"']([^\"']+)[\"']")
_HEADING_ATTRS = re.compile(r"\s*\{([^{}]*)\}\s*$")  # a trailing {…} attribute block
_ATTR_ID = re.compile(r"(?:^|\s)#((?:\\\S|[\w:.-])+)(?=\s|$)")  # `{#\_fn_1}`: a backslash escapes, as in text
_KEY_ID = re.compile(r"""(?:^|[\s:])id=(?:"([^"\n]+)"|'([^'\n]+)'|([^\s"'}]+))""")
# github-slugger drops everything but letters, marks, numbers, connector punctuation, hyphens and spaces.
_NOT_SLUG = re.compile(r"[^\w\- ]")
_NOT_NEWLINE = re.compile(r"[^\n]")


def code_flags(lines: Iterable[str]) -> Iterator[bool]:
    """Per line, lazily: is it inside (or a fence of) a fenced code block, by CommonMark fence rules."""
    fence = None  # (char, length) of the open fence
    for line in lines:
        m = _FENCE.match(line)
        if fence is None:
            if m and not (m.group(1)[0] == "`" and "`" in m.group(2)):
                fence = (m.group(1)[0], len(m.group(1)))
                yield True
            else:
                yield False
            continue
        if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= fence[1] and not m.group(2).strip():
            fence = None
        yield True


def fenced_lines(lines: list[str]) -> set[int]:
    """0-based indexes of lines inside (and including) fenced code blocks."""
    return {i for i, code in enumerate(code_flags(lines)) if code}


def _blank(match: re.Match[str]) -> str:
    # Not char by char: a memory page has a code span in every entry (760,000 characters a lint of a large one).
    text = match.group(0)
    return " " * len(text) if "\n" not in text else _NOT_NEWLINE.sub(" ", text)


def masked(text: str, skip_lines: Iterable[int] | None = None) -> str:
    """`text` with code blocks, code spans and HTML comments replaced by spaces (same length, same lines)."""
    lines = text.split("\n")
    skip = fenced_lines(lines) if skip_lines is None else set(skip_lines)
    kept = "\n".join(" " * len(line) if i in skip else line for i, line in enumerate(lines))
    return _CODE_SPAN.sub(_blank, _COMMENT.sub(_blank, kept))


def extract_links(text: str, skip_lines: Iterable[int] | None = None) -> list[Link]:
    """Inline links, images and reference definitions outside code, in source order.

    `skip_lines` (0-based) are lines that are code according to a real parse; without it fenced
    blocks are found line by line.
    """
    if "](" not in text and "]:" not in text:  # every link needs one, and masking only blanks text out
        return []  # (a memory store lints its whole topic page: masking 300 KB cost ~10 ms)
    source = masked(text, skip_lines)
    starts = [0] + [m.end() for m in re.finditer("\n", source)]

    def position(offset: int) -> tuple[int, int]:
        row = bisect.bisect_right(starts, offset) - 1
        return row + 1, offset - starts[row] + 1

    found = []
    # Each scan only where its marks survived masking: the inline pattern tries every position of the text
    # (57 ms over a 300 KB memory page whose one ']:' is in code).
    for m in _INLINE.finditer(source) if "](" in source else ():
        dest = m.group(3)
        line, col = position(m.start())
        found.append((m.start(), Link(_unwrap(dest), line, col, m.group(2), "image" if m.group(1) else "link")))
    for m in _DEFINITION.finditer(source) if "]:" in source else ():
        line, col = position(m.start(1) - 1)
        found.append((m.start(1) - 1, Link(_unwrap(m.group(2)), line, col, m.group(1), "definition")))
    return [link for _, link in sorted(found)]


def _unwrap(dest: str) -> str:
    return dest[1:-1] if dest.startswith("<") and dest.endswith(">") else dest


def slugify(text: str) -> str:
    """GitHub's heading id (without the duplicate counter): lower case, punctuation dropped, spaces to '-'."""
    return _NOT_SLUG.sub("", text.lower()).replace(" ", "-")


def heading_slugs(texts: Iterable[str]) -> list[str]:
    """Slugs for headings in document order; repeats get -1, -2, … as on GitHub. A heading that ends in an
    explicit id, `## Setup {#install}` or `{ #install .class }` (mkdocs attr_list, pandoc), also answers to
    that id, listed after its slug; the slug is of the text before the braces."""
    seen: dict[str, int] = {}
    out = []
    for text in texts:
        attrs = _HEADING_ATTRS.search(text)
        explicit = _explicit_id(attrs.group(1)) if attrs else None
        if explicit and attrs:
            text = text[: attrs.start()]
        base = slug = slugify(text)
        while slug in seen:
            seen[base] += 1
            slug = f"{base}-{seen[base]}"
        seen.setdefault(slug, 0)
        out.append(slug)
        if explicit:
            out.append(explicit)
    return out


def _explicit_id(attrs: str) -> str | None:
    """The id an attribute list gives: `#id`, or `id="…"` (attr_list's key form, as mkdocs-material writes
    `{ id="9.7.0" }`)."""
    if found := _ATTR_ID.search(attrs):
        return _unescaped(found.group(1))
    if found := _KEY_ID.search(attrs):
        return next(g for g in found.groups() if g is not None)
    return None


def _unescaped(name: str) -> str:
    return re.sub(r"\\(\S)", r"\1", name)


def html_anchors(text: str) -> set[str]:
    """Explicit anchors: `id`/`name` attributes of inline HTML (`<a name="setup"></a>`), and the ids of attribute
    lists on other elements (`**locale**{ #mkdocs-locale }`, mkdocs attr_list, kramdown `{: #id}`)."""
    plain = masked(text)
    found = set(_HTML_ID.findall(text)) | {_unescaped(name) for name in _ATTR_LIST_ID.findall(plain)}
    found |= {_explicit_id(attrs) or "" for attrs in _ATTR_LIST_KEYED.findall(plain)}
    # A fence's own attributes (pymdownx.superfences: ``` { .sh #example }), on the line masking blanks
    found |= {_explicit_id(attrs) or "" for attrs in _FENCE_ATTRS.findall(text)}
    # Python-Markdown's footnotes: the note is #fn:label, the place that cites it #fnref:label
    for label in _FOOTNOTE.findall(plain):
        found |= {f"fn:{label}", f"fnref:{label}"}
    return found - {""}


_ATTR_LIST_KEYED = re.compile(r"(?<![{\\])\{(:?[^{}\n]*?\bid=[^{}\n]*)\}")
_FENCE_ATTRS = re.compile(r"^[ \t]*(?:`{3,}|~{3,})[ \t]*\{([^}\n]*)\}", re.MULTILINE)  # in an admonition too
_FOOTNOTE = re.compile(r"^ {0,3}\[\^([^\]\s]+)\]:", re.MULTILINE)
# What "any anchor" is when a page has content its source does not show: `anchors` then holds it.
ANY_ANCHOR = "*"
_ATTR_LIST_ID = re.compile(r"(?<![{\\])\{:?[ \t]*(?:[.\w-]+[ \t]+|[\w-]+=\S+[ \t]+)*#((?:\\\S|[\w:.-])+)[^{}\n]*\}")
# Content a docs-site generator puts into the page when it builds it: mkdocstrings and mkdocs-click `::: x`
# blocks, pymdownx snippets `--8<--`, mdBook `{{#include}}`-style directives, MDX imports of other pages.
_GENERATED = re.compile(
    r"^ {0,3}(?:::: \S|-{1,2}8<-{1,2}|.*\{\{#(?:include|rustdoc_include|playground)\b"
    r"|import\s.+\bfrom\s+['\"][^'\"]+\.mdx?['\"])",
    re.MULTILINE,
)


_INCLUDE = re.compile(r"\{\{#(?:include|rustdoc_include|playground)[ \t]+([^\s:}]+)")


def include_targets(text: str) -> list[str]:
    """The files mdBook's `{{#include file.md}}` directives (outside code) pull into the page, as written: the
    page includes them, so they are linked."""
    return _INCLUDE.findall(masked(text))


def has_generated_content(text: str) -> bool:
    """Whether the page pulls in content its source does not show (so its headings are not all known)."""
    return bool(_GENERATED.search(masked(text)))


def is_external(target: str) -> bool:
    """URLs with a scheme (`https:`, `mailto:`) and protocol-relative `//host` links."""
    return bool(_SCHEME.match(target)) or target.startswith("//")


def link_target(source: str, target: str) -> Target | None:
    """Where `target`, written in the page at repo-relative `source`, points; None for external links.

    A leading '/' is the repo root, as on GitHub; `?query` is dropped; the path is percent-decoded.
    """
    if is_external(target):
        return None
    rest, hash_, fragment = target.partition("#")
    rest = rest.partition("?")[0]
    frag = unquote(fragment) if hash_ else None
    if not rest:
        return Target(None, frag, False)
    rest = unquote(rest)
    joined = rest.lstrip("/") if rest.startswith("/") else posixpath.join(posixpath.dirname(source), rest)
    path = posixpath.normpath(joined)
    outside = path == ".." or path.startswith("../")
    return Target("" if path == "." else path, frag, outside)
