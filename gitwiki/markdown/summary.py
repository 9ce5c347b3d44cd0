"""A page's title and one-line summary, as an index block lists it: front matter `title` / `description`,
else the first H1 and the first paragraph."""

from __future__ import annotations

import re

from gitwiki.markdown.frontmatter import YamlReader, meta_str, split_front_matter
from gitwiki.markdown.index_block import END_LINE, START_LINE
from gitwiki.markdown.links import code_flags

SUMMARY_CHARS = 160
_ATX_H1 = re.compile(r"^ {0,3}#[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
_SETEXT_H1 = re.compile(r"^ {0,3}=+[ \t]*$")
# Also what a docs site's build replaces (an index block would list `::: mkdocs-click` as the page's summary):
# admonitions (`:::`, `!!!`, `???`), snippets (`--8<--`), mdBook and Jinja `{{…}}`, MDX imports and exports
_NOT_PARAGRAPH = re.compile(
    r"^ {0,3}(?:#|>|<|\||[-*+][ \t]|\d+[.)][ \t]|!\[|---|\*\*\*|___|=+[ \t]*$"
    r"|:::|!!!|\?\?\?|-{1,2}8<|\{\{|(?:import|export)\s)|^ {4}|^\t"
)
_IMAGE = re.compile(r"!\[[^\]]*\]\([^)]*\)")
_LINK = re.compile(r"\[([^\]]*)\](?:\([^)]*\)|\[[^\]]*\])")
# A heading's attribute list (mkdocs attr_list, kramdown, pandoc): `{: #id .class }`, `{#id}`; not a title's text
_ATTRS = re.compile(r"[ \t]*\{:?[ \t]*(?:(?:[#.][^\s{}]+|[\w-]+=[^\s{}]+)[ \t]*)+\}[ \t]*$")


def title_and_summary(text: str, read_yaml: YamlReader | None = None) -> tuple[str | None, str | None]:
    """A page's title (None when it has none) and one-line summary, by a line scan that stops as soon as
    it has both: cheap enough for every page of a big wiki. Generated blocks and code are skipped."""
    fm = split_front_matter(text.replace("\r\n", "\n"), read_yaml)
    lines = fm.body.split("\n")
    title = meta_str(fm.meta, "title")
    summary = meta_str(fm.meta, "description")
    paragraph: list[str] = []
    ended = in_block = False
    for i, (line, code) in enumerate(zip(lines, code_flags(lines), strict=False)):
        if title is not None and (summary is not None or ended):
            break
        setext = False
        if in_block or (not code and START_LINE.match(line)):
            in_block = not END_LINE.match(line)
            other = True
        else:
            heading = None if code else _ATX_H1.match(line)
            setext = (
                not code
                and bool(line.strip())
                and not paragraph
                and i + 1 < len(lines)
                and bool(_SETEXT_H1.match(lines[i + 1]))
            )
            if title is None and (heading or setext):
                title = _ATTRS.sub("", heading.group(1) if heading else line).strip()
            other = code or setext or not line.strip() or bool(_NOT_PARAGRAPH.match(line))
        if other:
            ended = ended or bool(paragraph)
        elif not ended:
            paragraph.append(line.strip())
    summary = summary or " ".join(paragraph)
    title = _link_text(title) if title else None
    return title or None, _one_line(summary) if summary else None  # a title of only an image has no text


def _link_text(text: str) -> str:
    """Links and images dropped to their text: relative links would point elsewhere from the index."""
    return _LINK.sub(r"\1", _IMAGE.sub("", text)).strip()


def _one_line(text: str) -> str:
    if "&" in text:  # `Docs with&nbsp;Markdown.`: the entity as the page shows it
        import html

        text = html.unescape(text)
    text = " ".join(_link_text(text).split())
    if len(text) <= SUMMARY_CHARS:
        return text
    return text[: SUMMARY_CHARS - 1].rsplit(" ", 1)[0].rstrip(",;:") + "…"
