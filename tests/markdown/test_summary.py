import pytest

from gitwiki.markdown.frontmatter import read_yaml
from gitwiki.markdown.index_block import END_MARKER, START_MARKER
from gitwiki.markdown.summary import SUMMARY_CHARS, title_and_summary


def test_setext_title_and_the_first_paragraph():
    assert title_and_summary("Title\n=====\nbody line\n") == ("Title", "body line")


def test_generated_blocks_are_not_the_summary():
    assert title_and_summary(f"# T\n{START_MARKER}\n- listed\n{END_MARKER}\n\nReal para.\n") == ("T", "Real para.")


def test_long_summaries_are_cut_at_a_word_with_an_ellipsis():
    long = title_and_summary("# T\n\n" + "word " * 60)[1]
    assert long is not None and len(long) <= SUMMARY_CHARS and long.endswith("…")
    assert long == " ".join(["word"] * 31) + "…"


def test_front_matter_wins_over_the_body():
    text = "---\ntitle: From meta\ndescription: Meta summary.\n---\n# Body title\n\nBody para.\n"
    assert title_and_summary(text) == ("From meta", "Meta summary.")
    assert title_and_summary("---\ntitle: Only title\n---\n\nBody para.\n") == ("Only title", "Body para.")


def test_a_page_without_a_title_gives_none_so_the_caller_can_show_the_file_name():
    assert title_and_summary("just text\n") == (None, "just text")
    assert title_and_summary("") == (None, None)
    assert title_and_summary("# ![logo](logo.png)\n\ntext\n") == (None, "text")  # an image only has no text


def test_links_and_images_keep_only_their_text():
    text = "# See [the guide](guide.md) ![x](y.png)\n\nRead [this][ref] and [that](a.md) first.\n"
    assert title_and_summary(text) == ("See the guide", "Read this and that first.")


@pytest.mark.parametrize(
    "text",
    [
        "# Title\n\n```\nnot a summary\n```\n\nThe summary.\n",
        "# Title\n\n- a list item\n\nThe summary.\n",
        "# Title\n\n> a quote\n\nThe summary.\n",
        "# Title\n\n    indented code\n\nThe summary.\n",
    ],
)
def test_code_lists_and_quotes_are_skipped(text):
    assert title_and_summary(text) == ("Title", "The summary.")


def test_a_paragraph_over_several_lines_is_joined_and_ends_at_a_blank_line():
    assert title_and_summary("# T\n\nFirst line\nsecond line.\n\nNext para.\n") == ("T", "First line second line.")


def test_an_h1_inside_a_fence_is_not_the_title():
    assert title_and_summary("```\n# Not it\n```\n\n# Real\n\nText.\n") == ("Real", "Text.")


def test_crlf_and_a_custom_yaml_reader():
    calls = []

    def reader(raw: str):
        calls.append(raw)
        return read_yaml(raw)

    assert title_and_summary("---\r\ntitle: T\r\n---\r\nBody.\r\n", reader) == ("T", "Body.")
    assert calls == ["title: T"]


@pytest.mark.parametrize(
    ("text", "title"),
    [
        ("# 6.0 Migration Notes {: #\\6.0}\n", "6.0 Migration Notes"),  # mkdocs attr_list, as pymdown's docs write it
        ("# Setup { #install .wide }\n", "Setup"),
        ("Title {#a}\n=====\n", "Title"),
        ("# Using {placeholders}\n", "Using {placeholders}"),  # braces that are not an attribute list stay
    ],
)
def test_a_headings_attribute_list_is_not_part_of_its_title(text, title):
    assert title_and_summary(text)[0] == title


@pytest.mark.parametrize(
    ("text", "summary"),
    [
        ("# CLI\n\n::: mkdocs-click\n    :module: x\n\nReal text.\n", "Real text."),  # mkdocs's docs
        ('# Contributing\n\n--8<-- "CONTRIBUTING.md"\n', None),
        ("# Home\n\nDocs with&nbsp;Markdown &amp; more.\n", "Docs with Markdown & more."),
        (
            '# Store\n\nimport { X } from "../components/X"\n\nThe store holds the state.\n',
            "The store holds the state.",
        ),
        ("# Note\n\n!!! note\n    An admonition.\n\nAfter it.\n", "After it."),
        ("# Book\n\n{{ mdbook-version }}\n\nThe guide.\n", "The guide."),
    ],
)
def test_what_a_docs_sites_build_replaces_is_not_the_summary(text, summary):
    """Index blocks listed `::: mkdocs-click`, `--8<-- "CONTRIBUTING.md"` and MDX imports as pages' summaries."""
    assert title_and_summary(text)[1] == summary
