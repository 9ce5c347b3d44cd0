"""Generated listings inside index pages, between `<!-- GITWIKI:INDEX-START … -->` and `<!-- GITWIKI:INDEX-END -->`.

A block lists the pages in the index's folder and below, grouped by folder, rendered with jinja2
(`templates/index_block.md.j2`, overridable per repo). Only the lines between the markers change;
output is deterministic, so a second run is a no-op. Pages are read from the worktree; their titles and
summaries come from the page-facts cache (`gitwiki.pagefacts`), so unchanged pages are not re-read for them.
"""

from __future__ import annotations

import functools
import hashlib
import os
import posixpath
import re
import shlex
import stat
from pathlib import Path
from typing import NamedTuple
from urllib.parse import quote

import gitwiki
from gitwiki import gitcli, pagetext
from gitwiki.config import Config, CorpusConfig, matches
from gitwiki.errors import GitwikiError, UsageError
from gitwiki.fs import atomic_write
from gitwiki.markdown.chunker import fallback_title
from gitwiki.markdown.frontmatter import YamlReader, meta_str, split_front_matter
from gitwiki.markdown.links import code_flags, fenced_lines
from gitwiki.pagefacts import FactsCache, blob_id, decode

START_MARKER = "<!-- GITWIKI:INDEX-START -->"
END_MARKER = "<!-- GITWIKI:INDEX-END -->"
TEMPLATE_NAME = "index_block.md.j2"
SUMMARY_CHARS = 160
_START = re.compile(r"^\s*<!--\s*GITWIKI:INDEX-START\b(.*?)-->\s*$")
_END = re.compile(r"^\s*<!--\s*GITWIKI:INDEX-END\s*-->\s*$")
_ATX_H1 = re.compile(r"^ {0,3}#[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
_SETEXT_H1 = re.compile(r"^ {0,3}=+[ \t]*$")
_NOT_PARAGRAPH = re.compile(r"^ {0,3}(?:#|>|<|\||[-*+][ \t]|\d+[.)][ \t]|!\[|---|\*\*\*|___|=+[ \t]*$)|^ {4}|^\t")
_IMAGE = re.compile(r"!\[[^\]]*\]\([^)]*\)")
_LINK = re.compile(r"\[([^\]]*)\](?:\([^)]*\)|\[[^\]]*\])")
_INCLUDES = re.compile(r"\{%[-+]?\s*(?:include|import|from|extends)\b")


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


class PageInfo(NamedTuple):
    title: str
    summary: str | None


class Template(NamedTuple):
    search: tuple[str, ...]  # jinja2's search path
    name: str  # what jinja2 is asked for
    file: Path  # what that finds
    shown: str  # how errors name it


def parse_options(raw: str, where: str) -> BlockOptions:
    """`depth=1 sort=title summary=false heading=3` from a START marker."""
    values: dict = {}
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
        start, end = _START.match(line), _END.match(line)
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


def page_info(text: str, fallback: str) -> PageInfo:
    """Title (front matter `title`, else the first H1, else `fallback`) and a one-line summary
    (front matter `description`, else the first paragraph)."""
    title, summary = title_and_summary(text)
    return PageInfo(fallback if title is None else title, summary)


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
        if in_block or (not code and _START.match(line)):
            in_block = not _END.match(line)
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
                title = (heading.group(1) if heading else line).strip()
            other = code or setext or not line.strip() or bool(_NOT_PARAGRAPH.match(line))
        if other:
            ended = ended or bool(paragraph)
        elif not ended:
            paragraph.append(line.strip())
    summary = summary or " ".join(paragraph)
    title = _plain(title) if title else None
    return title or None, _one_line(summary) if summary else None  # a title of only an image has no text


def _plain(text: str) -> str:
    """Links and images dropped to their text: relative links would point elsewhere from the index."""
    return _LINK.sub(r"\1", _IMAGE.sub("", text)).strip()


def _one_line(text: str) -> str:
    text = " ".join(_plain(text).split())
    if len(text) <= SUMMARY_CHARS:
        return text
    return text[: SUMMARY_CHARS - 1].rsplit(" ", 1)[0].rstrip(",;:") + "…"


class WorktreeCorpus:
    """The pages of one corpus on disk (git-ignored files, symlinks and dot-folders left out), with their
    blob ids and page info from `facts` (by default a cache that lives as long as this object)."""

    def __init__(self, root: Path, corpus: CorpusConfig, config: Config, facts: FactsCache | None = None):
        self.root = root
        self.corpus = corpus
        self.config = config
        self.facts = facts if facts is not None else FactsCache()
        self._top = os.path.join(root, "")  # paths are joined to it in loops over every page
        self._stats = _listing(self._top, corpus)
        self.pages = sorted(self._stats)
        self._blobs: dict[str, str] = {}
        self._info: dict[str, PageInfo | None] = {}

    def blob(self, path: str) -> str:
        """The page's blob id, from the stat cache while its `lstat` is unchanged, else by hashing it."""
        if path not in self._blobs:
            full = self._top + path
            blob = self.facts.blob_of(full, self._stats[path])
            if blob is None:
                blob = blob_id(_read(full))
                self.facts.remember_blob(full, self._stats[path], blob)
            self._blobs[path] = blob
        return self._blobs[path]

    def info(self, path: str) -> PageInfo | None:
        """The page's title and summary; None for a page that is not text (lint reports it, GW009)."""
        if path not in self._info:
            blob, data = self.blob(path), b""
            if self.facts.missing("info", [blob]):
                # extract from exactly the bytes the key is computed from (the file may have changed since)
                data = _read(self._top + path)
                blob = self._blobs[path] = blob_id(data)
            found = self.facts.get("info", blob, lambda: decode(data))
            self._info[path] = None if found is None else PageInfo(found[0] or fallback_title(path), found[1])
        return self._info[path]

    def forget(self, path: str) -> None:
        """`path` was rewritten: what is known about it is stale."""
        self._blobs.pop(path, None)
        self._info.pop(path, None)
        self._stats[path] = os.lstat(self._top + path)

    def index_files(self) -> list[str]:
        """Every index file of the corpus, deepest first (a parent's listing may show a child's title)."""
        name = self.config.index_blocks.filename
        found = [p for p in self.pages if posixpath.basename(p) == name]
        return sorted(found, key=lambda p: (-p.count("/"), p))


def _listing(top: str, corpus: CorpusConfig) -> dict[str, os.stat_result]:
    """Page path → its `lstat`, for the regular files among the corpus files git lists under `top`."""
    prefix = corpus.path + "/" if corpus.path else ""
    out = {}
    for path in gitcli.worktree_files(top, corpus.path):
        folders = "/" + path[len(prefix) : path.rfind("/") + 1]
        if "/." not in folders and matches(corpus, path):
            try:
                st = os.lstat(top + path)
            except OSError:  # a tracked file deleted from disk
                continue
            if stat.S_ISREG(st.st_mode):
                out[path] = st
    return out


def _read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def render_block(pages: WorktreeCorpus, index_path: str, options: BlockOptions, current: list[str]) -> list[str]:
    """The lines between the markers of the block in `index_path`, whose lines are now `current`.

    Rendering needs jinja2 and every listed page's title, which cost more than the rest of a hook run, so
    the page-facts cache remembers a digest of each output by a digest of its inputs (the template, the
    options and the blob id of each page under the index's folder): when the inputs were rendered before
    into exactly `current`, `current` is the answer. A template that pulls in other files is always rendered.
    """
    folder = posixpath.dirname(index_path)
    prefix = folder + "/" if folder else ""
    name = pages.config.index_blocks.filename
    template = _template(pages.root, pages.config.index_blocks.template)
    source = template.file.read_text(encoding="utf-8")
    memo = None
    if not _INCLUDES.search(source):
        listed = [(p, pages.blob(p)) for p in pages.pages if p.startswith(prefix) and p != index_path]
        memo = _digest(repr((source, options, index_path, name, listed)))
        if pages.facts.rendered(memo) == _digest("\n".join(current)):
            return current
    groups: dict[str, list[dict]] = {}
    for path in pages.pages:
        if path == index_path or not path.startswith(prefix):
            continue
        rel = path[len(prefix) :]
        sub = posixpath.dirname(rel)
        if options.depth is not None and (sub.count("/") + 1 if sub else 0) >= options.depth:
            continue
        if sub and posixpath.basename(rel) == name:
            continue  # the folder's own index is the group heading's link
        info = pages.info(path)
        if info is None:
            continue
        groups.setdefault(sub, []).append({"path": path, "link": rel, "title": info.title, "summary": info.summary})
    key = (lambda p: (p["title"].casefold(), p["link"])) if options.sort == "title" else (lambda p: p["link"])
    context = [
        {
            "folder": sub,
            "title": sub,
            "link": f"{sub}/{name}" if sub and f"{prefix}{sub}/{name}" in pages.pages else None,
            "pages": sorted(entries, key=key),
        }
        for sub, entries in sorted(groups.items())
    ]
    rendered = _render(template, groups=context, options=options, index=index_path)
    text = re.sub(r"\n{3,}", "\n\n", "\n".join(line.rstrip() for line in rendered.split("\n"))).strip("\n")
    lines = text.split("\n") if text else []
    if memo is not None:
        pages.facts.remember_render(memo, _digest("\n".join(lines)))
    return lines


def _digest(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()


def rewrite(text: str, path: str, pages: WorktreeCorpus) -> str:
    """`text` with every block regenerated; lines outside the blocks are kept byte for byte."""
    blocks = find_blocks(text.replace("\r\n", "\n"), path)
    if not blocks:
        return text
    lines = text.split("\n")
    out: list[str] = []
    pos = 0
    for block in blocks:
        out.extend(lines[pos : block.start + 1])
        out.extend(render_block(pages, path, block.options, lines[block.start + 1 : block.end]))
        pos = block.end
    out.extend(lines[pos:])
    return "\n".join(out)


def refresh_file(pages: WorktreeCorpus, index_path: str, check: bool = False) -> bool:
    """Regenerate the blocks of one index file; True when its text changed (written unless `check`)."""
    full = pages.root / index_path
    try:
        text = pagetext.decode(full.read_bytes())
    except pagetext.NotText as e:
        raise BlockError(f"{index_path}: {e}; save it as UTF-8 text to have its blocks refreshed") from None
    new = rewrite(text, index_path, pages)
    if new == text:
        return False
    if not check:
        atomic_write(full, new)
        pages.forget(index_path)
    return True


def front_index(corpus: CorpusConfig, config: Config) -> str:
    """The repo-relative path of the index file at the corpus root."""
    return posixpath.join(corpus.path, config.index_blocks.filename)


def create_front_index(pages: WorktreeCorpus, check: bool = False) -> str | None:
    """Create the corpus's front index (a title and empty markers) if it is missing; its path when created."""
    path = front_index(pages.corpus, pages.config)
    if (pages.root / path).exists():
        return None
    if not check:
        title = pages.corpus.name.replace("-", " ").replace("_", " ").title()
        atomic_write(pages.root / path, f"# {title}\n\n{START_MARKER}\n{END_MARKER}\n")
    return path


def ancestor_indexes(corpus: CorpusConfig, config: Config, page_path: str) -> list[str]:
    """Index file paths of every folder from `page_path`'s folder up to the corpus root, deepest first."""
    base = corpus.path
    if base and not (page_path == base or page_path.startswith(base + "/")):
        raise UsageError(f"{page_path} is not in corpus {corpus.name!r} ({base}/); pass a page under it")
    folder = posixpath.dirname(page_path)
    out = []
    while True:
        out.append(posixpath.join(folder, config.index_blocks.filename) if folder else config.index_blocks.filename)
        if folder == base or not folder:
            return out
        folder = posixpath.dirname(folder)


def refresh_ancestors(
    root: Path,
    corpus: CorpusConfig,
    config: Config,
    page_path: str,
    scaffold: bool = True,
    facts: FactsCache | None = None,
) -> list[str]:
    """Regenerate the blocks of every index file above `page_path` (repo-relative) in the corpus; with
    `scaffold`, create the corpus's front index (title and markers) when it is missing. Files without
    markers are left alone. Returns the repo-relative paths that changed."""
    pages = WorktreeCorpus(Path(root), corpus, config, facts)
    changed = [created] if scaffold and (created := create_front_index(pages)) else []
    for index_path in ancestor_indexes(corpus, config, page_path):
        if (pages.root / index_path).is_file() and refresh_file(pages, index_path) and index_path not in changed:
            changed.append(index_path)
    return changed


@functools.cache
def _environment(search: tuple[str, ...]):
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(list(search)),
        autoescape=False,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
    )
    env.filters["md_text"] = lambda s: re.sub(r"([\[\]\\])", r"\\\1", str(s))
    env.filters["md_link"] = lambda s: quote(str(s), safe="/#-._~!$&'*+,;=:@")
    return env


def template_dirs(root: Path) -> tuple[str, ...]:
    """Where templates are looked up: the repo's `.gitwiki/templates/`, then gitwiki's own (installed
    as gitwiki/templates/ in the wheel, the top-level templates/ in a source checkout)."""
    package = Path(gitwiki.__file__).parent
    shipped = package / "templates"
    if not shipped.is_dir():
        shipped = package.parent / "templates"
    return (str(root / ".gitwiki" / "templates"), str(shipped))


def _template(root: Path, configured: str | None) -> Template:
    if configured:
        if not (root / configured).is_file():
            raise UsageError(
                f"[index_blocks] template {configured!r} not found under {root}; fix the path in .gitwiki.toml"
            )
        target = (root / configured).resolve()
        return Template((str(target.parent),), target.name, target, configured)
    search = template_dirs(root)
    found = next(f for d in search if (f := Path(d, TEMPLATE_NAME)).is_file())  # jinja2's order; the shipped one exists
    return Template(search, TEMPLATE_NAME, found, TEMPLATE_NAME)


def _render(template: Template, **context) -> str:
    import jinja2

    try:
        return _environment(template.search).get_template(template.name).render(**context)
    except jinja2.TemplateError as e:
        where = f"{getattr(e, 'filename', None) or template.shown}:{getattr(e, 'lineno', '?')}"
        raise UsageError(f"index block template {where}: {e}; fix the template") from None
