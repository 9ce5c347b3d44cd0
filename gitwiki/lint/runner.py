"""Run the rules: one page (`lint_text`, what the MCP server calls) or files of a repo against its staged tree."""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from gitwiki import config as config_mod
from gitwiki import pagetext
from gitwiki.config import Config, CorpusConfig, matches, normalize_corpus_path, select
from gitwiki.errors import GitwikiError
from gitwiki.fs import read_page_file
from gitwiki.git import gitcli
from gitwiki.git.gitcli import Checkout
from gitwiki.lint.registry import RULES, Context, Finding
from gitwiki.markdown.document import Document, parse
from gitwiki.markdown.frontmatter import YamlReader
from gitwiki.pages import pagefacts, sites
from gitwiki.pages.pagefacts import FactsCache, link_name

ORPHAN = "GW007"
# Memory topic pages (docs/memory.md) are gitwiki's pages of entries: what a note says, its links and headings
# included, is the note's own, carried from wherever it was written (another checkout, helix), and a topic grows
# past one page's size by design. The rules about content and size do not apply there (a migrated memory of 996
# notes failed lint on 51 links its notes carried); those about the file do (front matter, H1, readable text,
# the search limit, orphans).
MEMORY_EXEMPT = frozenset({"GW001", "GW002", "GW003", "GW005", "GW006", "GW011"})
# What `link_name` strips or decodes: a fragment, a query, percent-escapes, a trailing slash.
_NOT_PLAIN = re.compile(r"[%#?]|/\Z").search
UNREADABLE = "GW012"


class LintRun(NamedTuple):
    findings: list[Finding]
    files: int  # pages linted


def corpus_of(config: Config, path: str) -> CorpusConfig | None:
    return next((c for c in config.corpora if matches(c, path)), None)


def memory_folder(config: Config) -> str | None:
    """The repo-relative folder of the memory pages, `wiki/memory/`; None when [memory] names none that works
    (the memory commands say why)."""
    try:
        folder = normalize_corpus_path(config.memory.dir, "[memory] dir")
        return f"{config.corpus(config.memory.corpus).prefix}{folder}/" if folder else None
    except GitwikiError:
        return None


def disabled_codes(config: Config, corpus: CorpusConfig | None) -> set[str]:
    """Codes turned off in [lint] and the corpus's lint_disable; rule names (`orphan-page`) work too."""
    names = {rule.name: code for code, rule in RULES.items()}
    raw = (*config.lint.disable, *(corpus.lint_disable if corpus else ()))
    return {names.get(v.strip().lower(), v.strip().upper()) for v in raw}


def lint_text(
    path: str,
    text: str,
    pages: set[str],
    config: Config,
    *,
    anchors: Callable[[str], Iterable[str] | None] | None = None,
    linked: set[str] | None = None,
    read_yaml: YamlReader | None = None,
    titled: frozenset[str] = frozenset(),
    moved: Mapping[str, str] | None = None,
    size: int | None = None,
) -> list[Finding]:
    """Findings for one page at repo-relative `path`, its links resolved against `pages`.

    `anchors` gives another page's anchors (None when it cannot be read; `pagefacts.anchors` extracts
    them from a text), so `other.md#anchor` links can be checked; `linked` (the pages some other page links
    to) enables the orphan check, which needs the whole corpus. `read_yaml` reads the front matter (see
    `split_front_matter`). `titled` are the pages a docs site's navigation gives a title, `moved` the
    Docusaurus docs a front-matter slug or id places elsewhere (`sites.routes`).
    """
    doc = parse(path, text, read_yaml)
    return lint_document(doc, pages, config, anchors=anchors, linked=linked, titled=titled, moved=moved, size=size)


def lint_document(
    doc: Document,
    pages: set[str],
    config: Config,
    *,
    anchors: Callable[[str], Iterable[str] | None] | None = None,
    linked: set[str] | None = None,
    titled: frozenset[str] = frozenset(),
    moved: Mapping[str, str] | None = None,
    size: int | None = None,
) -> list[Finding]:
    """`lint_text` of a page already parsed (`markdown.document.parse`); `size`: its bytes, when `doc` is its head."""
    path = doc.path
    corpus = corpus_of(config, path)
    skip = disabled_codes(config, corpus) | doc.disabled
    if corpus is not None:
        skip |= sites.exempt(corpus.site, corpus.prefix, path)
    if (memory := memory_folder(config)) is not None and path.startswith(memory):
        skip |= MEMORY_EXEMPT
    ctx = Context(pages, config, corpus, anchors, linked, titled, moved, size)
    out = [
        Finding(path, p.line, p.col, code, rule.severity, p.message, p.hint or rule.hint)
        for code, rule in RULES.items()
        if code not in skip
        for p in rule.check(doc, ctx)
    ]
    return sorted(out, key=lambda f: (f.line, f.col, f.code))


def unreadable(path: str, why: str, config: Config) -> list[Finding]:
    """The one finding for a page that cannot be linted (not text, or a parser failure), unless disabled."""
    if UNREADABLE in disabled_codes(config, corpus_of(config, path)):
        return []
    rule = RULES[UNREADABLE]
    return [Finding(path, 1, 1, UNREADABLE, rule.severity, f"page is not linted: {why}", rule.hint)]


def lint_page(path: str, data: bytes, pages: set[str], config: Config, **context: Any) -> list[Finding]:
    """`lint_text` of a page's bytes; a page that is not text, or that a parser fails on, is one GW012 finding
    (one bad page costs that page, never the run)."""
    # Up to what search indexes: a 31 MB page took lint 17 s and 1.3 GB in a pre-commit hook; GW011 and GW013 say
    # how big it is, and what is past the limit is not searched either
    cap = config.search.max_page_bytes
    if cap and len(data) > cap:
        context = {**context, "size": len(data)}
        data = pagetext.head(data, cap)
    findings, why = pagetext.attempt(lambda: lint_text(path, pagetext.decode(data), pages, config, **context))
    return findings if findings is not None else unreadable(path, why or "", config)


def staged_pages(root: Path, config: Config) -> dict[str, str]:
    """Repo-relative path → staged blob id for every page of every corpus (symlinks and submodules left out)."""
    staged = gitcli.staged_files(root, (c.path for c in config.corpora))
    return {path: staged[path] for corpus in config.corpora for path in select(corpus, staged)}


def link_names(wanted: Iterable[str], config: Config) -> set[str]:
    """The `pagefacts.link_name`s a link must end in to reach a page in `wanted`: its file name, for an
    index or README its folder's name too, and the folder links ".", ".." and "" (`dir/`)."""
    fronts = (config.index_blocks.filename, "README.md")
    names = {"", ".", ".."}
    for path in wanted:
        name = posixpath.basename(path)
        names.add(name)
        names.add(posixpath.splitext(name)[0])  # Docusaurus links a page without its extension
        if name in fronts or posixpath.splitext(name)[0] in ("index", "README"):
            names.add(posixpath.basename(posixpath.dirname(path)))
    return names


def moved_names(moved: Mapping[str, str] | None, wanted: Iterable[str]) -> set[str]:
    """The last segments of the site paths that reach a page of `wanted` moved by its front matter (`/docs/` for
    the doc at `slug: /`)."""
    wanted = set(wanted)
    return {route.rpartition("/")[2] or "docs" for route, page in (moved or {}).items() if page in wanted}


def linked_pages(
    pages: Iterable[str],
    links: Callable[[str], list[str]],
    config: Config,
    wanted: set[str],
    moved: Mapping[str, str] | None = None,
) -> set[str]:
    """The pages in `wanted` that another page links to (a folder link counts for the folder's index and README).

    `links` gives a page's relative link targets as written. A link can only reach a wanted page if it ends
    in one of `link_names(wanted)`, so only those links are resolved: one set lookup per link, whatever the
    number of wanted pages.
    """
    fronts = (config.index_blocks.filename, "README.md")
    names = link_names(wanted, config) | moved_names(moved, wanted)
    linked: set[str] = set()
    for source in pages:
        for raw in links(source):
            # A plain link's name is its last segment: `link_name` of every link of a 20,000-page front index
            # was 28 ms of a 5-file lint.
            name = link_name(raw) if _NOT_PLAIN(raw) else raw.rpartition("/")[2]
            if name not in names:
                continue
            corpus = corpus_of(config, source)
            site, prefix = (corpus.site, corpus.prefix) if corpus is not None else ("github", "")
            target = sites.resolve(site, prefix, source, raw, wanted, moved)
            if target is None or not target.path or target.path == source:
                continue
            linked.update({target.path, *(f"{target.path}/{front}" for front in fronts)} & wanted)
    return linked


def lint_repo(checkout: Checkout, config: Config, files: list[str] | None = None) -> LintRun:
    """Lint `files` (repo-relative; default: every staged page) from the worktree, resolving links against
    the staged pages plus `files`. Files outside every corpus are skipped.

    Other pages are seen through their cached facts (`gitwiki.pages.pagefacts`): only versions not seen before
    are read, the staged ones in one `git cat-file --batch`.
    """
    root = checkout.root
    blobs = staged_pages(root, config)
    # A page staged and then removed from disk (the removal not staged) has nothing to lint in the worktree;
    # links to it still resolve against the staged pages.
    if files is None:
        targets = sorted(f for f in blobs if os.path.lexists(root / f))
    else:
        targets = sorted({f for f in files if corpus_of(config, f) and os.path.lexists(root / f)})
    data = {path: read_page_file(root, path) for path in targets}  # a symlink or hard link is refused by name
    keys = {**blobs, **{path: gitcli.blob_id(raw) for path, raw in data.items()}}  # a linted page is read from disk
    raws = {keys[path]: raw for path, raw in data.items()}
    facts = FactsCache.load(config_mod.index_dir(config, root, checkout.common_dir))

    def text(blob: str) -> str:  # pagetext.NotText for a page that is not text: its facts say so
        if blob not in raws:
            raws.update(gitcli.read_blobs(root, [blob]))
        return pagefacts.decode(raws[blob])

    def fact(field: str, path: str) -> list[Any] | None:
        return facts.get(field, keys[path], lambda: text(keys[path]))

    moved = {
        route: page
        for corpus in config.corpora
        if corpus.site == "docusaurus"
        for route, page in sites.routes(root, corpus.site, corpus.path, keys).items()
    }
    linked = None
    if any(ORPHAN not in disabled_codes(config, c) for c in config.corpora):
        absent = set(facts.missing("links", set(keys.values())))
        raws.update(gitcli.read_blobs(root, absent - raws.keys()))
        for path in keys:  # pages new to the cache; the others' links are looked up by name below
            if keys[path] in absent:
                fact("links", path)
        # Only pages with a link ending in a linted page's name can make it no orphan: at 20,000 pages
        # reading every page's links was most of a 5-file lint.
        sources = facts.linking(link_names(targets, config) | moved_names(moved, targets))
        linked = linked_pages(
            sorted(p for p, b in keys.items() if b in sources),
            lambda p: fact("links", p) or [],
            config,
            set(targets),
            moved,
        )
        for corpus in config.corpora:  # the pages a docs site's own navigation lists (mkdocs nav, sidebars)
            if corpus.site != "github":
                linked |= sites.nav_pages(root, corpus.site, corpus.path, targets)
    titled = frozenset(
        page
        for corpus in config.corpora
        # mkdocs renders a nav title as the page's H1; mdBook shows it in the sidebar, and a sub-chapter starts at
        # `##` on purpose (The Rust Book: 87 pages). gitwiki's search and index blocks take the title from both.
        if corpus.site in ("mkdocs", "mdbook")
        for page in sites.nav_titles(root, corpus.site, corpus.path)
    )
    if len(targets) > pagefacts.BULK:  # front matter read before, in one query rather than one a page
        facts.preload("yaml")
    pages = set(keys)
    findings = [
        f
        for path in targets
        for f in lint_page(
            path,
            data[path],
            pages,
            config,
            anchors=lambda other: fact("anchors", other),
            linked=linked,
            read_yaml=facts.read_yaml,
            titled=titled,
            moved=moved,
        )
    ]
    facts.save()
    return LintRun(findings, len(targets))
