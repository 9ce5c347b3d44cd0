"""Docs-site generators (gitwiki.pages.sites): `gitwiki init` finds the markdown, `gitwiki index` refuses a silent
zero, and lint reads links and navigation as mkdocs, mdBook and Docusaurus do, on real sites (tests/sites/*/SOURCE.md
says where each comes from)."""

from __future__ import annotations

import json
import shutil
import tomllib
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gitwiki.markdown.links import ANY_ANCHOR, has_generated_content, html_anchors, include_targets
from gitwiki.pages import sites
from tests.helpers import ROOT, GitRepoFixture

SITES_DIR = ROOT / "tests" / "sites"
# site → (corpus folder init finds, its generator, pages)
REAL = {
    "mkdocs": ("docs", "mkdocs", 19),
    "httpx": ("docs", "mkdocs", 23),
    "mdbook": ("guide/src", "mdbook", 35),
    "docusaurus": ("docs", "docusaurus", 9),
}


def _site_repo(repo: GitRepoFixture, name: str) -> GitRepoFixture:
    shutil.copytree(SITES_DIR / name, repo.path, dirs_exist_ok=True)
    repo.commit("the site")
    return repo


def _site_findings(cli, repo: GitRepoFixture, files: dict[str, str], code: str | None = None) -> set[tuple[str, str]]:
    """The site committed, `gitwiki init` run and its config committed: lint's (path, code) pairs, of `code` only
    when given."""
    repo.commit("site", files)
    cli("init", cwd=repo.path)
    repo.commit("config")
    _, findings = _lint_codes(cli, repo)
    return {(f["path"], f["code"]) for f in findings if code is None or f["code"] == code}


def _lint_codes(cli, repo: GitRepoFixture) -> tuple[Counter[str], list[dict[str, object]]]:
    _, out, _ = cli("lint", "--format", "json", cwd=repo.path)
    data = json.loads(out)
    findings = data if isinstance(data, list) else data["findings"]
    return Counter(f["code"] for f in findings), findings


@pytest.mark.parametrize("name", sorted(REAL))
def test_init_finds_each_real_site_and_index_finds_its_pages(repo, cli, name):
    folder, site, pages = REAL[name]
    _site_repo(repo, name)
    code, out, _ = cli("init", cwd=repo.path)
    assert code == 0
    assert f"corpus folder: {folder}/ ({site}): " in out  # what it chose and why, on one line
    corpus = tomllib.loads((repo.path / ".gitwiki.toml").read_text())["corpus"][0]
    assert (corpus["path"], corpus["site"]) == (folder, site)
    repo.commit("config")
    code, out, _ = cli("index", "--lexical", cwd=repo.path)
    assert code == 0, out
    assert f"wiki: {pages} pages" in out


# Lint findings on the real sites before this module (as `gitwiki init --path FOLDER` set them up): mkdocs 22
# (13 GW006, 3 GW007, 3 GW011, 2 GW010, 1 GW009), mdBook 23 (8 GW003, 7 GW010, 4 GW007, 2 GW004, 1 GW001,
# 1 GW009), Docusaurus 6 GW007 (its .mdx pages not linted at all with the default include), HTTPX 27 (10 GW009
# pages titled by nav, 8 GW007 nav-only pages, 3 GW010 snake_case names, 6 GW006 stale anchors).
AFTER = {
    "mkdocs": {},
    "httpx": {"GW006": 6},  # anchors to headings renamed upstream: real, still reported
    # the guide's own heading jumps (H1 then ####), its one page SUMMARY.md leaves out, and an include fragment
    "mdbook": {"GW003": 8, "GW007": 1, "GW009": 1},
    "docusaurus": {},
}


@pytest.mark.parametrize("name", sorted(REAL))
def test_lint_on_each_real_site_reports_none_of_the_generators_conventions(repo, cli, name):
    _site_repo(repo, name)
    cli("init", cwd=repo.path)
    repo.commit("config")
    codes, findings = _lint_codes(cli, repo)
    assert dict(codes) == AFTER[name], findings
    if name == "mdbook":  # the one orphan is real: SUMMARY.md does not list it, so mdBook does not build it
        assert [f["path"] for f in findings if f["code"] == "GW007"] == ["guide/src/guide/README.md"]


def test_the_same_sites_as_plain_markdown_still_get_the_plain_findings(repo, cli):
    """The rules are not weakened for plain markdown: the mkdocs site read as GitHub renders it."""
    _site_repo(repo, "mkdocs")
    cli("init", "--path", "docs", cwd=repo.path)
    config = repo.path / ".gitwiki.toml"
    assert 'site = "mkdocs"' in config.read_text()  # --path to the folder the site's config names: found
    config.write_text(config.read_text().replace('site = "mkdocs"', 'site = "github"'))
    codes, _ = _lint_codes(cli, repo)
    assert codes["GW007"] == 3 and codes["GW011"] == 3 and codes["GW010"] == 2


def test_a_broken_link_in_a_real_site_is_still_found(repo, cli):
    _site_repo(repo, "mkdocs")
    cli("init", cwd=repo.path)
    page = repo.path / "docs/getting-started.md"
    page.write_text(page.read_text() + "\nSee [nowhere](user-guide/nowhere.md) and [x](index.md#no-such-heading).\n")
    repo.commit("broken")
    codes, _ = _lint_codes(cli, repo)
    assert codes == Counter({"GW005": 1, "GW006": 1})


def test_titles_come_from_front_matter(repo, cli):
    """A Docusaurus page titled in its front matter, without an H1: search shows that title, lint asks for no H1."""
    _site_repo(repo, "docusaurus")
    cli("init", cwd=repo.path)
    repo.commit("faq", {"docs/faq.md": "---\nid: faq\ntitle: Frequently asked questions\n---\n\nWhy zebras stripe.\n"})
    cli("index", "--lexical", cwd=repo.path)
    code, out, _ = cli("ground", "--json", "--mode", "lexical", "zebras stripe", cwd=repo.path)
    assert code == 0
    docs = json.loads(out)["docs"]
    assert (docs[0]["path"], docs[0]["title"]) == ("docs/faq.md", "Frequently asked questions")
    codes, findings = _lint_codes(cli, repo)
    assert not codes, findings


def test_docusaurus_links_without_extension_doc_paths_and_site_paths():
    pages = {"docs/intro.mdx", "docs/guide/setup.md", "docs/guide/index.md"}
    for raw, want in [
        ("./guide/setup", "docs/guide/setup.md"),
        ("guide/setup#install", "docs/guide/setup.md"),
        ("/docs/intro", "docs/intro.mdx"),
        ("/docs/guide", "docs/guide/index.md"),
        ("./guide/", "docs/guide/index.md"),
    ]:
        target = sites.resolve("docusaurus", "docs/", "docs/intro.mdx", raw, pages)
        assert target is not None and target.path == want, raw
    plain = sites.resolve("github", "docs/", "docs/intro.mdx", "./guide/setup", pages)
    assert plain is not None and plain.path == "docs/guide/setup"  # GitHub does not add the extension
    # From a page in a folder: a link without ./ or ../ is read from the docs folder first (redux's docs)
    for raw, want in [
        ("guide/setup.md#install", "docs/guide/setup.md"),
        ("intro", "docs/intro.mdx"),
        ("setup.md", "docs/guide/setup.md"),  # the page's own folder, where the docs folder has none
        ("./setup", "docs/guide/setup.md"),
    ]:
        target = sites.resolve("docusaurus", "docs/", "docs/guide/index.md", raw, pages)
        assert target is not None and target.path == want, raw
    relative = sites.resolve("docusaurus", "docs/", "docs/guide/index.md", "./intro", pages)
    assert relative is not None and relative.path == "docs/guide/intro"  # ./ is the page's folder only


def test_docusaurus_front_matter_slug_and_id_place_a_doc(repo, cli):
    """Links by the site path a slug or id gives reach the page, for the broken-link and the orphan check."""
    pages = {
        "docs/intro.md": "---\nslug: /\n---\n\n# Intro\n\n[Setup](/docs/start/here), [steps](guide/setup)\n",
        "docs/guide/a.md": "# A\n\nBack to [the start](/docs/) and [setup](./setup#run).\n",
        "docs/guide/install-steps.md": "---\nid: setup\n---\n\n# Steps\n\n## Run\n",
        "docs/guide/deep.md": "---\nslug: /start/here\n---\n\n# Deep\n\n[A](./a)\n",
    }
    repo.commit(
        "site", {"docusaurus.config.js": "export default {};\n", "sidebars.js": "export default {s: []};\n", **pages}
    )
    cli("init", cwd=repo.path)
    repo.commit("config")
    codes, findings = _lint_codes(cli, repo)
    assert not codes, findings
    moved = sites.routes(repo.path, "docusaurus", "docs", pages)
    assert moved == {
        "": "docs/intro.md",
        "guide/setup": "docs/guide/install-steps.md",
        "start/here": "docs/guide/deep.md",
    }


def test_mkdocs_absolute_links_start_at_the_docs_folder():
    target = sites.resolve("mkdocs", "docs/", "docs/a/b.md", "/user-guide/x.md#y", {"docs/user-guide/x.md"})
    assert target is not None and (target.path, target.fragment) == ("docs/user-guide/x.md", "y")


def test_mkdocs_heading_ids_are_python_markdown_slugs(repo, cli):
    """Python-Markdown's toc makes "Foo & Bar" foo-bar and "Café" cafe, where GitHub makes foo--bar and café."""
    pages = {
        "docs/index.md": "# Home\n\nSee [a](other.md#foo-bar) and [b](other.md#cafe-menu).\n",
        "docs/other.md": "# Other\n\n## Foo & Bar\n\n## Café menu\n",
    }
    repo.commit("site", {"mkdocs.yml": "site_name: x\n", **pages})
    cli("init", cwd=repo.path)
    repo.commit("config")
    assert not _lint_codes(cli, repo)[0]
    config = repo.path / ".gitwiki.toml"
    config.write_text(config.read_text().replace('site = "mkdocs"', 'site = "github"'))
    assert _lint_codes(cli, repo)[0] == Counter({"GW006": 2})  # GitHub's ids differ: the plain reading reports them


def test_mkdocs_nav_lists_pages_and_folders(tmp_path):
    (tmp_path / "docs/guide").mkdir(parents=True)
    (tmp_path / "mkdocs.yml").write_text(
        "site_name: x\nnav:\n  - Home: index.md\n  - Guide: guide/\n  - About:\n    - a.md\n"
        "  - Ext: https://example.com\nmarkdown_extensions:\n  - pymdownx.emoji:\n"
        "      emoji_index: !!python/name:material.extensions.emoji.twemoji\n"
    )
    pages = ["docs/index.md", "docs/guide/README.md", "docs/guide/one.md", "docs/a.md", "docs/b.md"]
    assert sites.nav_pages(tmp_path, "mkdocs", "docs", pages) == {"docs/index.md", "docs/guide/README.md", "docs/a.md"}
    assert sites.nav_titles(tmp_path, "mkdocs", "docs") == {"docs/index.md": "Home"}  # `- a.md` has no title
    (tmp_path / "mkdocs.yml").write_text("site_name: x\n")  # no nav: mkdocs lists every page
    assert sites.nav_pages(tmp_path, "mkdocs", "docs", pages) == set(pages)


def test_docusaurus_sidebars_by_id(tmp_path):
    (tmp_path / "sidebars.js").write_text("export default {docs: ['intro', {type: 'doc', id: 'guide/setup'}]};")
    (tmp_path / "docs/guide").mkdir(parents=True)
    (tmp_path / "docs/guide/install-steps.md").write_text("---\nid: setup\ntitle: Setup\n---\n\ntext\n")
    pages = ["docs/intro.md", "docs/guide/install-steps.md", "docs/other.md"]
    listed = {"docs/intro.md", "docs/guide/install-steps.md"}  # the second by its front matter's id
    assert sites.nav_pages(tmp_path, "docusaurus", "docs", pages) == listed


@pytest.mark.parametrize(
    ("files", "path", "site"),
    [
        ({"wiki/a.md": "# A\n", "docs/b.md": "# B\n"}, "wiki", "github"),
        ({"docs/a.md": "# A\n", "README.md": "# R\n"}, "docs", "github"),
        ({"handbook/a.md": "# A\n", "handbook/b.md": "# B\n", "README.md": "# R\n"}, "handbook", "github"),
        ({"a.md": "# A\n", "b.md": "# B\n", "x/c.md": "# C\n"}, "", "github"),
        ({"src/main.py": "print()\n"}, "wiki", "github"),
        ({"README.md": "# R\n", "AGENTS.md": "# A\n"}, "wiki", "github"),  # the repository's own files
        ({"website/mkdocs.yml": "docs_dir: pages\n", "website/pages/a.md": "# A\n"}, "website/pages", "mkdocs"),
        ({"book/book.toml": '[book]\nsrc = "text"\n', "book/text/SUMMARY.md": "# S\n"}, "book/text", "mdbook"),
        ({"mkdocs.yml": "docs_dir: ../../etc\n", "docs/a.md": "# A\n"}, "docs", "github"),  # no climbing out
    ],
)
def test_init_chooses_the_folder(repo, cli, files, path, site):
    repo.commit("files", files)
    code, out, _ = cli("init", cwd=repo.path)
    assert code == 0, out
    corpus = tomllib.loads((repo.path / ".gitwiki.toml").read_text())["corpus"][0]
    assert (corpus["path"], corpus["site"]) == (path, site), out
    assert out.startswith(f"corpus folder: {path or '.'}/ ({site}): ")


def test_index_refuses_a_silent_zero(repo, cli):
    repo.commit("pages", {"docs/a.md": "# A\n\ntext\n", "docs/b.md": "# B\n\ntext\n"})
    cli("init", "--path", "wiki", cwd=repo.path)
    code, _, err = cli("index", "--lexical", cwd=repo.path)
    assert code == 3
    assert "has no pages, but docs/ holds 2 markdown pages: gitwiki init --path docs --force" in err
    cli("init", "--path", "docs", "--force", cwd=repo.path)
    assert cli("index", "--lexical", cwd=repo.path)[0] == 0
    repo.git("rm", "-q", "-r", "docs")
    repo.commit("pages gone")
    code, _, err = cli("index", "--lexical", cwd=repo.path)
    assert code == 3 and "has no pages now, where the index had 2" in err


def test_init_force_on_an_old_config_sets_the_site_and_says_what_it_still_needs(repo, cli):
    from gitwiki import config

    _site_repo(repo, "docusaurus")
    (repo.path / ".gitwiki.toml").write_text('[[corpus]]\nname = "wiki"\npath = "wiki"\nsite = "github"\n')
    code, out, _ = cli("init", "--force", cwd=repo.path)
    assert code == 0
    assert config.load(repo.path).corpus("wiki").site == "docusaurus"
    assert "note: set '**/*.mdx' in include in [[corpus]] 'wiki'" in out


def test_a_new_wiki_without_markdown_indexes_quietly(repo, cli):
    repo.commit("code", {"main.py": "print()\n"})
    cli("init", cwd=repo.path)
    assert cli("index", "--lexical", cwd=repo.path)[0] == 0


def test_generated_content_and_attribute_ids():
    assert html_anchors("*   **`locale`**{ #mkdocs-locale }: the locale\n") == {"mkdocs-locale"}
    assert "include" not in html_anchors("{{#include file.md}}\n")
    assert has_generated_content("::: mkdocs-click\n    :module: x\n")
    assert has_generated_content('--8<-- "CONTRIBUTING.md"\n')
    assert not has_generated_content("```\n::: not this\n```\n")
    assert include_targets("Text\n{{#include arg-watcher.md}}\n") == ["arg-watcher.md"]
    from gitwiki.markdown.document import parse

    assert ANY_ANCHOR in parse("a.md", "# A\n\n{{#include b.md:2:5}}\n").anchors


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=300), st.text(max_size=300))
def test_site_config_files_never_break_init(tmp_path_factory, yml, toml):
    root: Path = tmp_path_factory.mktemp("site")
    (root / "mkdocs.yml").write_text(yml)
    (root / "book.toml").write_text(toml)
    (root / "docusaurus.config.js").write_text(yml)
    files = ["mkdocs.yml", "book.toml", "docusaurus.config.js", "docs/a.md", "src/b.md"]
    choice = sites.detect(root, files)
    assert choice.site in sites.SITES and not choice.path.startswith("..")
    assert isinstance(sites.nav_pages(root, "mkdocs", "docs", ["docs/a.md"]), set)


def test_page_size_default_is_off_in_a_docs_site_and_a_set_limit_applies(repo, cli):
    big = "# Reference\n\n" + "".join(f"## Option {i}\n\n{'words ' * 60}\n\n" for i in range(80))
    repo.commit("site", {"mkdocs.yml": "site_name: x\n", "docs/index.md": "# Home\n", "docs/reference.md": big})
    cli("init", cwd=repo.path)
    repo.commit("config")
    assert "GW011" not in _lint_codes(cli, repo)[0]
    config = repo.path / ".gitwiki.toml"
    config.write_text(config.read_text() + "\n[lint]\nmax_page_bytes = 10000\n")
    assert _lint_codes(cli, repo)[0]["GW011"] == 1


def test_only_the_books_own_summary_is_a_table_of_contents(repo, cli):
    toc = "# Summary\n\n[Intro](README.md)\n\n# Part\n\n- [Draft]()\n- [Nested](nested/SUMMARY.md)\n"
    repo.commit(
        "book",
        {"book.toml": "[book]\n", "src/SUMMARY.md": toc, "src/README.md": "# Intro\n", "src/nested/SUMMARY.md": toc},
    )
    cli("init", cwd=repo.path)
    repo.commit("config")
    _, findings = _lint_codes(cli, repo)
    assert {(f["path"], f["code"]) for f in findings} == {
        ("src/nested/SUMMARY.md", "GW001"),
        ("src/nested/SUMMARY.md", "GW004"),
        ("src/nested/SUMMARY.md", "GW005"),  # its README.md link resolves to src/nested/README.md
    }


def test_an_mdbook_sub_chapter_titled_by_the_summary_may_start_at_its_first_section(repo, cli):
    """The Rust Book's sub-chapters start at `##`, titled by SUMMARY.md (as gitwiki's search titles them): 87 GW009
    warnings there. A page the summary does not title still needs its H1."""
    toc = "# Summary\n\n- [Intro](intro.md)\n  - [What Is Ownership?](ownership.md)\n"
    book = {
        "book.toml": "[book]\n",
        "src/SUMMARY.md": toc,
        "src/intro.md": "# Intro\n\nSee [ownership](ownership.md) and [loose](loose.md).\n",
        "src/ownership.md": "## What Is Ownership?\n\nRules.\n",
        "src/loose.md": "## Loose\n\nNot in the summary.\n",
    }
    assert _site_findings(cli, repo, book, "GW009") == {("src/loose.md", "GW009")}


def test_a_docusaurus_site_in_website_with_braces_before_its_docs_path(repo, cli):
    """prettier's layout: the config and sidebars in website/, docs at ../docs, and `editUrl: ({ docPath }) => …`
    before `path`. init chose `docs/ (github)`, and the sidebar was never found (no orphan checked)."""
    config = (
        "module.exports = { presets: [['classic', { docs: {\n"
        "  editUrl: ({ docPath }) => `https://github.com/o/r/edit/main/docs/${docPath}`,\n"
        "  path: '../docs', sidebarPath: require.resolve('./sidebars.js') } }]] };\n"
    )
    repo.commit(
        "site",
        {
            "website/docusaurus.config.js": config,
            "website/sidebars.js": "module.exports = { docs: ['intro'] };\n",
            "docs/intro.md": "---\ntitle: Intro\n---\nWelcome.\n",
            "docs/orphan.md": "---\ntitle: Orphan\n---\nNobody lists me.\n",
        },
    )
    code, out, _ = cli("init", cwd=repo.path)
    assert code == 0 and "corpus folder: docs/ (docusaurus): website/docusaurus.config.js" in out, out
    repo.commit("config")
    _, findings = _lint_codes(cli, repo)
    assert {(f["path"], f["code"]) for f in findings} == {("docs/orphan.md", "GW007")}


@pytest.mark.parametrize("plugins", ["[blog]", "[search, material/blog]", "\n  - blog:\n      blog_dir: blog"])
def test_mkdocs_material_blog_posts_are_published_without_a_nav_entry(repo, cli, plugins):
    """mkdocs-material's own docs: six GW007 orphans, each a post its blog plugin publishes."""
    site = {
        "mkdocs.yml": f"site_name: X\nnav:\n  - index.md\n  - blog/index.md\nplugins: {plugins}\n",
        "docs/index.md": "# Home\n",
        "docs/blog/index.md": "# Blog\n",
        "docs/blog/posts/first.md": "# First\n",
        "docs/loose.md": "# Loose\n",
    }
    assert _site_findings(cli, repo, site, "GW007") == {("docs/loose.md", "GW007")}


def test_a_docusaurus_partial_is_no_page(repo, cli):
    """Docusaurus leaves `_`-prefixed files (and `_folders/`) out of the docs: MDX partials a page imports. They
    were GW009 pages, listed in index blocks as `:::caution`, and searched."""
    from gitwiki import config as config_mod

    docs = config_mod.CorpusConfig("wiki", "docs", include=("**/*.md", "**/*.mdx"), site="docusaurus")
    paths = ["docs/intro.md", "docs/components/_Warn.mdx", "docs/_shared/note.md", "docs/snake_case.md"]
    assert config_mod.select(docs, paths) == ["docs/intro.md", "docs/snake_case.md"]
    assert config_mod.select(docs._replace(site="github"), paths) == paths  # elsewhere they are pages


def _titles(cli, repo: GitRepoFixture, query: str) -> dict[str, str]:
    code, out, err = cli("ground", "--json", "--mode", "lexical", "--top-files", "10", query, cwd=repo.path)
    assert code == 0, err
    return {d["path"]: d["title"] for d in json.loads(out)["docs"]}


def test_search_titles_a_page_without_h1_by_the_site_nav_and_follows_a_nav_change(repo, cli):
    """HTTPX's pages start without an H1 (mkdocs shows their `nav` title): search shows that title, a page with an
    H1 keeps it, and a renamed nav entry shows after `gitwiki index` though no page's blob changed."""
    _site_repo(repo, "httpx")
    cli("init", cwd=repo.path)
    nav = (repo.path / "mkdocs.yml").read_text()
    repo.commit(
        "config", {"mkdocs.yml": nav.replace("Extensions: 'advanced/extensions.md'", "Ext: 'advanced/extensions.md'")}
    )
    cli("index", "--lexical", cwd=repo.path)
    titles = _titles(cli, repo, "connection pool limits client")
    assert titles["docs/advanced/resource-limits.md"] == "Resource Limits"  # no H1: the nav's title
    assert titles["docs/advanced/clients.md"] == "Clients"
    assert titles["docs/advanced/extensions.md"] == "Extensions"  # its own H1, not the nav's "Ext"
    code, out, _ = cli("ground", "--mode", "lexical", "connection pool size limits keyword", cwd=repo.path)
    assert code == 0 and "docs/advanced/resource-limits.md  Resource Limits  (" in out
    repo.commit("nav", {"mkdocs.yml": nav.replace("Resource Limits: ", "Connection pools: ")})
    code, out, _ = cli("index", "--lexical", cwd=repo.path)
    assert code == 0, out
    titles = _titles(cli, repo, "connection pool limits client")
    assert titles["docs/advanced/resource-limits.md"] == "Connection pools"  # not the stale "Resource Limits"


def test_search_titles_mdbook_chapters_by_summary_and_plain_corpora_by_file_name(repo, cli):
    """mdBook: a chapter without an H1 takes its SUMMARY.md link text. The same page in a `github` corpus (no
    site) keeps the file name, as before."""
    _site_repo(repo, "mdbook")
    cli("init", cwd=repo.path)
    summary = repo.path / "guide/src/SUMMARY.md"
    summary.write_text(summary.read_text() + "\n- [Zebra stripes](zebras.md)\n")
    repo.commit("chapter", {"guide/src/zebras.md": "Why zebras stripe, without a heading.\n"})
    cli("index", "--lexical", cwd=repo.path)
    assert _titles(cli, repo, "zebras stripe")["guide/src/zebras.md"] == "Zebra stripes"
    config = repo.path / ".gitwiki.toml"
    config.write_text(config.read_text().replace('site = "mdbook"', 'site = "github"'))
    repo.commit("plain")
    cli("index", "--lexical", cwd=repo.path)
    assert _titles(cli, repo, "zebras stripe")["guide/src/zebras.md"] == "zebras"


def test_index_blocks_title_pages_by_the_site_nav_and_follow_a_nav_change(repo, cli):
    """An index block lists a page without an H1 by its nav title, and renders again when only the nav changed."""
    repo.commit(
        "site",
        {
            "mkdocs.yml": "site_name: x\nnav:\n  - Home: index.md\n  - Setting up: setup.md\n  - Usage: usage.md\n",
            "docs/index.md": "# Home\n\n<!-- GITWIKI:INDEX-START -->\n<!-- GITWIKI:INDEX-END -->\n",
            "docs/setup.md": "Install it first.\n",
            "docs/usage.md": "# Using it\n\nRun it.\n",
        },
    )
    cli("init", cwd=repo.path)
    repo.commit("config")
    assert cli("index-blocks", cwd=repo.path)[0] == 1  # 1: it rewrote a block
    block = (repo.path / "docs/index.md").read_text()
    assert "[Setting up](setup.md)" in block and "Using it" in block and "Usage" not in block
    repo.write("mkdocs.yml", "site_name: x\nnav:\n  - Home: index.md\n  - Installing: setup.md\n  - Usage: usage.md\n")
    assert cli("index-blocks", cwd=repo.path)[0] == 1
    block = (repo.path / "docs/index.md").read_text()
    assert "[Installing](setup.md)" in block and "Setting up" not in block


_NAV_TEXT = st.text(alphabet=st.sampled_from(list("[]()<>:-# \n\t'\"{}!/.*`_ab.md")), max_size=300) | st.text(
    max_size=200
)


@settings(max_examples=80, deadline=None)
@given(_NAV_TEXT, st.sampled_from(["mkdocs", "mdbook", "docusaurus", "github"]), st.sampled_from(["", "docs", "a/b"]))
def test_nav_titles_never_fail_and_stay_inside_the_corpus(text, site, corpus_path):
    """Any mkdocs.yml or SUMMARY.md text gives a mapping of pages to non-empty titles, never a path that climbs out
    of the repository."""
    titles = sites.titles_from_nav(site, corpus_path, text)
    assert all(title and isinstance(title, str) for title in titles.values())
    assert not any(p.startswith(("/", "../")) or p == ".." for p in titles)
    if site in ("docusaurus", "github"):
        assert titles == {}


def test_nav_titles_from_mdbook_summary_link_texts():
    text = "# Summary\n\n[Intro](README.md)\n\n- [`init` *command*](cli/init.md)\n- [Draft]()\n- [Web](https://x.org)\n"
    assert sites.titles_from_nav("mdbook", "src", text) == {"src/README.md": "Intro", "src/cli/init.md": "init command"}


def test_listings_follow_the_site_nav_then_the_alphabet(repo, cli):
    """list_files and list_tree give a site's pages in its nav's order (a folder entry stands for the pages in it),
    the pages it leaves out after them, alphabetically; a `github` corpus lists alphabetically as before."""
    from gitwiki.wiki import Wiki

    _site_repo(repo, "mkdocs")
    cli("init", cwd=repo.path)
    repo.commit("config", {"docs/zz-unlisted.md": "# Unlisted\n", "docs/aa-unlisted.md": "# Also unlisted\n"})
    cli("index", "--lexical", cwd=repo.path)
    _, files = Wiki.open(repo.path).source().files()
    paths = [f.path for f in files]
    user_guide = sorted(p for p in paths if p.startswith("user-guide/"))
    dev_guide = sorted(p for p in paths if p.startswith("dev-guide/"))
    about = ["about/release-notes.md", "about/contributing.md", "about/license.md"]
    assert paths == [
        "index.md",
        "getting-started.md",
        *user_guide,
        *dev_guide,
        *about,
        "aa-unlisted.md",
        "zz-unlisted.md",
    ]
    _, node = Wiki.open(repo.path).source().tree("", None)
    assert [f["path"] for f in node["files"]] == ["index.md", "getting-started.md", "aa-unlisted.md", "zz-unlisted.md"]
    assert [s["path"] for s in node["subdirs"]] == ["user-guide", "dev-guide", "about"]
    config = repo.path / ".gitwiki.toml"
    config.write_text(config.read_text().replace('site = "mkdocs"', 'site = "github"'))
    repo.commit("plain")
    _, files = Wiki.open(repo.path).source().files()
    assert [f.path for f in files] == sorted(paths)
