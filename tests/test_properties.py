"""Property tests on generated markdown: parsing, linting and index blocks never crash; blocks are idempotent."""

import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gitwiki.config import Config, CorpusConfig
from gitwiki.lint import lint_text
from gitwiki.markdown import chunker
from gitwiki.markdown.chunker import parse_page
from gitwiki.markdown.index_block import END_MARKER, START_MARKER
from gitwiki.markdown.links import extract_links
from gitwiki.markdown.summary import title_and_summary
from gitwiki.pages import pagefacts
from gitwiki.pages.index_blocks import rewrite
from gitwiki.pages.worktree_corpus import WorktreeCorpus

CONFIG = Config(corpora=(CorpusConfig(name="wiki", path=""),))
WORDS = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)
LINE = st.one_of(
    WORDS,
    st.builds(lambda n, w: "#" * n + " " + w, st.integers(1, 7), WORDS),
    st.builds(
        lambda t, d: f"[{t}]({d})", WORDS, st.sampled_from(["", "a.md", "#x", "../b.md#y", "<c d.md>", "http://e"])
    ),
    st.sampled_from(
        [
            "```",
            "```mermaid",
            "~~~",
            "---",
            "===",
            "> quote",
            "- item",
            "    code",
            "`x`",
            "<!-- c -->",
            "title: [x",
            "<!-- gitwiki: disable=GW003 -->",
            START_MARKER,
            END_MARKER,
            "\r",
            "\t",
            "\\",
        ]
    ),
)
MARKDOWN = st.lists(LINE, max_size=25).map("\n".join)
FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@FAST
@given(MARKDOWN)
def test_chunker_links_and_lints_never_crash(text):
    parsed = parse_page(text, "fallback")
    assert all(c.start_line <= c.end_line for c in parsed.chunks)
    lines = text.split("\n")
    for link in extract_links(text):
        assert 1 <= link.line <= len(lines)
    for f in lint_text("a.md", text, {"a.md", "b.md"}, CONFIG, anchors=lambda p: pagefacts.anchors(text), linked=set()):
        assert 1 <= f.line <= len(text.replace("\r\n", "\n").replace("\r", "\n").split("\n")) and f.col >= 1
    assert title_and_summary(text)[0] != ""  # no title is None (the file name is shown), never empty


# Lines that can make a part parse differently from the whole: blocks left open at a heading line,
# containers, tables, HTML, reference definitions.
TRICKY = st.sampled_from(
    [
        "```",
        "~~~~",
        "    ```",
        "  ```",
        "````",
        "- ```",
        "1.  ```",
        "> ```",
        "<div>",
        "<pre>",
        "<!--",
        "-->",
        "<!-- x -->",
        "<?x",
        "?>",
        "</pre>",
        "| a | b |",
        "|---|---|",
        "[ref]: https://x",
        "see [ref]",
        "## [ref]",
        "- item",
        "  continued",
        "1. one",
        "",
        "text",
        "===",
    ]
)
SECTIONED = st.lists(st.one_of(LINE, TRICKY, st.builds(lambda n, w: "#" * n + " " + w, st.integers(1, 3), WORDS)))


@settings(max_examples=400, deadline=None)
@given(SECTIONED.map("\n".join), st.booleans())
def test_the_outline_parsed_part_by_part_is_the_whole_parse(body, seen_before):
    if seen_before:  # the parts' outlines come from the memo
        chunker.outline_of(body)
    assert chunker.outline_of(body) == chunker._outline(chunker.parser().parse(body))


@pytest.fixture(scope="module")
def blocks_root(tmp_path_factory) -> Path:
    """One git repository for every example (pages are listed by git, so ignore rules apply): `git init` once,
    not 150 times; each example empties it first."""
    root = Path(tmp_path_factory.mktemp("wiki"))
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    return root


@FAST
@given(
    pages=st.dictionaries(st.sampled_from(["a.md", "sub/b.md", "sub/deep/c.md", "z.md"]), MARKDOWN, max_size=4),
    prose=MARKDOWN,
    options=st.sampled_from(["", " depth=1", " sort=title summary=false heading=3"]),
)
def test_index_blocks_render_and_are_idempotent(blocks_root, pages, prose, options):
    root = blocks_root
    for old in root.iterdir():  # the last example's pages
        if old.is_dir() and old.name != ".git":
            shutil.rmtree(old)
        elif old.is_file():
            old.unlink()
    for path, text in pages.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text, encoding="utf-8")
    clean = "\n".join(line for line in prose.split("\n") if "GITWIKI:INDEX" not in line)
    index = f"{clean}\n<!-- GITWIKI:INDEX-START{options} -->\n{END_MARKER}\n"
    (root / "index.md").write_text(index, encoding="utf-8")
    once = rewrite(index, "index.md", WorktreeCorpus(root, CONFIG.corpora[0], CONFIG))
    assert once.startswith(clean + "\n") and once.endswith(f"{END_MARKER}\n")
    # A fresh corpus has an empty render memo: the second pass really renders again.
    assert rewrite(once, "index.md", WorktreeCorpus(root, CONFIG.corpora[0], CONFIG)) == once
