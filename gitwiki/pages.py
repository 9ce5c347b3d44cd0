"""Pages on disk, addressed relative to their corpus: safe path resolution, reads, writes, footnotes, listings.

Every path an agent or a user hands in goes through `resolve`, which refuses anything that could reach
outside the corpus (`..`, absolute paths, symlinks pointing elsewhere, `.git`) or that is not a page of
the corpus (other extensions, excluded by its globs). `add_page` and `delete_page` are the whole write
path the MCP server offers: the file, the ancestor index blocks, the index and the optional commit.
"""

from __future__ import annotations

import fnmatch
import re
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, NamedTuple

import pygit2

from gitwiki.config import CorpusConfig, matches
from gitwiki.errors import NotFoundError, UsageError
from gitwiki.fs import atomic_write
from gitwiki.gitrepo import GitRepo

if TYPE_CHECKING:
    from gitwiki.wiki import Wiki

MARKDOWN_SUFFIXES = (".md", ".markdown")


class PageRef(NamedTuple):
    corpus: str
    path: str  # relative to the corpus root, POSIX separators
    repo_path: str  # relative to the repo root (the form git, the index and `ground` use)
    file: Path  # absolute


class PageText(NamedTuple):
    path: str
    absolute_path: str
    text: str  # the requested lines, verbatim (line endings kept)
    start_line: int
    end_line: int
    total_lines: int


class FileEntry(NamedTuple):
    path: str  # relative to the corpus root
    absolute_path: str


class WriteReport(NamedTuple):
    corpus: str
    path: str
    absolute_path: str
    action: str  # "created", "overwritten" or "deleted"
    index_files: list[str]  # ancestor index.md files regenerated or scaffolded (repo-relative)
    findings: list[dict]  # advisory lint findings for the written page
    commit: str | None  # the commit made when [mcp] commit_writes is on
    indexed_commit: str  # the commit the index answers for after the write
    dirty: list[str]  # uncommitted pages now folded into search


def corpus_dir(root: Path, corpus: CorpusConfig) -> Path:
    return root / corpus.path if corpus.path else root


def resolve(root: Path, corpus: CorpusConfig, path: str, *, for_write: bool = False) -> PageRef:
    """Check a corpus-relative page path and locate it; raise UsageError saying why it is refused."""
    if not isinstance(path, str) or not path.strip():
        raise UsageError("the page path is empty; give a path relative to the corpus, e.g. guides/deploy.md")
    if "\x00" in path:
        raise UsageError("the page path contains a NUL byte")
    raw = path.replace("\\", "/")
    if raw.startswith("/") or re.match(r"^[A-Za-z]:", raw):
        raise UsageError(f"{path!r} is absolute; give a path relative to corpus {corpus.name!r}, e.g. guides/deploy.md")
    parts = [p for p in raw.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise UsageError(f"{path!r} contains '..'; paths must stay inside corpus {corpus.name!r}")
    if ".git" in parts:
        raise UsageError(f"{path!r} points into .git; gitwiki only touches wiki pages")
    rel = "/".join(parts)
    if PurePosixPath(rel).suffix.lower() not in MARKDOWN_SUFFIXES:
        raise UsageError(f"{path!r} is not a markdown page; use a {' or '.join(MARKDOWN_SUFFIXES)} file")
    base = corpus_dir(root, corpus)
    if corpus.path and rel.startswith(corpus.path + "/") and not (base / corpus.path).is_dir():
        # `ground` answers with repo-relative paths. Reading one back is unambiguous here; writing it
        # verbatim would nest the corpus inside itself, so that is refused with the path to use.
        if for_write:
            raise UsageError(
                f"{path!r} starts with the corpus folder {corpus.path!r}; paths are relative to the corpus, "
                f"use {rel[len(corpus.path) + 1 :]!r}"
            )
        rel = rel[len(corpus.path) + 1 :]
    repo_path = f"{corpus.path}/{rel}" if corpus.path else rel
    if not matches(corpus, repo_path):
        raise UsageError(
            f"{path!r} is not part of corpus {corpus.name!r} (include {list(corpus.include)}, exclude "
            f"{list(corpus.exclude)})"
        )
    file = base / rel
    _check_inside(base, file, path, corpus.name)
    if for_write and file.is_symlink():
        raise UsageError(f"{path!r} is a symlink; gitwiki writes regular files only")
    return PageRef(corpus.name, rel, repo_path, file)


def _check_inside(base: Path, file: Path, shown: str, corpus: str) -> None:
    """Refuse a path whose nearest existing ancestor (or itself) resolves outside the corpus (symlinks)."""
    real_base = base.resolve()
    probe = file
    while not probe.exists() and not probe.is_symlink() and probe != base:
        probe = probe.parent
    real = probe.resolve()
    if real != real_base and real_base not in real.parents:
        raise UsageError(f"{shown!r} leads outside corpus {corpus!r} through a symlink; refusing it")


def read_page(ref: PageRef, start_line: int | None = None, end_line: int | None = None, max_bytes: int = 0) -> PageText:
    """The page's lines `start_line..end_line` (1-based, inclusive), verbatim."""
    data = _read_bytes(ref)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise UsageError(f"{ref.path!r} is not valid UTF-8 (byte {e.start}); fix its encoding") from None
    return page_lines(ref.path, str(ref.file), text, start_line, end_line, max_bytes)


def page_lines(
    path: str, absolute: str, text: str, start_line: int | None, end_line: int | None, max_bytes: int = 0
) -> PageText:
    """Lines `start_line..end_line` of a page's `text` (also for pages read from git objects, not from disk)."""
    lines = text.splitlines(keepends=True)
    total = len(lines)
    start = 1 if start_line is None else start_line
    end = total if end_line is None else min(end_line, total)
    if start < 1 or (end_line is not None and end_line < start):
        raise UsageError(f"bad line range {start_line}..{end_line}; lines are 1-based and start_line ≤ end_line")
    if start > max(total, 1):
        raise UsageError(f"{path!r} has {total} lines; start_line {start} is past the end")
    chosen = "".join(lines[start - 1 : end])
    if max_bytes and len(chosen.encode("utf-8")) > max_bytes:
        raise UsageError(
            f"lines {start}-{end} of {path!r} are over the {max_bytes}-byte limit ([mcp] max_page_bytes); "
            "ask for a smaller line range"
        )
    return PageText(path, absolute, chosen, start, max(end, start - 1), total)


def _read_bytes(ref: PageRef) -> bytes:
    if not ref.file.is_file():
        raise NotFoundError(f"no page {ref.path!r} in corpus {ref.corpus!r}; list_files shows the pages there")
    try:
        return ref.file.read_bytes()
    except OSError as e:
        raise UsageError(f"cannot read {ref.path!r} ({e.strerror})") from None


def write_page(ref: PageRef, content: str, *, overwrite: bool = False, max_bytes: int = 0) -> bool:
    """Write `content` atomically; returns whether the page was created (False: overwritten)."""
    size = len(content.encode("utf-8"))
    if max_bytes and size > max_bytes:
        raise UsageError(
            f"content is {size} bytes, over the {max_bytes}-byte limit ([mcp] max_page_bytes); split the page"
        )
    exists = ref.file.exists()
    if exists and not overwrite:
        raise UsageError(f"{ref.path!r} already exists in corpus {ref.corpus!r}; pass overwrite: true to replace it")
    if exists and not ref.file.is_file():
        raise UsageError(f"{ref.path!r} exists and is not a regular file")
    atomic_write(ref.file, content)
    return not exists


def remove_page(ref: PageRef) -> None:
    if not ref.file.is_file():
        raise NotFoundError(f"no page {ref.path!r} in corpus {ref.corpus!r}; nothing to delete")
    ref.file.unlink()


# ---- footnotes ---------------------------------------------------------------------------------

_FOOTNOTE_DEF = re.compile(r"^ {0,3}\[\^([^\]\s]+)\]:[ \t]?(.*)$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def footnotes(text: str) -> dict[str, tuple[int, str]]:
    """Footnote label → (1-based line of its definition, its text with continuation lines joined).

    Definitions inside code fences do not count; the first definition of a label wins, as in CommonMark.
    """
    found: dict[str, tuple[int, list[str]]] = {}
    fence: str | None = None
    label: str | None = None
    for i, line in enumerate(text.splitlines(), 1):
        marker = _FENCE.match(line)
        if marker and (fence is None or (marker.group(1)[0] == fence[0] and len(marker.group(1)) >= len(fence))):
            fence = None if fence else marker.group(1)
            label = None
        elif fence:
            continue
        elif definition := _FOOTNOTE_DEF.match(line):
            label = definition.group(1) if definition.group(1) not in found else None
            if label:
                found[label] = (i, [definition.group(2)])
        elif label is not None and (line.startswith(("    ", "\t")) or not line.strip()):
            found[label][1].append(line.strip())
        else:
            label = None
    return {key: (line, "\n".join(body).strip()) for key, (line, body) in found.items()}


def footnote(text: str, label: str, page: str) -> tuple[int, str]:
    notes = footnotes(text)
    if label not in notes:
        known = ", ".join(f"[^{k}]" for k in notes) or "none"
        raise NotFoundError(f"{page!r} has no footnote [^{label}]; its footnotes: {known}")
    return notes[label]


# ---- listings ----------------------------------------------------------------------------------


def list_files(root: Path, corpus: CorpusConfig, repo_paths, glob: str | None = None) -> list[FileEntry]:
    """The corpus pages among `repo_paths` (e.g. a search view's pages), corpus-relative, sorted."""
    prefix = corpus.path + "/" if corpus.path else ""
    base = corpus_dir(root, corpus)
    out = []
    for repo_path in sorted(repo_paths):
        rel = repo_path[len(prefix) :]
        if glob and not (
            fnmatch.fnmatchcase(rel, glob) or (glob.startswith("**/") and fnmatch.fnmatchcase(rel, glob[3:]))
        ):
            continue
        out.append(FileEntry(rel, str(base / rel)))
    return out


def tree(root: Path, corpus: CorpusConfig, files: list[FileEntry], under: str = "", depth: int | None = None) -> dict:
    """`files` as nested `{path, absolute_path, pages, files, subdirs}` nodes; only folders holding pages appear.

    `pages` counts the pages below a node; folders deeper than `depth` are listed without their contents.
    """
    under = "/".join(p for p in under.replace("\\", "/").split("/") if p not in ("", "."))
    if ".." in under.split("/") or under.startswith("/"):
        raise UsageError(f"{under!r} must be a folder relative to corpus {corpus.name!r}, without '..'")
    base = corpus_dir(root, corpus)
    chosen = [f for f in files if not under or f.path.startswith(under + "/")]
    if under and not chosen:
        raise NotFoundError(
            f"no pages under {under!r} in corpus {corpus.name!r}; list_tree without path shows the folders"
        )
    node = _node(base, under)
    for f in chosen:
        rel_parts = f.path[len(under) + 1 if under else 0 :].split("/")
        current, level = node, 0
        current["pages"] += 1
        for folder in rel_parts[:-1]:
            level += 1
            child = next((s for s in current["subdirs"] if s["path"].rsplit("/", 1)[-1] == folder), None)
            if child is None:
                child = _node(base, f"{current['path']}/{folder}" if current["path"] else folder)
                current["subdirs"].append(child)
            current = child
            current["pages"] += 1
            if depth is not None and level >= depth:
                break
        else:
            current["files"].append(f._asdict())
    return node


def _node(base: Path, rel: str) -> dict:
    return {"path": rel, "absolute_path": str(base / rel if rel else base), "pages": 0, "files": [], "subdirs": []}


# ---- the write path ----------------------------------------------------------------------------


def add_page(wiki: Wiki, corpus: str | None, path: str, content: str, overwrite: bool = False) -> WriteReport:
    """Write a page, refresh its ancestor index blocks, commit if configured, fold it into the index, lint it."""
    c = wiki.corpus(corpus)
    ref = resolve(wiki.root, c, path, for_write=True)
    with wiki.store.lock():  # one writer at a time: ancestor index.md files are shared by every page below them
        created = write_page(ref, content, overwrite=overwrite, max_bytes=wiki.config.mcp.max_page_bytes)
        index_files = _refresh_ancestors(wiki, c, ref, scaffold=True)
        commit = _commit(wiki, "add_markdown", ref, index_files)
    view = wiki.view(c.name)  # parses just the new page versions (the worktree overlay)
    findings = _lint(wiki, ref, content, set(view.pages))
    return _report(ref, "created" if created else "overwritten", index_files, findings, commit, view)


def delete_page(wiki: Wiki, corpus: str | None, path: str) -> WriteReport:
    """Delete a page, refresh its ancestor index blocks, commit if configured, prune its index rows."""
    c = wiki.corpus(corpus)
    ref = resolve(wiki.root, c, path, for_write=True)
    with wiki.store.lock():
        remove_page(ref)
        index_files = _refresh_ancestors(wiki, c, ref, scaffold=False)
        commit = _commit(wiki, "delete_markdown", ref, index_files)
    view = wiki.view(c.name)
    wiki.prune(keep=set(view.pages.values()))
    return _report(ref, "deleted", index_files, [], commit, view)


def _refresh_ancestors(wiki: Wiki, corpus: CorpusConfig, ref: PageRef, scaffold: bool) -> list[str]:
    from gitwiki.index_blocks import refresh_ancestors
    from gitwiki.pagefacts import FactsCache

    facts = FactsCache.load(wiki.index_dir)
    changed = refresh_ancestors(wiki.root, corpus, wiki.config, ref.repo_path, scaffold=scaffold, facts=facts)
    facts.save()
    return changed


def _lint(wiki: Wiki, ref: PageRef, content: str, pages: set[str]) -> list[dict]:
    from gitwiki import pagefacts
    from gitwiki.lint import lint_text

    def anchors(repo_path: str) -> list[str] | None:  # other pages' anchors, so `other.md#anchor` links are checked too
        try:
            return pagefacts.anchors((wiki.root / repo_path).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError):
            return None

    return [f._asdict() for f in lint_text(ref.repo_path, content, pages, wiki.config, anchors=anchors)]


def _commit(wiki: Wiki, tool: str, ref: PageRef, index_files: list[str]) -> str | None:
    if not wiki.config.mcp.commit_writes:
        return None
    return wiki.repo.commit_paths([ref.repo_path, *index_files], f"gitwiki: {tool} {ref.repo_path}")


def _report(
    ref: PageRef, action: str, index_files: list[str], findings: list[dict], commit: str | None, view
) -> WriteReport:
    return WriteReport(
        ref.corpus, ref.path, str(ref.file), action, index_files, findings, commit, view.commit, list(view.dirty)
    )


def committed_blob(repo: GitRepo, repo_path: str) -> str | None:
    """The blob id of `repo_path` at HEAD, or None (unborn HEAD, or not committed)."""
    head = repo.head()
    if head is None:
        return None
    try:
        return str(repo.raw[head.tree][repo_path].id)
    except KeyError:
        return None


def is_dirty(repo: GitRepo, ref: PageRef) -> bool:
    """Whether the page on disk differs from HEAD (untracked, modified or deleted)."""
    on_disk = str(pygit2.hash(ref.file.read_bytes())) if ref.file.is_file() else None
    return on_disk != committed_blob(repo, ref.repo_path)
