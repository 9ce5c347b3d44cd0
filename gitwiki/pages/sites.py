"""The docs-site generators a repository may already use (mkdocs, mdBook, Docusaurus, or plain markdown as GitHub
renders it): where their pages are, which pages their navigation lists, and how they resolve a link, so that
`gitwiki init` finds the markdown and lint does not report a site's own conventions as mistakes.

Each generator's files are read as untrusted input: bounded, parsed safely, a file that cannot be read is as if
it were not there (the plain-markdown rules then apply).
"""

from __future__ import annotations

import posixpath
import re
import unicodedata
from collections import Counter
from collections.abc import Container, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from gitwiki.config import SITES
from gitwiki.markdown import PAGE_SUFFIXES
from gitwiki.markdown.links import Target, link_target

__all__ = [
    "SITES",
    "Choice",
    "detect",
    "nav_pages",
    "nav_file",
    "nav_titles",
    "titles_from_nav",
    "order_from_nav",
    "resolve",
    "exempt",
    "is_front_page",
    "is_generator_name",
    "anchor_key",
    "config_file",
]

MAX_CONFIG_BYTES = 1_000_000  # a site config file bigger than this is not read
MKDOCS_FILES = ("mkdocs.yml", "mkdocs.yaml")
DOCUSAURUS_FILES = ("docusaurus.config.js", "docusaurus.config.ts", "docusaurus.config.mjs", "docusaurus.config.cjs")
SIDEBAR_FILES = ("sidebars.js", "sidebars.ts", "sidebars.mjs", "sidebars.cjs", "sidebars.json")
# Folders no one keeps their documentation in: dependencies, build output, virtual environments.
_NOT_DOCS = {"node_modules", "site", "build", "_build", "dist", "target", "venv", "vendor", "third_party"}
# Docusaurus: the docs plugin's `path` inside `docs: { … }` of the preset, when the config says one.
# The docs plugin's `path`, past one level of braces before it (prettier's `editUrl: ({ docPath }) => …`)
_DOCUSAURUS_PATH = re.compile(r"\bdocs\s*:\s*\{(?:[^{}]|\{[^{}]*\})*?\bpath\s*:\s*['\"]([^'\"]+)['\"]", re.DOTALL)
_QUOTED = re.compile(r"['\"]([^'\"\n]+)['\"]")
_SIDEBAR_ID = re.compile(r"\bid\s*:\s*['\"]([^'\"\n]+)['\"]")


class Choice(NamedTuple):
    """Where `gitwiki init` puts the corpus, and why, in one line."""

    path: str  # the corpus folder, repo-relative ("" is the whole repository)
    site: str  # one of SITES
    why: str
    include: tuple[str, ...] = ("**/*.md",)


def read_small(path: Path) -> str | None:
    """A small text file, or None when it is missing, too big, not UTF-8 or a symlink out of the way."""
    try:
        if path.is_symlink() or not path.is_file() or path.stat().st_size > MAX_CONFIG_BYTES:
            return None
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _yaml(text: str) -> dict[str, Any]:
    """mkdocs.yml as a mapping; its Python and environment tags (`!!python/name:`, `!ENV`) read as None."""
    import yaml

    class Loader(yaml.SafeLoader):
        pass

    Loader.add_multi_constructor("", lambda loader, suffix, node: None)
    Loader.add_multi_constructor("!", lambda loader, suffix, node: None)
    try:
        data = yaml.load(text, Loader=Loader)
    except (yaml.YAMLError, RecursionError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _toml(text: str) -> dict[str, Any]:
    import tomllib

    try:
        return tomllib.loads(text)
    except (tomllib.TOMLDecodeError, RecursionError):
        return {}


def _folder(base: str, sub: object, default: str) -> str | None:
    """`sub` (a setting, else `default`) under the repo-relative folder `base`, normalized; None when it climbs out."""
    raw = sub if isinstance(sub, str) and sub.strip() else default
    path = posixpath.normpath(posixpath.join(base, raw.strip()))
    if path.startswith("/") or path == ".." or path.startswith("../"):
        return None
    return "" if path == "." else path


def _is_page(path: str) -> bool:
    return path.lower().endswith(PAGE_SUFFIXES)


def _count(files: Iterable[str], folder: str) -> int:
    prefix = folder + "/" if folder else ""
    return sum(1 for f in files if f.startswith(prefix) and _is_page(f))


def _candidates(files: Iterable[str], names: tuple[str, ...]) -> list[str]:
    """The repo-relative config files called one of `names`, at the top or one folder down, top first."""
    found = [f for f in files if posixpath.basename(f) in names and f.count("/") <= 1]
    return sorted(found, key=lambda f: (f.count("/"), names.index(posixpath.basename(f)), f))


def detect(root: Path, files: Iterable[str]) -> Choice:
    """Where the pages of the repository at `root` are, given its `files` (repo-relative, as git lists them): a docs
    site's own config (mkdocs.yml `docs_dir`, book.toml `src`, docusaurus.config.* → `docs/`), else `wiki/`, else
    `docs/`, else the folder with the most markdown; with none at all, `wiki/` to start one."""
    files = sorted(f for f in files if not any(part in _NOT_DOCS for part in f.split("/")[:-1]))
    for found in _generator_choices(root, files):
        return found
    for folder in ("wiki", "docs"):
        if count := _count(files, folder):
            return Choice(folder, "github", f"{folder}/ holds {count} markdown pages")
    per_folder = Counter(f.split("/")[0] if "/" in f else "" for f in files if _is_page(f))
    if not per_folder:
        return Choice("wiki", "github", "no markdown in the repository yet: wiki/ to start one")
    if set(per_folder) == {""}:  # README.md, AGENTS.md, CHANGELOG.md: the repository's own files, not a wiki
        return Choice("wiki", "github", "markdown only beside the code at the top (README.md …): wiki/ to start one")
    folder, count = max(per_folder.items(), key=lambda item: (item[1], item[0] != ""))
    if folder == "" or count * 2 <= sum(per_folder.values()):  # no one folder holds most: the whole repository
        return Choice(
            "", "github", f"{sum(per_folder.values())} markdown pages across the repository, no one folder holds most"
        )
    return Choice(folder, "github", f"{folder}/ holds the most markdown ({count} of {sum(per_folder.values())} pages)")


def _generator_choices(root: Path, files: list[str]) -> Iterator[Choice]:
    for config in _candidates(files, MKDOCS_FILES):
        data = _yaml(read_small(root / config) or "")
        docs = _folder(posixpath.dirname(config), data.get("docs_dir"), "docs")
        if docs is not None and (count := _count(files, docs)):
            said = (
                "docs_dir: " + str(data["docs_dir"]) if isinstance(data.get("docs_dir"), str) else "docs_dir (default)"
            )
            yield Choice(docs, "mkdocs", f"{config} is an mkdocs site: {said} → {docs}/ ({count} pages)")
    for config in _candidates(files, ("book.toml",)):
        book = _toml(read_small(root / config) or "").get("book")
        src = book.get("src") if isinstance(book, dict) else None
        folder = _folder(posixpath.dirname(config), src, "src")
        if folder is not None and (count := _count(files, folder)):
            yield Choice(folder, "mdbook", f"{config} is an mdBook: src → {folder}/ ({count} pages)")
    for config in _candidates(files, DOCUSAURUS_FILES):
        m = _DOCUSAURUS_PATH.search(read_small(root / config) or "")
        folder = _folder(posixpath.dirname(config), m.group(1) if m else None, "docs")
        if folder is not None and (count := _count(files, folder)):
            yield Choice(
                folder,
                "docusaurus",
                f"{config} is a Docusaurus site: its docs → {folder}/ ({count} pages)",
                ("**/*.md", "**/*.mdx"),
            )


def config_file(root: Path, site: str, corpus_path: str, names: tuple[str, ...] | None = None) -> Path | None:
    """The site's config file (or, given `names`, another of its files) for the corpus at `corpus_path`: in the
    corpus's parent folders, nearest first, up to the repository root, and in a `website/` beside each (where a
    Docusaurus site keeps its config and sidebars, its docs at `../docs`)."""
    if names is None:
        names = {"mkdocs": MKDOCS_FILES, "mdbook": ("book.toml",), "docusaurus": DOCUSAURUS_FILES}.get(site, ())
    folder = posixpath.dirname(corpus_path) if corpus_path else ""
    while True:
        for name in (*names, *(f"website/{n}" for n in names)):
            path = root / folder / name if folder else root / name
            if path.is_file() and not path.is_symlink():
                return path
        if not folder:
            return None
        folder = posixpath.dirname(folder)


def nav_pages(root: Path, site: str, corpus_path: str, pages: Iterable[str]) -> set[str]:
    """The repo-relative `pages` of the corpus at `corpus_path` that the site's own navigation lists (mkdocs `nav`,
    Docusaurus sidebars): none of them is an orphan. A site whose navigation is generated (mkdocs without `nav`,
    a Docusaurus sidebar `autogenerated`) lists every page. mdBook's SUMMARY.md is a page, so its links count
    already."""
    prefix = corpus_path + "/" if corpus_path else ""
    pages = {p for p in pages if p.startswith(prefix)}
    if site == "mkdocs":
        path = config_file(root, site, corpus_path)
        data = _yaml(read_small(path) or "") if path else {}
        nav = data.get("nav")
        if nav is None:
            return pages
        listed = {p for folder in _blog_posts(data.get("plugins")) for p in pages if p.startswith(prefix + folder)}
        for _title, entry in _nav_entries(nav):
            target = link_target(prefix + "index.md", entry)
            if target is None or target.path is None:
                continue
            if target.path in pages:
                listed.add(target.path)
            elif entry.endswith("/") or not _is_page(entry):  # a folder: its index (literate-nav's README) heads it
                folder = target.path + "/" if target.path else ""
                listed.update(p for p in pages if p in (folder + "index.md", folder + "README.md"))
        return listed
    if site == "docusaurus":
        path = config_file(root, site, corpus_path, SIDEBAR_FILES)
        text = read_small(path) if path else None
        if text is None or "autogenerated" in text:  # no sidebars file: Docusaurus generates one of every doc
            return pages
        ids = set(_SIDEBAR_ID.findall(text)) | set(_QUOTED.findall(text))
        return {p for p in pages if _doc_id(p, prefix, _front_matter_id(root / p)) in ids}
    return set()


def _blog_posts(plugins: object) -> list[str]:
    """The folders whose pages mkdocs-material's blog plugin publishes without a nav entry (`<blog_dir>/posts/`,
    `blog/` by default), relative to the docs folder."""
    entries = plugins if isinstance(plugins, list) else [plugins] if isinstance(plugins, dict) else []
    out = []
    for entry in entries:
        options: object = {}
        if isinstance(entry, str):
            name = entry
        elif isinstance(entry, dict) and entry:
            name, options = next(iter(entry.items()))
        else:
            continue
        if str(name).removeprefix("material/") == "blog":
            folder = options.get("blog_dir", "blog") if isinstance(options, dict) else "blog"
            out.append(f"{str(folder).strip('/') + '/' if str(folder).strip('/.') else ''}posts/")
    return out


def _nav_entries(nav: object, title: str | None = None, depth: int = 0) -> Iterator[tuple[str | None, str]]:
    """(title or None, page path) of each page in an mkdocs `nav` (a list of strings and {title: path or list})."""
    if depth > 20:
        return
    if isinstance(nav, str):
        yield title, nav
    elif isinstance(nav, list):
        for item in nav:
            yield from _nav_entries(item, None, depth + 1)
    elif isinstance(nav, dict):
        for key, value in nav.items():
            yield from _nav_entries(value, key if isinstance(key, str) else None, depth + 1)


def nav_file(root: Path, site: str, corpus_path: str) -> Path | None:
    """The file a site's navigation titles come from: mkdocs.yml, or mdBook's SUMMARY.md; None for the others."""
    if site == "mkdocs":
        return config_file(root, site, corpus_path)
    if site == "mdbook":
        path = root / corpus_path / "SUMMARY.md" if corpus_path else root / "SUMMARY.md"
        return path if path.is_file() and not path.is_symlink() else None
    return None


def nav_titles(root: Path, site: str, corpus_path: str) -> dict[str, str]:
    """Repo-relative page → the title the site's navigation gives it: an mkdocs `nav` entry
    (`- Clients: advanced/clients.md`), an mdBook SUMMARY.md link text (`- [Installation](guide/installation.md)`).
    The generator shows that title for a page without an H1."""
    path = nav_file(root, site, corpus_path)
    return titles_from_nav(site, corpus_path, (read_small(path) or "") if path else "")


def titles_from_nav(site: str, corpus_path: str, text: str) -> dict[str, str]:
    """`nav_titles` from the text of the site's `nav_file`."""
    out: dict[str, str] = {}
    for title, page in _nav_targets(site, corpus_path, text):
        if title:
            out.setdefault(page, title)
    return out


def order_from_nav(site: str, corpus_path: str, text: str) -> list[str]:
    """The repo-relative pages the site's navigation (the text of its `nav_file`) lists, in its order, each once; a
    folder entry (mkdocs `- Guide: guide/`) as the folder with a trailing slash, standing for the pages in it."""
    return list(dict.fromkeys(page for _, page in _nav_targets(site, corpus_path, text, folders=True)))


def _nav_targets(site: str, corpus_path: str, text: str, folders: bool = False) -> Iterator[tuple[str | None, str]]:
    """(title or None, repo-relative page) of each page entry of an mkdocs `nav` or an mdBook SUMMARY.md; with
    `folders`, mkdocs folder entries too (`folder/`)."""
    prefix = corpus_path + "/" if corpus_path else ""
    if site == "mdbook":
        entries: Iterable[tuple[str | None, str]] = (
            (_summary_text(m.group(1)), m.group(2)) for m in _SUMMARY_LINK.finditer(text)
        )
        base = prefix + "SUMMARY.md"
    else:
        entries = _nav_entries(_yaml(text).get("nav") if site == "mkdocs" and text else None)
        base = prefix + "index.md"
    for title, entry in entries:
        target = link_target(base, entry)
        if target is None or not target.path or target.outside:
            continue
        if _is_page(target.path):
            yield title, target.path
        elif folders and site == "mkdocs" and entry.endswith("/") and (target.path + "/").startswith(prefix):
            yield title, target.path + "/"


# A SUMMARY.md chapter: `[Title](path.md)` (a draft chapter `[Title]()` has no page).
_SUMMARY_LINK = re.compile(r"\[((?:[^\[\]\n]|\[[^\[\]\n]*\])+)\]\(<?([^()<>\s]+)>?\)")
_INLINE_MARKS = re.compile(r"[`*_]")


def _summary_text(raw: str) -> str:
    """A SUMMARY.md link text as the sidebar shows it: without its code and emphasis marks."""
    return _INLINE_MARKS.sub("", raw).strip()


def _doc_id(page: str, prefix: str, own: str | None = None) -> str:
    """A Docusaurus doc's id: its folder in the docs folder and its front matter's `id` (`own`), else its file
    name, without the extension."""
    path = posixpath.splitext(page[len(prefix) :])[0]
    return posixpath.join(posixpath.dirname(path), own) if own else path


_FIELD_LINE = re.compile(r"^(id|slug):[ \t]*['\"]?([\w./-]+)['\"]?[ \t]*$", re.MULTILINE)


def _front_matter_fields(path: Path) -> dict[str, str]:
    """The `id:` and `slug:` of a page's front matter (in its first 4 KB), read without YAML: Docusaurus names
    and places a doc by them."""
    try:
        if path.is_symlink():
            return {}
        with path.open("rb") as f:
            head = f.read(4096).decode("utf-8", "replace")
    except OSError:
        return {}
    if not head.startswith("---"):
        return {}
    end = head.find("\n---", 3)
    return dict(_FIELD_LINE.findall(head[: end if end > 0 else len(head)]))


def _front_matter_id(path: Path) -> str | None:
    return _front_matter_fields(path).get("id")


def routes(root: Path, site: str, corpus_path: str, pages: Iterable[str]) -> dict[str, str]:
    """Docusaurus: the site path under `/docs/` (no slash at either end) → the page, of each doc whose front matter
    moves it (`slug: /start`, `slug: setup`, `id: setup`); links by that path reach the page."""
    if site != "docusaurus":
        return {}
    prefix = corpus_path + "/" if corpus_path else ""
    out = {}
    for page in pages:
        if not page.startswith(prefix):
            continue
        fields = _front_matter_fields(root / page)
        folder = posixpath.dirname(page[len(prefix) :])
        slug, own = fields.get("slug"), fields.get("id")
        if slug:
            route = slug if slug.startswith("/") else posixpath.join(folder, slug)
        elif own:
            route = posixpath.join(folder, own)
        else:
            continue
        out[posixpath.normpath("/" + route).strip("/")] = page
    return out


def resolve(
    site: str, prefix: str, source: str, raw: str, pages: Container[str], moved: Mapping[str, str] | None = None
) -> Target | None:
    """Where the link `raw` in the page `source` points, as the site's generator resolves it (None: external).

    Every generator: relative to the page. mkdocs: `/x.md` from the docs folder (`prefix`). Docusaurus: links
    without an extension (`./intro` → intro.md or .mdx, a folder → its index), `/docs/x` site paths, and a link
    without `./` or `../` from the docs folder first. Where
    the generator's reading finds no page, the plain (GitHub) reading is given, so lint names that path. `moved`
    are the Docusaurus docs a front-matter slug or id places elsewhere (`routes`)."""
    target = link_target(source, raw)
    if target is None or target.path is None or site not in ("mkdocs", "docusaurus") or target.path in pages:
        return target
    rest = raw.partition("#")[0].partition("?")[0]
    tries = [target.path]
    bases = [target.path]  # the page paths the link may name, before Docusaurus's extensions are tried
    if rest.startswith("/") and not rest.startswith("//"):
        inside = target.path
        if site == "docusaurus":  # the docs plugin's routeBasePath, "docs" by default
            inside = "" if inside == "docs" else inside.removeprefix("docs/")
        tries.append(posixpath.normpath(prefix + inside).removeprefix("./") if inside else prefix.rstrip("/"))
        bases = tries[:]
    elif site == "docusaurus" and rest and not rest.startswith(("./", "../")):
        # Docusaurus reads `api/store.md` from the docs folder first, and only `./x` and `../x` from the page's
        # (its markdownLinks): redux's docs link so, and every such link was a broken one here
        tries = bases = [posixpath.normpath(prefix + rest).removeprefix("./"), *tries]
    if site == "docusaurus":
        tries = [
            found
            for base in tries
            for found in (base, *(base + s for s in (".md", ".mdx")), *(f"{base}/index{s}" for s in (".md", ".mdx")))
        ]
    for path in tries:
        if path in pages:
            return Target(path, target.fragment, target.outside)
    if moved:
        for path in bases:
            rel = path[len(prefix) :] if path.startswith(prefix) else "" if path + "/" == prefix else None
            if rel is not None and (page := moved.get(rel.strip("/"))):
                return Target(page, target.fragment, target.outside)
    return target


def anchor_key(site: str, anchor: str) -> str:
    """An anchor as the site's heading ids compare: lower case; for mkdocs (Python-Markdown's toc slugify) also
    accents folded to ASCII, other letters dropped and runs of '-' made one, so `#foo-bar` finds the heading
    "Foo & Bar" (GitHub's id: foo--bar)."""
    anchor = anchor.lower()
    if site != "mkdocs":
        return anchor
    folded = unicodedata.normalize("NFKD", anchor).encode("ascii", "ignore").decode("ascii")
    return _DASHES.sub("-", folded).strip("-")


_DASHES = re.compile(r"-{2,}")


# Pages that head a folder or a site: nothing need link to them, and their names are the generator's own.
_FRONT_NAMES = ("index.md", "README.md", "index.mdx", "README.mdx")
_MDBOOK_NAMES = ("SUMMARY.md", "404.md")
# SUMMARY.md is mdBook's table of contents, not a page: part titles are H1s, `[Draft]()` is a draft chapter.
_SUMMARY_RULES = frozenset({"GW001", "GW004", "GW007", "GW009", "GW010"})


def is_front_page(site: str, prefix: str, path: str) -> bool:
    """Whether readers reach `path` without a link: in mkdocs and Docusaurus any folder's index or README (the
    folder's own page), in mdBook the book's README, SUMMARY.md and 404.md (SUMMARY.md links every other page)."""
    if site == "mdbook":
        return path in {prefix + n for n in (*_MDBOOK_NAMES, "README.md")}
    return site != "github" and posixpath.basename(path) in _FRONT_NAMES


def is_generator_name(site: str, path: str) -> bool:
    """Whether the file name is one the generator gives meaning to (README.md, index.md, SUMMARY.md), not a topic."""
    return site != "github" and posixpath.basename(path) in (*_FRONT_NAMES, *_MDBOOK_NAMES)


def exempt(site: str, prefix: str, path: str) -> frozenset[str]:
    """The lint codes that do not apply to `path` in a site of this kind: mdBook's SUMMARY.md is its table of
    contents."""
    return _SUMMARY_RULES if site == "mdbook" and path == prefix + "SUMMARY.md" else frozenset()


def empty_corpus(root: Path, files: Iterable[str], name: str, path: str, deleted: int) -> str | None:
    """What to tell the user when the corpus `name` at `path` has no pages after an index run: that the last run
    had `deleted` pages there, or that markdown lies elsewhere in the repository (`files`), with the fix; None when
    the repository has no markdown at all (a new wiki)."""
    where = f"{path or '.'}/"
    found = detect(root, files)
    count = _count(files, found.path) if found.path != path else 0
    fix = f"gitwiki init --path {found.path or '.'} --force" if count else "gitwiki init --path FOLDER --force"
    if deleted:
        return (
            f"corpus {name!r} at {where} has no pages now, where the index had {deleted}: check the folder and "
            f"[[corpus]] path in .gitwiki.toml ({fix}" + (f"; {found.why})" if count else ")")
        )
    if count:
        return f"corpus {name!r} at {where} has no pages, but {found.why}: {fix}"
    return None
