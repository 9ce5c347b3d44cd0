"""Classification as helix does it: its 35 auto-tag prefixes, its category table, singular tags, and the
passes for an entry without a category tag (leading prefix, a category word in the first line, the rescue
words in the first 3 lines); gitwiki's own prefixes keep their tags."""

from __future__ import annotations

import pytest

from gitwiki.memory.brief import UNTAGGED, _focus, category
from gitwiki.memory.entry import Entry, auto_tags, normalize_tags

# helix/DOCS.md "Auto-detected tag prefixes" (github.com/delfador0x42/helix): each tags as itself.
HELIX_PREFIXES = (
    "gotcha invariant perf architecture data-flow decision how-to gap friction todo bug fix pattern coupling "
    "module-map interface boundary lifecycle error-handling concurrency migration deprecation dependency test "
    "benchmark config deploy security api protocol schema format encoding observation hypothesis"
).split()

# helix/DOCS.md "Category classification".
HELIX_CATEGORIES = {
    "ARCHITECTURE": ("architecture", "module-map", "coupling", "interface"),
    "DATA FLOW": ("data-flow", "lifecycle", "protocol"),
    "INVARIANTS": ("invariant", "boundary", "concurrency"),
    "GOTCHAS": ("gotcha", "bug", "error-handling"),
    "DECISIONS": ("decision", "deprecation", "migration"),
    "HOW-TO": ("how-to", "config", "deploy"),
    "PERFORMANCE": ("perf", "benchmark", "optimization"),
    "GAPS": ("gap", "friction", "todo", "missing"),
}


def entry(text: str, *tags: str) -> Entry:
    return Entry("t", "2026-11-20T10:00:00Z", text, normalize_tags(tags))


def test_helix_lists_35_prefixes():
    assert len(HELIX_PREFIXES) == len(set(HELIX_PREFIXES)) == 35


@pytest.mark.parametrize("prefix", HELIX_PREFIXES)
def test_each_helix_prefix_tags_its_entry(prefix):
    assert auto_tags(f"{prefix}: the text that follows") == (prefix,)
    assert auto_tags(f"  {prefix.upper()} : shouting works too") == (prefix,)


@pytest.mark.parametrize(
    ("text", "tag"),
    [
        ("data flow: requests go through the queue", "data-flow"),
        ("hot path: the tokenizer", "perf"),
        ("module: gitwiki/memory holds the pages", "module-map"),
        ("missing: a retry budget", "gap"),
        ("deploy gotcha: the env is read once", "gotcha"),
    ],
)
def test_helix_aliases_and_two_word_prefixes(text, tag):
    assert auto_tags(text) == (tag,)


@pytest.mark.parametrize(
    ("prefix", "tag"),
    [
        ("gotcha", "gotcha"),
        ("invariant", "invariant"),
        ("perf", "perf"),
        ("performance", "perf"),
        ("architecture", "architecture"),
        ("arch", "architecture"),
        ("design", "architecture"),
        ("data-flow", "data-flow"),
        ("dataflow", "data-flow"),
        ("flow", "data-flow"),
        ("decision", "decision"),
        ("decided", "decision"),
        ("how-to", "how-to"),
        ("howto", "how-to"),
        ("recipe", "how-to"),
        ("gap", "gap"),
        ("todo", "todo"),
        ("bug", "bug"),
        ("fix", "fix"),
        ("warning", "gotcha"),
        ("pitfall", "gotcha"),
        ("note", "note"),
    ],
)
def test_gitwikis_own_prefixes_keep_their_tags(prefix, tag):
    assert auto_tags(f"{prefix}: x") == (tag,)


def test_not_a_prefix():
    assert auto_tags("see https://example.com: nothing") == ()
    assert auto_tags("unknown: not a category") == ()
    assert auto_tags("the build: three words before the colon") == ()


@pytest.mark.parametrize(
    ("raw", "tag"),
    [
        ("gotchas", "gotcha"),
        ("entries", "entry"),
        ("Invariants", "invariant"),
        ("#decisions", "decision"),
        ("addresses", "address"),
        ("class", "class"),
        ("status", "status"),
        ("analysis", "analysis"),
        ("aws", "aws"),
    ],
)
def test_tags_are_singular_as_helix_makes_them(raw, tag):
    assert normalize_tags([raw]) == (tag,)


def test_plural_and_singular_tags_are_one_tag():
    assert normalize_tags("gotchas, gotcha, Gotchas") == ("gotcha",)


@pytest.mark.parametrize(("name", "tag"), [(c, t) for c, tags in HELIX_CATEGORIES.items() for t in tags])
def test_helix_category_tags_file_under_their_category(name, tag):
    assert category(entry("nothing here says what it is", tag)) == name


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("coupling: the index and the chunker change together", "ARCHITECTURE"),
        ("lifecycle: a page is parsed, chunked, embedded", "DATA FLOW"),
        ("error-handling: every refusal is one line", "GOTCHAS"),
        ("migration: the v1 pages moved", "DECISIONS"),
    ],
)
def test_an_untagged_entry_is_classified_by_its_prefix(text, name):
    assert category(Entry("t", "2026-11-20T10:00:00Z", text)) == name  # no tags: the prefix pass


def test_a_category_word_in_the_first_line_classifies():
    assert category(entry("the concurrency of two stores on one page")) == "INVARIANTS"
    assert category(entry("the deploy needs the env file")) == "HOW-TO"


def test_keyword_rescue_reads_the_first_three_lines():
    assert category(entry("the queue\n\nwatch out: it drops messages on restart")) == "GOTCHAS"
    assert category(entry("picking a store\n\nwe chose sqlite over lmdb")) == "DECISIONS"
    assert category(entry("the tokenizer\n\nthroughput is 40 MB/s")) == "PERFORMANCE"
    assert category(entry("one\ntwo\nthree\nwatch out: the fourth line is not read")) == UNTAGGED
    assert category(entry("malloc arenas are per thread")) == UNTAGGED  # a keyword counts at a word start


def test_a_tag_wins_over_prefix_and_keywords():
    assert category(entry("gotcha: careful, this is filed by its tag", "decision")) == "DECISIONS"


def test_focus_takes_helix_plural_names():
    assert _focus("gotchas,invariants") == {"GOTCHAS", "INVARIANTS"}
    assert _focus(["frictions", "module-map"]) == {"GAPS", "ARCHITECTURE"}
