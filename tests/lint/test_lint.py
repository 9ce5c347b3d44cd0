import json

import pytest

from gitwiki.config import Config, CorpusConfig, LintConfig
from gitwiki.lint import RULES, Finding, lint_text
from gitwiki.lint.runner import ORPHAN
from gitwiki.pages import pagefacts
from tests.helpers import edited_every_way

CONFIG = Config(corpora=(CorpusConfig(name="wiki", path="wiki"),))
PAGES = {"wiki/index.md", "wiki/a.md", "wiki/sub/b.md"}
LEXICAL = "[embeddings]\nenabled = false\n"


def found(text, path="wiki/a.md", pages=PAGES, config=CONFIG, **kw):
    return [(f.code, f.line, f.col) for f in lint_text(path, text, pages, config, **kw)]


@pytest.mark.parametrize(
    "code, good, bad, where",
    [
        ("GW001", "# T\n\n[x](a.md) ![i](p.png)\n", "# T\n\nsee [x]() and ![i](<>)\n", [(3, 5), (3, 15)]),
        ("GW002", "# T\n\n```mermaid\ngraph TD; A-->B\n```\n", "# T\n\n  ```mermaid\n\n  ```\n", [(3, 3)]),
        ("GW003", "# T\n## A\n### B\n# C2\n", "# T\n\n### B\n#### C\n\n###### D\n", [(3, 1), (6, 1)]),
        ("GW004", "# T\n## A\n", "# T\n\nOther\n======\n\n # U\n", [(3, 1), (6, 2)]),
        (
            "GW005",
            "# T\n[b](sub/b.md) [i](./index.md) [u](https://x/y.md) [s](sub/) [o](../README.md)\n",
            "# T\n\n[m](missing.md)\n[r]: sub/nope.md\n",
            [(3, 1), (4, 1)],
        ),
        (
            "GW006",
            '# T\n## Set up, again!\n[s](#set-up-again) [b](sub/b.md#intro) [h](#anchor)\n<a name="anchor"></a>\n',
            "# T\n## Real\n\n[s](#missing)   [b](sub/b.md#nope)\n",
            [(4, 1), (4, 17)],
        ),
        ("GW008", "---\ntitle: ok\n---\n# T\n", "---\ntitle: ok\nbad: [x\n---\n# T\n", [(3, 1)]),
        ("GW009", "---\ntitle: ok\n---\n\n# T\n\ntext\n", "---\ntitle: ok\n---\n\nIntro first.\n# T\n", [(5, 1)]),
        ("GW009", "\n   # T\n", "Title\n=====\n", [(1, 1)]),
    ],
)
def test_rule_good_and_bad_with_exact_positions(code, good, bad, where):
    texts = {"wiki/sub/b.md": "# B\n\n## Intro\n"}

    def anchors(path):
        return pagefacts.anchors(texts[path]) if path in texts else None

    assert [f for f in found(good, anchors=anchors) if f[0] == code] == []
    assert [(line, col) for c, line, col in found(bad, anchors=anchors) if c == code] == where


def test_orphan_needs_the_corpus_and_spares_the_front_page():
    assert "GW007" not in [c for c, *_ in found("# A\n")]  # no `linked`: not checked
    assert found("# A\n", linked={"wiki/sub/b.md"}) == [("GW007", 1, 1)]
    assert found("# A\n", linked={"wiki/a.md"}) == []
    assert found("# Home\n", path="wiki/index.md", linked=set()) == []
    finding = lint_text("wiki/a.md", "# A\n", PAGES, CONFIG, linked=set())[0]
    assert finding.severity == "warning" and "index" in finding.hint


def test_finding_record_and_suggestion():
    (f,) = lint_text("wiki/a.md", "# A\n[b](sub/bb.md)\n", PAGES, CONFIG)
    assert f == Finding(
        "wiki/a.md", 2, 1, "GW005", "error", "link to missing page 'sub/bb.md' (resolves to wiki/sub/bb.md)", f.hint
    )
    assert "'sub/b.md'" in f.hint


def test_links_outside_corpora_and_above_the_root():
    assert found("# A\n[x](../src/code.md)\n") == []  # not a corpus page: cannot be checked
    assert found("# A\n[x](../../../x.md)\n") == [("GW005", 2, 1)]


def test_disable_inline_in_config_and_per_corpus():
    bad = "# A\n# B\n"
    assert found(bad) == [("GW004", 2, 1)]
    assert found("<!-- gitwiki: disable=GW004, gw003 -->\n" + bad) == []
    assert found(bad, config=Config(corpora=CONFIG.corpora, lint=LintConfig(disable=("multiple-h1",)))) == []
    per_corpus = Config(corpora=(CorpusConfig(name="wiki", path="wiki", lint_disable=("GW004",)),))
    assert found(bad, config=per_corpus) == []
    assert found(bad, path="other/a.md", config=per_corpus) == [("GW004", 2, 1)]


def test_rules_registry_is_complete():
    assert sorted(RULES) == [f"GW{i:03d}" for i in range(1, 14)]
    assert all(r.severity in ("error", "warning") and r.hint and r.summary for r in RULES.values())


def _wiki(repo):
    repo.write(".gitwiki.toml", LEXICAL)
    repo.commit(
        "init",
        {
            "wiki/index.md": "# Home\n\n[A](a.md)\n",
            "wiki/a.md": "# A\n\n[B](b.md#intro)\n",
            "wiki/b.md": "# B\n\n## Intro\n",
        },
    )


def test_cli_checks_links_against_the_staged_tree(repo, cli):
    _wiki(repo)
    repo.write("wiki/c.md", "# C\n")  # on disk, not staged
    repo.write("wiki/a.md", "# A\n\n[B](b.md#intro) [C](c.md)\n")
    code, out, err = cli("lint", "wiki/a.md", cwd=repo.path)
    assert code == 1
    assert out.splitlines()[0] == "wiki/a.md:3:17: GW005 link to missing page 'c.md' (resolves to wiki/c.md)"
    assert "1 error(s)" in err
    repo.git("add", "wiki/c.md")
    assert cli("lint", "wiki/a.md", cwd=repo.path)[0] == 0


def test_cli_all_pages_json_warnings_and_subdirectory_paths(repo, cli):
    _wiki(repo)
    repo.write("wiki/lonely.md", "# Lonely\n")
    repo.git("add", "-A")
    code, out, _ = cli("lint", "--format", "json", cwd=repo.path)
    data = json.loads(out)
    assert code == 0  # a warning alone does not fail
    assert [(f["path"], f["code"], f["severity"]) for f in data["findings"]] == [("wiki/lonely.md", "GW007", "warning")]
    assert (data["errors"], data["warnings"]) == (0, 1)
    repo.write("wiki/b.md", "# B\n### Deep\n")
    code, out, _ = cli("lint", "b.md", "--format", "github", cwd=repo.path / "wiki")
    assert code == 1
    assert out.startswith("::error file=wiki/b.md,line=2,col=1,title=GW003::heading level jumps from H1 to H3")


def test_memory_pages_are_not_linted_for_what_their_notes_carry(repo, cli):
    """A note's links, headings and a topic's size are the note's and the memory's (docs/lint-rules.md, Memory
    pages): `gitwiki lint` passes a memory whose notes carry links to pages of another place; the same link on a
    page of the wiki is still an error."""
    _wiki(repo)
    note = "gotcha: see [the runbook](runbook.md#retries) and [empty]()\n\n#### deep heading\n\nbody"
    assert cli("memory", "store", "ops", note, cwd=repo.path)[0] == 0
    for n in range(30):  # a topic past [lint] max_page_bytes (20000)
        assert cli("memory", "store", "big", f"note {n} " + "word " * 150, "--force", cwd=repo.path)[0] == 0
    assert (repo.path / "wiki/memory/big.md").stat().st_size > 20_000
    repo.git("add", "-A")
    code, out, err = cli("lint", "--format", "json", cwd=repo.path)
    findings = json.loads(out)["findings"]
    assert code == 0, (out, err)
    assert {f["code"] for f in findings if f["path"].startswith("wiki/memory/")} <= {ORPHAN}
    repo.write("wiki/c.md", "# C\n\n[the runbook](runbook.md#retries)\n")
    repo.git("add", "-A")
    code, out, _ = cli("lint", "--format", "json", cwd=repo.path)
    assert code == 1 and [f["code"] for f in json.loads(out)["findings"] if f["path"] == "wiki/c.md"] == [
        ORPHAN,
        "GW005",
    ]


def test_cli_all_pages_skips_a_staged_page_removed_from_disk(repo, cli):
    _wiki(repo)
    repo.write("wiki/gone.md", "# Gone\n")
    repo.git("add", "-A")
    (repo.path / "wiki/gone.md").unlink()  # the removal is not staged
    repo.write("wiki/a.md", "# A\n\n[B](b.md#intro) [Gone](gone.md)\n")
    code, out, err = cli("lint", "--format", "json", cwd=repo.path)
    assert code == 0, err
    assert [f["path"] for f in json.loads(out)["findings"]] == []  # the link still resolves to the staged page


def test_cli_lists_rules_and_rejects_files_outside_the_repo(repo, cli, tmp_path):
    code, out, _ = cli("lint", "--list-rules", cwd=repo.path)
    assert code == 0 and len(out.splitlines()) == len(RULES)
    code, _, err = cli("lint", str(tmp_path / "elsewhere.md"), cwd=repo.path)
    assert code == 2 and "outside the repository" in err


def test_lint_and_index_blocks_do_not_import_heavy_modules(repo):
    """The pre-commit hooks run on every commit: no pygit2, no search stack, and yaml, markdown-it and
    jinja2 only when a page needs them (no front matter here; index-blocks parses no page, and renders
    only a block whose listing changed)."""
    import subprocess
    import sys

    _wiki(repo)
    repo.write("wiki/index.md", "# Home\n\n[A](a.md)\n\n<!-- GITWIKI:INDEX-START -->\n<!-- GITWIKI:INDEX-END -->\n")
    heavy = (
        "pygit2",
        "yaml",
        "numpy",
        "lancedb",
        "fastembed",
        "onnxruntime",
        "mcp",
        "gitwiki.wiki",
        "gitwiki.search.searcher",
        "gitwiki.index.embed",
    )

    def imported(command: str, *also: str) -> list[str]:
        probe = (
            "import sys; from gitwiki.cli import main\n"
            f"main({command.split()!r})\n"
            f"print('imported:', [m for m in {(*heavy, *also)!r} if m in sys.modules])\n"
        )
        done = subprocess.run([sys.executable, "-c", probe], cwd=repo.path, capture_output=True, text=True)
        assert "imported:" in done.stdout, done.stdout + done.stderr
        return done.stdout.split("imported: ", 1)[1].strip()

    assert imported("lint wiki/a.md") == "[]"
    assert imported("index-blocks wiki/a.md", "markdown_it") == "[]"  # renders the block: jinja2 is fine
    assert imported("index-blocks wiki/a.md", "markdown_it", "jinja2") == "[]"  # nothing changed: no render


def test_linked_pages_resolves_every_way_a_link_can_name_a_page():
    from gitwiki.lint.runner import linked_pages

    links = {
        "wiki/a.md": ["sub/b%20c.md#intro", "sub/?tab=1", "a.md", "https://example.com/other/d.md"],
        "wiki/sub/b c.md": ["../", "./d.md?x"],
        "wiki/other/d.md": ["../sub/e.md", "."],
    }
    wanted = {
        "wiki/sub/b c.md",
        "wiki/sub/index.md",
        "wiki/index.md",
        "wiki/sub/d.md",
        "wiki/other/d.md",
        "wiki/other/README.md",
        "wiki/a.md",
    }
    assert linked_pages(sorted(links), links.get, CONFIG, wanted) == {
        "wiki/sub/b c.md",  # percent-encoded name, with a fragment
        "wiki/sub/index.md",  # a folder link, with a query
        "wiki/index.md",  # `../` from a subfolder
        "wiki/sub/d.md",  # same file name as wiki/other/d.md: only the one the link resolves to counts
        "wiki/other/README.md",  # `.`: the page's own folder
    }  # a.md links only to itself and d.md in other/ only from an external URL: neither counts


def test_conventions_file_name_title_and_size():
    assert found("# T\n", path="wiki/deploy-guide-2.md") == []
    assert found("# T\n", path="wiki/README.md") == []  # the corpus's front page keeps its name
    for name in ("Deploy Guide", "deploy_guide", "DeployGuide", "deploy--guide"):
        (f,) = lint_text(f"wiki/{name}.md", "# T\n", PAGES, CONFIG)
        assert (f.code, f.severity) == ("GW010", "warning") and "deploy" in f.hint and ".md (git mv)" in f.hint
    assert [c for c, *_ in found("")] == ["GW009"]  # an empty page has no title either
    big = "# T\n\n" + "word " * 5000
    (f,) = lint_text("wiki/a.md", big, PAGES, CONFIG)
    assert (f.code, f.severity, f.line) == ("GW011", "warning", 1) and "25005 bytes" in f.message
    small = CONFIG._replace(lint=LintConfig(max_page_bytes=10))
    assert [c for c, *_ in found("# Title\n\nmore than ten\n", config=small)] == ["GW011"]
    assert found(big, config=CONFIG._replace(lint=LintConfig(max_page_bytes=0))) == []


def test_a_page_over_the_search_limit_is_an_error_not_a_warning():
    from gitwiki.config import SearchConfig

    limited = CONFIG._replace(search=SearchConfig(max_page_bytes=100), lint=LintConfig(max_page_bytes=0))
    (f,) = lint_text("wiki/a.md", "# T\n\n" + "deploy notes\n" * 20, PAGES, limited)
    assert (f.code, f.severity, f.line) == ("GW013", "error", 1) and "only its first 100 bytes" in f.message
    assert found("# T\n\nshort\n", config=limited) == []


def test_a_page_over_the_search_limit_is_linted_up_to_it_and_said_at_its_size():
    """A 31 MB page took lint 17 s and 1.3 GB in a pre-commit hook: what search does not index is not linted."""
    from gitwiki.config import SearchConfig
    from gitwiki.lint.runner import lint_page

    limited = CONFIG._replace(search=SearchConfig(max_page_bytes=100))
    data = ("# T\n\n" + "deploy notes\n" * 20 + "[gone](nowhere.md)\n").encode()
    found_codes = {f.code: f for f in lint_page("wiki/a.md", data, PAGES, limited)}
    assert set(found_codes) == {"GW013"}  # not the dead link past the limit
    assert f"the page is {len(data)} bytes" in found_codes["GW013"].message


def test_lint_of_a_repo_edited_every_way_finds_what_the_full_listing_found(repo, monkeypatch):
    """The staged listing limited to the corpus folders, `missing` by key scan and plain links' names without
    `link_name` give the findings of the whole-repo listing, key-by-key reads and `link_name` of every link."""
    from gitwiki.git import gitcli
    from gitwiki.lint import runner

    edited_every_way(repo)
    repo.write("notes/outside.md", "# Not in the corpus\n")
    repo.git("add", "notes/outside.md")
    checkout = gitcli.discover(repo.path)
    config = Config(corpora=(CorpusConfig(name="wiki", path="wiki", exclude=("j.md",)),))
    pages = [f"wiki/{n}.md" for n in ("a", "a2", "b", "e2", "f2", "g", "h", "i", "index", "c")]

    def lint_twice() -> list[list[Finding]]:
        return [
            runner.lint_repo(checkout, config, pages).findings,
            runner.lint_repo(checkout, config, ["wiki/a.md"]).findings,
        ]

    monkeypatch.setattr(pagefacts, "BULK", 0)
    new = lint_twice()
    (repo.path / ".git/gitwiki/pagefacts.sqlite").unlink()
    with monkeypatch.context() as old:
        old.setattr(pagefacts, "BULK", 10**9)
        old.setattr(
            runner,
            "staged_pages",
            lambda root, config: {p: b for p, b in gitcli.staged_files(root).items() if runner.corpus_of(config, p)},
        )
        old.setattr(runner, "_NOT_PLAIN", lambda raw: True)  # every link through `link_name`
        assert lint_twice() == new
    # g.md (linked as %67.md), b.md (./b.md#top) and index.md (../wiki/) are no orphans
    assert {f.path for f in new[0] if f.code == ORPHAN} == {f"wiki/{n}.md" for n in ("a2", "e2", "f2", "h", "i")}
    assert [(f.line, f.code) for f in new[0] if f.path == "wiki/i.md" and f.code != ORPHAN] == [
        (4, "GW006"),
        (4, "GW005"),
    ]


def test_lint_from_a_subfolder_says_it_lints_the_whole_repo(repo, cli):
    _wiki(repo)
    (repo.path / "wiki/sub").mkdir()
    code, _, err = cli("lint", cwd=repo.path / "wiki/sub")
    assert code == 0 and "no FILE given, so every staged page of" in err and "not only this folder's" in err
    assert "no FILE given" not in cli("lint", cwd=repo.path)[2]
