"""gitwiki.search.outline: the ripgrep-style digest `gitwiki ground` prints."""

import textwrap

from hypothesis import given, settings
from hypothesis import strategies as st

from gitwiki.search.outline import outline, wrap
from gitwiki.search.searcher import ChunkResult, DocResult, SearchResult

DOC = DocResult(
    "wiki/deploy.md",
    "Deploy",
    0.51234,
    [
        ChunkResult(["Deploy", "Rollback"], 5, 7, 0.4, "Use helm rollback."),
        ChunkResult([], 1, 2, 0.1, "```sh\nkubectl apply\n```"),
    ],
)


def test_no_results_names_the_query_corpus_and_mode():
    empty = SearchResult("zebra", "wiki", "abc", "lexical", [])
    assert outline(empty) == "no results for 'zebra' in corpus 'wiki' (lexical)\n"


def test_pages_chunks_breadcrumbs_and_footer():
    result = SearchResult("helm", "wiki", "0123456789abcdef", "hybrid", [DOC], dirty=("wiki/deploy.md",))
    assert outline(result).splitlines() == [
        "wiki/deploy.md  Deploy  (0.5123)",
        "  wiki/deploy.md:5-7  Deploy > Rollback",
        "    Use helm rollback.",
        "  wiki/deploy.md:1-2  Deploy",  # no breadcrumb: the page title
        "    ```sh",  # full chunks keep their lines
        "    kubectl apply",
        "    ```",
        "",
        "1 pages · mode hybrid · commit 0123456789ab · 1 uncommitted page(s) included",
    ]


def test_long_snippets_wrap_and_an_empty_commit_shows_none():
    doc = DOC._replace(chunks=[ChunkResult(["Deploy"], 1, 1, 0.1, "word " * 40)])
    text = outline(SearchResult("q", "wiki", "", "lexical", [doc]))
    body = [line for line in text.splitlines() if line.startswith("    ")]
    assert len(body) == 2 and all(len(line) <= 104 for line in body)
    assert text.endswith("1 pages · mode lexical · commit (none)\n")


def test_color_wraps_paths_and_scores_in_ansi_codes():
    text = outline(SearchResult("helm", "wiki", "abc", "hybrid", [DOC]), color=True)
    assert text.startswith("\033[1mwiki/deploy.md\033[0m  Deploy  \033[2m(0.5123)\033[0m\n")
    assert "  \033[36mwiki/deploy.md:5-7\033[0m  Deploy > Rollback\n" in text


def test_a_folder_summary_shows_once_above_its_first_page():
    other = DOC._replace(path="wiki/keys.md", title="Keys", chunks=DOC.chunks[:1])
    root = DOC._replace(path="README.md", title="Readme", chunks=DOC.chunks[:1])
    folders = (("wiki", "How the platform team works."), ("", "The repo."))
    lines = outline(SearchResult("helm", "wiki", "abc", "hybrid", [DOC, other, root], folders=folders)).splitlines()
    assert [line for line in lines if not line.startswith(" ")][:5] == [
        "wiki/  How the platform team works.",
        "wiki/deploy.md  Deploy  (0.5123)",
        "",
        "wiki/keys.md  Keys  (0.5123)",
        "",
    ]
    assert lines.count("wiki/  How the platform team works.") == 1 and "./  The repo." in lines
    assert lines[lines.index("./  The repo.") + 1].startswith("README.md  Readme")


def test_a_tiny_positive_score_is_not_shown_as_zero():
    # the one lexical hit of a one-page corpus: FTS5 floors the IDF of a word on every page at 1e-6
    tiny = DOC._replace(score=1.97e-06)
    assert "(1.97e-06)" in outline(SearchResult("helm", "wiki", "abc", "lexical", [tiny]))
    assert "(0.5123)" in outline(SearchResult("helm", "wiki", "abc", "lexical", [DOC]))


@settings(max_examples=500, deadline=None)
@given(
    text=st.one_of(
        st.text(alphabet="ab-—. \t\n\u00a0\u2003é…'!?_1", max_size=300),
        st.lists(st.text(alphabet="abé-—.,'!?_1", min_size=1, max_size=14), max_size=40).map(" ".join),
        st.lists(st.sampled_from(["-l", "--all", "a-b", "x--y", "well-known", "-", "word", "é-é-é"]), max_size=60).map(
            " ".join
        ),
        # a command-line page's words: cut after a hyphen between letters only, some near a line's width
        st.lists(
            st.sampled_from(
                ["{{[-l|--files-with-matches]}}", "--dry-run`", "a1-b", "ab--cd", "--x--y", "a-", "_-_", "x" * 19]
            ),
            max_size=30,
        ).map(" ".join),
    ),
    width=st.sampled_from([1, 2, 3, 5, 8, 13, 20, 21, 30, 100]),
)
def test_wrap_gives_textwraps_lines(text, width):
    assert wrap(text, width) == textwrap.wrap(text, width)
