"""Generated listings inside index pages, between `<!-- GITWIKI:INDEX-START … -->` and `<!-- GITWIKI:INDEX-END -->`.

A block lists the pages in the index's folder and below, grouped by folder, rendered with jinja2
(`templates/index_block.md.j2`, overridable per repo). Only the lines between the markers change;
output is deterministic, so a second run is a no-op. Pages are read from the worktree; their titles and
summaries come from the page-facts cache (`gitwiki.pages.pagefacts`), so unchanged pages are not re-read for them.
The markers themselves are parsed by `gitwiki.markdown.index_block`.
"""

from __future__ import annotations

import bisect
import hashlib
import os
import posixpath
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any, NamedTuple

from gitwiki import pagetext
from gitwiki.config import Config, CorpusConfig
from gitwiki.errors import GitwikiError, UsageError
from gitwiki.fs import UnsafeFile, read_bounded, read_page_file, write_page_file
from gitwiki.markdown.index_block import END_MARKER, START_MARKER, BlockError, BlockOptions, find_blocks
from gitwiki.pages.pagefacts import FactsCache
from gitwiki.pages.templating import environment, shipped_dir
from gitwiki.pages.worktree_corpus import WorktreeCorpus

TEMPLATE_NAME = "index_block.md.j2"
_LAST = "last:"  # the key prefix of a block's last render in the render memo (the others are digests)
_INCLUDES = re.compile(r"\{%[-+]?\s*(?:include|import|from|extends)\b")


class Template(NamedTuple):
    search: tuple[str, ...]  # jinja2's search path
    name: str  # what jinja2 is asked for
    file: Path  # what that finds
    shown: str  # how errors name it


class Refresh(NamedTuple):
    changed: list[str]  # index files regenerated or created, repo-relative (written unless `check`)
    errors: list[GitwikiError]  # malformed files (BlockError) and unsafe ones (UnsafeFile), each left unchanged


def render_block(listing: WorktreeCorpus, index_path: str, options: BlockOptions, current: list[str]) -> list[str]:
    """The lines between the markers of the block in `index_path`, whose lines are now `current`.

    Rendering needs jinja2 and every listed page's title, which cost more than the rest of a hook run, so
    the page-facts cache remembers a digest of each output by two digests of its inputs: the template, the
    options and the blob id of each page under the index's folder (no title needed), and failing that the
    template, the options and what the block shows (titles, summaries, links; an edit below a page's first
    paragraph changes its blob, not what the block shows). When either was rendered before into exactly
    `current`, `current` is the answer. A template that pulls in other files is always rendered.
    """
    folder = posixpath.dirname(index_path)
    prefix = folder + "/" if folder else ""
    name = listing.config.index_blocks.filename
    template = _template(listing.root, listing.config.index_blocks.template)
    try:
        source = read_bounded(template.file, what="index block template", fix=TEMPLATE_FIX).decode("utf-8")
    except UnicodeDecodeError as e:
        raise UsageError(f"index block template {template.shown} is not UTF-8 (byte {e.start}); fix it") from None
    memoized = not _INCLUDES.search(source)
    now = _digest("\n".join(current))
    listed = [p for p in _under(listing.pages, prefix) if p != index_path]
    # the site's nav titles name pages without an H1: a renamed nav entry changes the block with no page's blob
    head = _digest(repr((source, options, index_path, name, sorted(listing.nav_titles.items()))))
    pages, blobs = "\0".join(listed), list(map(listing.blob, listed))  # joined: a repr of 20,000 pairs cost more
    by_blobs = _digest(f"{head}\n{pages}\n" + "\0".join(blobs))
    if memoized and (
        listing.facts.rendered(by_blobs) == now or _shows_as_before(listing, index_path, f"{head} {now}", listed, blobs)
    ):
        _remember(listing, index_path, head, now, by_blobs, listed, blobs)
        return current
    shown = []
    for path in listed:
        sub = path[len(prefix) :].rpartition("/")[0]  # posixpath.dirname, at a third of the cost
        if options.depth is not None and (sub.count("/") + 1 if sub else 0) >= options.depth:
            continue
        if sub and posixpath.basename(path) == name:
            continue  # the folder's own index is the group heading's link
        shown.append(path)
    listing.prefetch_info(shown)
    groups: dict[str, list[dict[str, Any]]] = {}
    for path in shown:
        info = listing.info(path)
        if info is not None:
            rel = path[len(prefix) :]
            entry = {"path": path, "link": rel, "title": info.title, "summary": info.summary}
            groups.setdefault(rel.rpartition("/")[0], []).append(entry)
    key = (lambda p: (p["title"].casefold(), p["link"])) if options.sort == "title" else (lambda p: p["link"])
    present = set(listed)
    context = [
        {
            "folder": sub,
            "title": sub,
            "link": f"{sub}/{name}" if sub and f"{prefix}{sub}/{name}" in present else None,
            "pages": sorted(entries, key=key),
        }
        for sub, entries in sorted(groups.items())
    ]
    by_shown = _digest(repr((source, options, index_path, context)))
    if memoized and listing.facts.rendered(by_shown) == now:
        _remember(listing, index_path, head, now, by_blobs, listed, blobs)
        return current
    rendered = _render(template, groups=context, options=options, index=index_path)
    text = re.sub(r"\n{3,}", "\n\n", "\n".join(line.rstrip() for line in rendered.split("\n"))).strip("\n")
    lines = text.split("\n") if text else []
    if memoized:
        out = _digest("\n".join(lines))
        listing.facts.remember_render(by_shown, out)
        _remember(listing, index_path, head, out, by_blobs, listed, blobs)
    return lines


def _shows_as_before(listing: WorktreeCorpus, index_path: str, stamp: str, listed: list[str], blobs: list[str]) -> bool:
    """Whether the block's last render (`_remember`) was into the block as it is now, with the same head
    (`stamp`), from the same pages, and each page whose blob changed since shows what its old version
    showed: then it renders the same. After a commit this asks for the titles of the edited pages only;
    the digest of what the block shows needs every page's (at 20,000 pages, most of an index-blocks run)."""
    last = listing.facts.rendered(_LAST + index_path) or ""
    old_stamp, _, rest = last.partition("\n")
    old_pages, _, old_blobs = rest.partition("\n")
    before = old_blobs.split("\0") if listed else []
    if old_stamp != stamp or old_pages != "\0".join(listed) or len(before) != len(blobs):
        return False
    return all(listing.shows_as(p, old) for p, old, new in zip(listed, before, blobs, strict=True) if old != new)


def _remember(
    listing: WorktreeCorpus, index_path: str, head: str, out: str, by_blobs: str, listed: list[str], blobs: list[str]
) -> None:
    """Remember that the block's pages at `blobs` render into the output with digest `out`: by the digest
    of their blob ids, and in full as the block's last render, which `_shows_as_before` compares with."""
    last = f"{head} {out}\n" + "\0".join(listed) + "\n" + "\0".join(blobs)
    for key, value in ((by_blobs, out), (_LAST + index_path, last)):
        if listing.facts.rendered(key) != value:
            listing.facts.remember_render(key, value)


def _under(pages: list[str], prefix: str) -> list[str]:
    """The pages (sorted) whose paths start with `prefix`: next to each other, so found by two bisections
    rather than a test of each of 20,000 pages for each index file."""
    start = bisect.bisect_left(pages, prefix)
    return pages[start : bisect.bisect_left(pages, prefix + "\U0010ffff", start)]


def _digest(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()


def rewrite(text: str, path: str, listing: WorktreeCorpus) -> str:
    """`text` with every block regenerated; lines outside the blocks are kept byte for byte."""
    blocks = find_blocks(text.replace("\r\n", "\n"), path)
    if not blocks:
        return text
    lines = text.split("\n")
    out: list[str] = []
    pos = 0
    for block in blocks:
        out.extend(lines[pos : block.start + 1])
        out.extend(render_block(listing, path, block.options, lines[block.start + 1 : block.end]))
        pos = block.end
    out.extend(lines[pos:])
    return "\n".join(out)


def refresh_file(listing: WorktreeCorpus, index_path: str, check: bool = False) -> bool:
    """Regenerate the blocks of one index file; True when its text changed (written unless `check`)."""
    try:
        text = pagetext.decode(read_page_file(listing.root, index_path))  # a symlinked index.md is refused
    except pagetext.NotText as e:
        raise BlockError(f"{index_path}: {e}; save it as UTF-8 text to have its blocks refreshed") from None
    new = rewrite(text, index_path, listing)
    if new == text:
        return False
    if not check:
        # No fsync (~10 ms of each page write): a crash leaves the old or the new listing, never a torn
        # one, and `gitwiki index-blocks` regenerates it.
        write_page_file(listing.root, index_path, new, overwrite=True, sync=False)
        listing.forget(index_path)
    return True


def create_front_index(listing: WorktreeCorpus, check: bool = False) -> str | None:
    """Create the corpus's front index (a title and empty markers) if it is missing; its path when created."""
    path = posixpath.join(listing.corpus.path, listing.config.index_blocks.filename)
    if os.path.lexists(listing.root / path):
        return None
    if not check:
        title = listing.corpus.name.replace("-", " ").replace("_", " ").title()
        write_page_file(listing.root, path, f"# {title}\n\n{START_MARKER}\n{END_MARKER}\n", overwrite=False)
    return path


def unmarked_fronts(root: Path, config: Config) -> list[str]:
    """The corpora's front index files that hold no index block: `scaffold` leaves a file that exists alone."""
    out = []
    for corpus in config.corpora:
        path = posixpath.join(corpus.path, config.index_blocks.filename)
        try:
            text = pagetext.decode(read_page_file(root, path))
        except (OSError, UnsafeFile, pagetext.NotText):
            continue
        try:
            if not find_blocks(text.replace("\r\n", "\n"), path):
                out.append(path)
        except BlockError:
            continue  # malformed: `refresh` reports it
    return out


def _ancestor_indexes(corpus: CorpusConfig, config: Config, page_path: str) -> list[str]:
    """Index file paths of every folder from `page_path`'s folder up to the corpus root, deepest first
    (`page_path` is under the corpus folder)."""
    folder = posixpath.dirname(page_path)
    out = []
    while True:
        out.append(posixpath.join(folder, config.index_blocks.filename))
        if folder == corpus.path or not folder:
            return out
        folder = posixpath.dirname(folder)


def refresh(
    root: Path,
    config: Config,
    pages: Iterable[str] | None = None,
    *,
    corpora: Iterable[CorpusConfig] | None = None,
    facts: FactsCache | None = None,
    check: bool = False,
    scaffold: bool = False,
    untracked: frozenset[str] | None = None,
) -> Refresh:
    """Regenerate the blocks of the index files above `pages` (repo-relative; None: every index file) in
    `corpora` (default: all). With `scaffold`, a corpus's missing front index is created (a title and empty
    markers) first. Files without markers are left alone; a malformed one is reported and left unchanged
    while the others are still refreshed. `untracked`: the pages git does not track that are listed (None: all;
    `WorktreeCorpus`). What the `index-blocks` hook and every page write run."""
    facts = facts if facts is not None else FactsCache()
    wanted_pages = None if pages is None else list(pages)
    changed: list[str] = []
    errors: list[GitwikiError] = []
    for corpus in config.corpora if corpora is None else corpora:
        listing = WorktreeCorpus(Path(root), corpus, config, facts, untracked)
        if wanted_pages is None:
            targets = listing.index_files()
        else:
            wanted = {i for p in wanted_pages if corpus.contains(p) for i in _ancestor_indexes(corpus, config, p)}
            present = (i for i in wanted if os.path.lexists(listing.root / i))  # a symlink is refused by name below
            targets = sorted(present, key=lambda p: (-p.count("/"), p))
        created = create_front_index(listing, check=check) if scaffold else None
        if created:
            changed.append(created)
            targets = targets if check else [*targets, created]
        for index_path in targets:
            try:
                if refresh_file(listing, index_path, check=check) and index_path not in changed:
                    changed.append(index_path)
            except (BlockError, UnsafeFile) as e:
                errors.append(e)
    return Refresh(changed, errors)


def check_above(root: Path, config: Config, corpus: CorpusConfig, page_path: str) -> None:
    """Raise what `refresh` would report for the index files above `page_path`, without rendering or writing:
    a symlinked or non-regular one (UnsafeFile), one that is not text or has a malformed block (BlockError).
    What a page write checks before it touches anything."""
    for index_path in _ancestor_indexes(corpus, config, page_path):
        if not os.path.lexists(Path(root) / index_path):
            continue
        try:
            find_blocks(pagetext.decode(read_page_file(Path(root), index_path)).replace("\r\n", "\n"), index_path)
        except pagetext.NotText as e:
            raise BlockError(f"{index_path}: {e}; save it as UTF-8 text to have its blocks refreshed") from None


TEMPLATE_FIX = "set [index_blocks] template to a template file inside the repository in .gitwiki.toml"


def template_dirs(root: Path) -> tuple[str, ...]:
    """Where templates are looked up: the repo's `.gitwiki/templates/`, then gitwiki's own."""
    return (str(root / ".gitwiki" / "templates"), str(shipped_dir()))


def _template(root: Path, configured: str | None) -> Template:
    if configured:
        from gitwiki.fs import resolved

        # The path comes from the checkout's config, and the template's text ends up in a page: a template
        # outside the repository (/etc/passwd, a symlink out) would copy that file into the wiki.
        target = Path(resolved(root / configured, [root], what="[index_blocks] template", fix=TEMPLATE_FIX))
        if not target.is_file():
            raise UsageError(
                f"[index_blocks] template {configured!r} not found under {root}; fix the path in .gitwiki.toml"
            )
        return Template((str(target.parent),), target.name, target, configured)
    search = template_dirs(root)
    found = next(f for d in search if (f := Path(d, TEMPLATE_NAME)).is_file())  # jinja2's order; the shipped one exists
    return Template(search, TEMPLATE_NAME, found, TEMPLATE_NAME)


def _render(template: Template, **context: Any) -> str:
    import jinja2  # only when a block is really rendered: most hook runs find the render memoized

    try:
        return environment(template.search).get_template(template.name).render(**context)
    except jinja2.TemplateError as e:
        where = f"{getattr(e, 'filename', None) or template.shown}:{getattr(e, 'lineno', '?')}"
        raise UsageError(f"index block template {where}: {e}; fix the template") from None
