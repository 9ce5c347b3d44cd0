"""Pages on disk, addressed relative to their corpus: safe path resolution, reads, writes and listings.

Every path an agent or a user hands in goes through `locate`, which refuses anything that could reach
outside the corpus (`..`, absolute paths, symlinks pointing elsewhere, `.git`) or that is not a page of
the corpus (other extensions, excluded by its globs). Writing a page together with its index blocks,
commit and index update is `gitwiki.operations.writes`.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Container, Iterable, Sequence
from pathlib import Path, PurePosixPath
from typing import Any, NamedTuple

from gitwiki.config import MAX_GLOB_CHARS, CorpusConfig, matches
from gitwiki.errors import NotFoundError, UsageError
from gitwiki.fs import path_problem, read_page_file, remove_page_file, write_page_file
from gitwiki.markdown import PAGE_SUFFIXES

# Linux's limits (NAME_MAX, PATH_MAX): past them the OS refuses the path with ENAMETOOLONG.
NAME_MAX = 255
PATH_MAX = 4096


class PageRef(NamedTuple):
    corpus: str
    path: str  # relative to the corpus root, POSIX separators
    repo_path: str  # relative to the repo root (the form git, the index and `ground` use)
    file: Path  # absolute
    root: Path  # the repo root: pages are opened from it one folder at a time (gitwiki.fs)


class PageText(NamedTuple):
    path: str
    absolute_path: str
    text: str  # the requested lines, verbatim (line endings kept)
    start_line: int
    end_line: int
    total_lines: int


class ListedPage(NamedTuple):
    path: str  # relative to the corpus root
    absolute_path: str


def corpus_dir(root: Path, corpus: CorpusConfig) -> Path:
    return root / corpus.path if corpus.path else root


MAX_FOLDERS = 64


def locate(root: Path, corpus: CorpusConfig, path: str, *, for_write: bool = False) -> PageRef:
    """Check a page path, repo-relative (`wiki/guides/deploy.md`, as search prints it) or relative to the corpus
    folder (`guides/deploy.md`), and locate it; raise UsageError saying why it is refused."""
    if not isinstance(path, str) or not path.strip():
        raise UsageError("the page path is empty; give a path relative to the corpus, e.g. guides/deploy.md")
    if "\x00" in path:
        raise UsageError("the page path contains a NUL byte")
    raw = path.replace("\\", "/")
    if raw.startswith("/") or re.match(r"^[A-Za-z]:", raw):
        raise UsageError(f"{path!r} is absolute; give a path relative to corpus {corpus.name!r}, e.g. guides/deploy.md")
    parts = [p for p in raw.split("/") if p not in ("", ".")]
    rel = "/".join(parts)
    problem = path_problem(rel) if rel else None  # the rule every source of pages follows
    if problem is not None:
        raise UsageError(f"{path!r} {problem}; paths must stay inside corpus {corpus.name!r}, out of .git")
    too_long = next((p for p in parts if len(p.encode("utf-8", "surrogatepass")) > NAME_MAX), None)
    if too_long is not None:
        raise UsageError(f"{too_long[:40]!r}… in {path[:80]!r} is over {NAME_MAX} bytes, the most a file name can have")
    if len(rel.encode("utf-8", "surrogatepass")) + len(str(root).encode()) > PATH_MAX:
        raise UsageError(f"{path[:80]!r}… is over {PATH_MAX} bytes with the repo folder; use a shorter path")
    if PurePosixPath(rel).suffix.lower() not in PAGE_SUFFIXES:
        raise UsageError(f"{path!r} is not a markdown page; use a {' or '.join(PAGE_SUFFIXES)} file")
    if for_write and len(parts) > MAX_FOLDERS:  # libgit2 stops at 100 (its status, then every search, failed)
        raise UsageError(f"{path[:80]!r}… is {len(parts) - 1} folders deep; a page may be at most {MAX_FOLDERS - 1}")
    base = corpus_dir(root, corpus)
    if corpus.path and corpus.contains(rel):
        # The repo-relative path, as `ground` and every page tool print it. A corpus-relative path is taken
        # too, where it cannot mean another page: one that starts with the corpus folder is repo-relative
        # (a page in `wiki/wiki/` is `wiki/wiki/x.md`), for reads and writes alike.
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
    return PageRef(corpus.name, rel, repo_path, file, root)


def _check_inside(base: Path, file: Path, shown: str, corpus: str) -> None:
    """Refuse a path whose nearest existing ancestor (or itself) resolves outside the corpus (symlinks).
    An early, friendly refusal; what makes writes safe is gitwiki.fs opening each folder with O_NOFOLLOW."""
    real_base = base.resolve()
    probe = file
    while not probe.exists() and not probe.is_symlink() and probe != base:
        probe = probe.parent
    try:
        real = probe.resolve()
    except OSError:  # a folder on the way replaced while resolving (realpath raced a swap)
        raise UsageError(f"{shown!r}: a folder on the way changed while it was checked; try again") from None
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
    try:
        return read_page_file(ref.root, ref.repo_path)
    except FileNotFoundError:
        raise NotFoundError(
            f"no page {ref.path!r} in corpus {ref.corpus!r}; list_files shows the pages there"
        ) from None
    except OSError as e:
        raise UsageError(f"cannot read {ref.path!r} ({e.strerror})") from None


def write_page(ref: PageRef, content: str, *, overwrite: bool = False, max_bytes: int = 0) -> bool:
    """Write `content` atomically; returns whether the page was created (False: overwritten)."""
    if "\x00" in content:  # binary to git and to the index: the page would drop out of search
        raise UsageError("content holds a NUL character, which makes the page binary; remove it")
    size = len(content.encode("utf-8"))
    if max_bytes and size > max_bytes:
        raise UsageError(
            f"content is {size} bytes, over the {max_bytes}-byte limit ([mcp] max_page_bytes); split the page"
        )
    try:
        return write_page_file(ref.root, ref.repo_path, content, overwrite=overwrite)
    except FileExistsError:
        raise UsageError(
            f"{ref.path!r} already exists in corpus {ref.corpus!r}; pass overwrite: true to replace it"
        ) from None


def remove_page(ref: PageRef) -> None:
    """Delete the page and the folders it leaves empty inside the corpus (never the corpus folder)."""
    corpus_folder = ref.repo_path[: len(ref.repo_path) - len(ref.path)].rstrip("/")
    try:
        removed = remove_page_file(ref.root, ref.repo_path, keep=corpus_folder)
    except FileNotFoundError:
        removed = False
    if not removed:
        raise NotFoundError(f"no page {ref.path!r} in corpus {ref.corpus!r}; nothing to delete")


# ---- listings ----------------------------------------------------------------------------------


def list_files(
    root: Path,
    corpus: CorpusConfig,
    repo_paths: Iterable[str],
    glob: str | None = None,
    order: Sequence[str] = (),
) -> list[ListedPage]:
    """The corpus pages among `repo_paths` (e.g. a search view's pages), corpus-relative: those in `order` (a docs
    site's navigation, repo-relative) first and in its order, then the others sorted. `glob` matches the
    corpus-relative path or the repo-relative one."""
    if glob and len(glob) > MAX_GLOB_CHARS:  # fnmatch's regex of 50,000 '[' took 54 s
        raise UsageError(f"glob must be at most {MAX_GLOB_CHARS} characters, not {len(glob):,}")
    base = corpus_dir(root, corpus)
    rank = {path: i for i, path in enumerate(order)}
    out = []
    for repo_path in sorted(repo_paths, key=lambda p: (_nav_rank(rank, p), p)):
        rel = repo_path[len(corpus.prefix) :]
        if glob and not any(
            fnmatch.fnmatchcase(p, glob) or (glob.startswith("**/") and fnmatch.fnmatchcase(p, glob[3:]))
            for p in (rel, repo_path)
        ):
            continue
        out.append(ListedPage(rel, str(base / rel)))
    return out


def _nav_rank(rank: dict[str, int], path: str) -> int:
    """Where `path` stands in a site's navigation: its own entry, else its nearest folder's (`guide/`), else last."""
    if path in rank:
        return rank[path]
    folder = path
    while "/" in folder:
        folder = folder.rpartition("/")[0]
        if folder + "/" in rank:
            return rank[folder + "/"]
    return len(rank)


def tree(
    root: Path, corpus: CorpusConfig, files: list[ListedPage], under: str = "", depth: int | None = None
) -> dict[str, Any]:
    """`files` as nested `{path, absolute_path, pages, files, subdirs}` nodes; only folders holding pages appear.

    `pages` counts the pages below a node; folders deeper than `depth` are listed without their contents.
    """
    under = "/".join(p for p in under.replace("\\", "/").split("/") if p not in ("", "."))
    if ".." in under.split("/") or under.startswith("/"):
        raise UsageError(f"{under!r} must be a folder relative to corpus {corpus.name!r}, without '..'")
    if corpus.path and (under == corpus.path or under.startswith(corpus.prefix)):  # repo-relative, as `locate`
        under = under[len(corpus.prefix) :]
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


def add_folder_summaries(node: dict[str, Any], pages: set[str], read: Callable[[str], str]) -> None:
    """Give each folder node a `summary`: its index.md's front-matter description or first paragraph (None without
    an index.md). `pages` are the corpus-relative page paths, `read` returns one page's text."""
    node["summary"] = folder_summary(node["path"], pages, read)
    for sub in node["subdirs"]:
        add_folder_summaries(sub, pages, read)


def folder_summary(folder: str, pages: Container[str], read: Callable[[str], str]) -> str | None:
    """A folder's summary: its index.md's front-matter description or first paragraph; None without an index.md.
    `folder` and `pages` are relative to the same root (the corpus for list_tree, the repo for search results)."""
    from gitwiki.markdown.summary import title_and_summary

    index = f"{folder}/index.md" if folder else "index.md"
    return title_and_summary(read(index))[1] if index in pages else None


def _node(base: Path, rel: str) -> dict[str, Any]:
    return {"path": rel, "absolute_path": str(base / rel if rel else base), "pages": 0, "files": [], "subdirs": []}
