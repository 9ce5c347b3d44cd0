"""The built-in lint rules, one small class per concept. docs/lint-rules.md shows each with an example."""

from __future__ import annotations

import difflib
import posixpath
import re
from collections.abc import Iterable

from gitwiki.config import LintConfig, matches
from gitwiki.lint.registry import Context, Problem, register
from gitwiki.markdown import PAGE_SUFFIXES
from gitwiki.markdown.document import Document
from gitwiki.markdown.links import ANY_ANCHOR, Target, has_generated_content
from gitwiki.pages import sites

_YAML_LINE = re.compile(r"^line (\d+): ")


def resolve(doc: Document, raw: str, ctx: Context) -> Target | None:
    """Where a link of `doc` points, as the corpus's site generator resolves it (`gitwiki.pages.sites`)."""
    site, prefix = (ctx.corpus.site, ctx.corpus.prefix) if ctx.corpus is not None else ("github", "")
    return sites.resolve(site, prefix, doc.path, raw, ctx.pages, ctx.moved)


@register
class EmptyLink:
    code, name, severity = "GW001", "empty-link", "error"
    summary = "a link or image with an empty destination, e.g. [text]()"
    hint = "put the page path or URL between the parentheses, or drop the link markup"

    def check(self, doc: Document, ctx: Context) -> Iterable[Problem]:
        for link in doc.links:
            if not link.target.strip():
                yield Problem(link.line, link.col, f"{link.kind} [{link.text}] has an empty destination")


@register
class EmptyMermaid:
    code, name, severity = "GW002", "empty-mermaid", "error"
    summary = "a ```mermaid fence with no diagram in it"
    hint = "write the diagram source inside the fence, or delete the fence"

    def check(self, doc: Document, ctx: Context) -> Iterable[Problem]:
        for fence in doc.fences:
            if fence.lang == "mermaid" and not fence.content.strip():
                yield Problem(fence.line, fence.col, "mermaid diagram is empty")


@register
class HeadingJump:
    code, name, severity = "GW003", "heading-jump", "error"
    summary = "a heading more than one level deeper than the one before it (H1 then H3)"
    hint = "use the next level down, or add the missing level in between"

    def check(self, doc: Document, ctx: Context) -> Iterable[Problem]:
        for prev, h in zip(doc.headings, doc.headings[1:], strict=False):
            if h.level > prev.level + 1:
                yield Problem(
                    h.line,
                    h.col,
                    f"heading level jumps from H{prev.level} to H{h.level}",
                    f"make this an H{prev.level + 1}",
                )


@register
class MultipleH1:
    code, name, severity = "GW004", "multiple-h1", "error"
    summary = "more than one H1 on a page (the H1 is the page title)"
    hint = "keep one H1 as the title and make the others H2"

    def check(self, doc: Document, ctx: Context) -> Iterable[Problem]:
        h1s = [h for h in doc.headings if h.level == 1]
        for h in h1s[1:]:
            yield Problem(h.line, h.col, f"second H1 on the page (the first is on line {h1s[0].line})")


@register
class BrokenLink:
    code, name, severity = "GW005", "broken-link", "error"
    summary = "a relative link to a page that is not in the corpus (as staged for commit)"
    hint = "fix the path, or create the page and `git add` it (links are checked against the staged tree)"

    def check(self, doc: Document, ctx: Context) -> Iterable[Problem]:
        for link in doc.links:
            target = resolve(doc, link.target, ctx)
            if target is None or target.path is None or not link.target.strip():
                continue
            if target.outside:
                yield Problem(link.line, link.col, f"link {link.target!r} points above the repository root")
            elif _missing(target.path, link.target, ctx):
                yield Problem(
                    link.line,
                    link.col,
                    f"link to missing page {link.target!r} (resolves to {target.path})",
                    _suggest(doc.path, target.path, ctx.pages),
                )


def _missing(path: str, raw: str, ctx: Context) -> bool:
    """Only pages and folders of a configured corpus can be checked: other files are not in `pages`."""
    corpora = ctx.config.corpora
    if path.endswith(PAGE_SUFFIXES):
        return path not in ctx.pages and any(matches(c, path) for c in corpora)
    if raw.partition("#")[0].partition("?")[0].endswith("/"):  # a folder link: GitHub lists the folder
        prefix = path + "/" if path else ""
        in_corpus = any(c.contains(prefix) for c in corpora)
        return in_corpus and not any(p.startswith(prefix) for p in ctx.pages)
    return False


def _suggest(source: str, missing: str, pages: set[str]) -> str | None:
    close = difflib.get_close_matches(missing, sorted(pages), n=1, cutoff=0.75)
    if not close:
        return None
    rel = posixpath.relpath(close[0], posixpath.dirname(source) or ".")
    return f"did you mean {rel!r}? (or create {missing} and `git add` it)"


@register
class BrokenAnchor:
    code, name, severity = "GW006", "broken-anchor", "error"
    summary = "a #fragment that matches no heading (GitHub slug rules) or HTML id on the target page"
    hint = "link to an existing heading: lower case, punctuation dropped, spaces as '-', repeats get -1, -2"

    def check(self, doc: Document, ctx: Context) -> Iterable[Problem]:
        others: dict[str, set[str] | None] = {}
        for link in doc.links:
            target = resolve(doc, link.target, ctx)
            if target is None or not target.fragment:
                continue
            path = target.path if target.path is not None else doc.path
            anchors: set[str] | None
            if path == doc.path:
                anchors = doc.anchors
            elif path in ctx.pages and ctx.anchors is not None:
                if path not in others:
                    found = ctx.anchors(path)
                    others[path] = None if found is None else set(found)
                anchors = others[path]
            else:
                continue  # a missing page is GW005's finding
            # A page with generated content (an include, a directive) has anchors no parse of its source shows.
            if anchors is None or ANY_ANCHOR in anchors:
                continue
            site = ctx.corpus.site if ctx.corpus is not None else "github"
            if sites.anchor_key(site, target.fragment) not in {sites.anchor_key(site, a) for a in anchors}:
                close = difflib.get_close_matches(target.fragment.lower(), sorted(anchors), n=1, cutoff=0.6)
                where = "this page" if path == doc.path else path
                yield Problem(
                    link.line,
                    link.col,
                    f"no heading or anchor #{target.fragment} in {where}",
                    f"did you mean #{close[0]}?" if close else None,
                )


@register
class Orphan:
    code, name, severity = "GW007", "orphan-page", "warning"
    summary = "a page that no index and no other page links to"
    hint = "link it from an index.md (gitwiki index-blocks lists every page) or from a related page"

    def check(self, doc: Document, ctx: Context) -> Iterable[Problem]:
        if ctx.linked is None or doc.path in ctx.linked or is_entry_page(doc.path, ctx):
            return
        yield Problem(1, 1, "no page or index links to this page")


def is_entry_page(path: str, ctx: Context) -> bool:
    """The corpus's front page (its index file or README) is where readers start; nothing need link to it. In a
    docs site every folder's index or README heads its folder, and the generator's own files (mdBook's
    SUMMARY.md) are named by it."""
    base = ctx.corpus.prefix if ctx.corpus is not None else ""
    if ctx.corpus is not None and sites.is_front_page(ctx.corpus.site, base, path):
        return True
    return path in (base + ctx.config.index_blocks.filename, base + "README.md")


@register
class FrontMatterYaml:
    code, name, severity = "GW008", "front-matter-yaml", "error"
    summary = "front matter between --- lines that is not valid YAML (or not a mapping)"
    hint = "fix the YAML between the --- lines; quote values that contain ': ' or start with '#', '@', '`'"

    def check(self, doc: Document, ctx: Context) -> Iterable[Problem]:
        error = doc.front_matter.error
        if error:
            m = _YAML_LINE.match(error)
            yield Problem(
                int(m.group(1)) if m else 1, 1, f"front matter is not valid YAML: {error[m.end() if m else 0 :]}"
            )


# ---- wiki conventions (docs/conventions.md): one titled topic per kebab-case file ---------------------------

_SLUG = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
_COMMENT = re.compile(r"^\s*<!--.*-->\s*$")


@register
class TitleFirst:
    code, name, severity = "GW009", "title-first", "warning"
    summary = "the first non-blank line (after front matter and one-line comments) is not a `# Title` heading"
    hint = "start the page with `# Title`: search results, index blocks and agents take the title from it"

    def check(self, doc: Document, ctx: Context) -> Iterable[Problem]:
        if (
            ctx.corpus is not None
            and ctx.corpus.site != "github"
            and (doc.front_matter.meta.get("title") or doc.path in ctx.titled)
        ):
            return  # a docs site renders the front matter's (or its nav's) title as the page's H1
        body = doc.front_matter.body.split("\n")
        # A one-line HTML comment may come first: `<!-- gitwiki: disable=… -->` usually sits on top.
        first = next((i for i, line in enumerate(body) if line.strip() and not _COMMENT.match(line)), None)
        if first is None:
            yield Problem(1, 1, "the page is empty; give it a `# Title` line and some text")
        elif not re.match(r"^ {0,3}# ", body[first]) and not has_generated_content(body[first]):
            # (a page that starts with an include, `--8<-- "CONTRIBUTING.md"`, takes its title from what it includes)
            line = first + doc.front_matter.body_line
            yield Problem(line, 1, f"the page starts with {body[first].strip()[:40]!r} instead of a `# Title` line")


@register
class KebabCaseName:
    code, name, severity = "GW010", "kebab-case-name", "warning"
    summary = "a file name that is not a lower-case kebab-case slug, e.g. `Deploy Guide.md` or `deploy_guide.md`"
    hint = "rename it to lower-case words joined by '-' (git mv), e.g. deploy-guide.md, and fix the links to it"

    def check(self, doc: Document, ctx: Context) -> Iterable[Problem]:
        stem = posixpath.splitext(posixpath.basename(doc.path))[0]
        # A docs site's file names are its published URLs: renaming one breaks every link from outside.
        if ctx.corpus is not None and ctx.corpus.site != "github":
            return
        if not _SLUG.match(stem) and not is_entry_page(doc.path, ctx):
            slug = re.sub(r"[^a-z0-9]+", "-", stem.lower()).strip("-") or "page"
            yield Problem(1, 1, f"file name {stem!r} is not a kebab-case slug", f"rename it to {slug}.md (git mv)")


DEFAULT_MAX_PAGE_BYTES = LintConfig().max_page_bytes


@register
class PageSize:
    code, name, severity = "GW011", "page-size", "warning"
    summary = "a page over [lint] max_page_bytes (default 20000): probably more than one topic"
    hint = "split it into one page per topic and link them (raise [lint] max_page_bytes if it really is one)"

    def check(self, doc: Document, ctx: Context) -> Iterable[Problem]:
        limit = ctx.config.lint.max_page_bytes
        # A docs site publishes its reference pages whole on purpose (a configuration reference, release notes):
        # there the default limit is off, and only a limit the user set applies. Search chunks such a page by
        # heading either way, and GW013 still reports a page past what search indexes.
        if ctx.corpus is not None and ctx.corpus.site != "github" and limit == DEFAULT_MAX_PAGE_BYTES:
            return
        size = ctx.page_bytes(doc)
        if limit and size > limit:
            yield Problem(1, 1, f"the page is {size} bytes, over the {limit}-byte limit for one topic")


@register
class UnreadablePage:
    code, name, severity = "GW012", "unreadable-page", "error"
    summary = "a page that is not UTF-8 text (NUL or control bytes, invalid UTF-8) or cannot be parsed"
    hint = "save the page as UTF-8 text, or move the file out of the corpus (the index and index blocks skip it)"

    def check(self, doc: Document, ctx: Context) -> Iterable[Problem]:
        return ()  # such a page never becomes a Document: the runner reports it (`runner.unreadable`)


@register
class SearchLimit:
    # An error, not a warning: pre-commit shows a passing hook's output to nobody, and this page's tail is
    # never found by search.
    code, name, severity = "GW013", "over-search-limit", "error"
    summary = "a page over [search] max_page_bytes (default 1000000): search indexes only the lines within it"
    hint = (
        "split it into pages that link each other (or raise [search] max_page_bytes and run `gitwiki index --rebuild`)"
    )

    def check(self, doc: Document, ctx: Context) -> Iterable[Problem]:
        limit = ctx.config.search.max_page_bytes
        size = ctx.page_bytes(doc)
        if size > limit:
            yield Problem(1, 1, f"the page is {size} bytes; search indexes only its first {limit} bytes")
