"""The topic page format: parse ∘ render is the identity, and the helpers that shape an entry."""

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from gitwiki.errors import UsageError
from gitwiki.memory import entry as entry_mod
from gitwiki.memory.entry import (
    Entry,
    TopicPage,
    auto_tags,
    clean_text,
    jaccard,
    normalize_tags,
    parse_page,
    render_entry,
    render_page,
    terms,
    topic_name,
)
from tests.helpers import SCALE
from tests.memory.helpers import ENTRIES, HOSTILE_TEXT, TEXT

PAGE = """# gotchas

Things that bit us.

## 2026-11-20T10:00:00Z — gotcha: the lock is re-entrant per thread only

Two threads of one process still wait for each other.

[tags: gotcha, locking]
[source: gitwiki/index/store.py:380@0123456789ab]
[confidence: 0.85]
[links: decisions:2 perf]
[modified: 2026-11-21T09:30:00Z]

## Notes

A section a person added by hand.

## 2026-11-22T08:00:00Z — A short heading

The text, with a fence:

```
## not a heading
[tags: not metadata]
```
"""


def test_parse_reads_every_field_and_the_line_ranges():
    page = parse_page(PAGE, "gotchas")
    assert (page.name, page.preamble) == ("gotchas", "Things that bit us.")
    first, fenced = page.entries
    assert first == Entry(
        topic="gotchas",
        created="2026-11-20T10:00:00Z",
        text="gotcha: the lock is re-entrant per thread only\n\nTwo threads of one process still wait for each other.",
        tags=("gotcha", "locking"),
        source="gitwiki/index/store.py:380@0123456789ab",
        confidence=0.85,
        links=("decisions:2", "perf"),
        modified="2026-11-21T09:30:00Z",
        index=1,
        start_line=5,
        end_line=13,
        after="## Notes\n\nA section a person added by hand.",
    )
    assert (first.ref, first.when) == ("gotchas:1", "2026-11-21T09:30:00Z")
    # A person's section is never an entry: it stays where it is, after the entry above it.
    assert fenced.index == 2 and fenced.text.startswith("A short heading\n\nThe text, with a fence:\n\n```\n")
    assert "## not a heading\n[tags: not metadata]" in fenced.text
    assert fenced.tags == () and fenced.end_line == len(PAGE.splitlines())


def test_render_of_parse_is_the_page():
    page = parse_page(PAGE, "gotchas")
    assert render_page(page.name, page.entries, page.preamble) == PAGE


@pytest.mark.parametrize(
    ("text", "whole"),
    [
        ("one line", False),
        ("first line\n\nmore text\nand more", False),
        ("x" * 100 + "\n\nafter a long first line", True),
        ("```\n## code first\n```\nthen prose", True),
        ("### Demoted heading\n\nbody", True),
        ("same\n\nsame", True),
    ],
)
def test_an_entry_reads_back_as_written(text, whole):
    text = clean_text(text)
    entry = Entry("t", "2026-11-20T10:00:00Z", text, ("a",))
    page = render_page("t", [entry])
    (parsed,) = parse_page(page, "t").entries
    assert parsed.text == text and parsed.tags == ("a",)
    # The heading carries the first line; the body repeats the whole text only when the heading had to
    # shorten or clean that line.
    body = page.split("\n\n", 2)[2]
    rest = text.partition("\n")[2].lstrip("\n")
    assert body.startswith(text if whole else (rest + "\n\n" if rest else "") + "[tags: a]")


def test_clean_text_keeps_an_entry_one_section():
    text = clean_text("  # Big\n## Mid\n[tags: x]\n```\n## fenced\n```\n")
    assert text == "### Big\n### Mid\n\\[tags: x]\n```\n## fenced\n```"
    entry = Entry("t", "2026-11-20T10:00:00Z", text)
    parsed = parse_page(render_page("t", [entry]), "t").entries
    assert len(parsed) == 1 and parsed[0].text == text and parsed[0].tags == ()
    with pytest.raises(UsageError, match="empty"):
        clean_text("  \n ")


def test_names_tags_and_auto_tags():
    assert topic_name(" Iris Auth/API ") == "iris-auth-api"
    with pytest.raises(UsageError):
        topic_name("//")
    assert normalize_tags(["Perf", "#perf", " data flow ", "", "b"]) == ("b", "data-flow", "perf")
    assert normalize_tags("x, Y") == ("x", "y")
    assert auto_tags("Gotcha: x") == ("gotcha",)
    assert auto_tags("how-to: run it") == ("how-to",)
    assert auto_tags("perf: slow") == ("perf",)
    assert auto_tags("decided: sqlite") == ("decision",)
    assert auto_tags("nothing here: really") == ()
    assert auto_tags("no prefix") == ()


def test_jaccard_on_stemmed_terms():
    a = terms("the index lock serializes writers")
    assert a == frozenset({"index", "lock", "serial", "writer"})
    assert jaccard(a, terms("writers are serialized by the index lock")) == 1.0
    assert jaccard(a, frozenset()) == 0.0


# ---- parse → render → parse over hostile text (hypothesis) -----------------------------------------


def _fields(e: Entry) -> tuple:
    return (e.created, e.text, e.tags, e.source, f"{e.confidence:g}", e.links, e.modified, e.after)


@pytest.mark.slow
@settings(
    max_examples=150 * SCALE, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much]
)
@given(entries=st.lists(ENTRIES, min_size=1, max_size=3))
@example(entries=[Entry("t", "2000-01-01T00:00:00Z", "x", confidence=0.9999999999999999)])  # writes as 1
def test_parse_render_parse_keeps_every_field_over_hostile_text(entries):
    """Text, tags, dates, links, source and confidence (to the 6 digits the page writes) read back as written,
    whatever the text holds; the entries around it stay whole."""
    page = render_page("t", entries)
    back = parse_page(page, "t").entries
    assert [_fields(e) for e in back] == [_fields(e) for e in entries]
    assert render_page("t", back) == page
    assert parse_page(page.encode("utf-8").decode("utf-8"), "t").entries == back


PERSON_TEXT = st.one_of(st.just(""), HOSTILE_TEXT, TEXT)
HEADS = st.sampled_from(["", "# t", "# Notes by hand", "---\ntitle: x\n---\n# t", "---\n- a\n---", "\ufeff---\n---"])


def _slow_check(page: str, entries: list[Entry]) -> TopicPage | None:
    """render_page's check done the plain way: the whole page parsed with a probe entry after it."""
    probed = entry_mod._parse_page(page + "\n" + render_entry(Entry("t", entry_mod._PROBE, "probe")), "t")
    expected = [(e.created, e.text) for e in entries] + [(entry_mod._PROBE, "probe")]
    if [(e.created, e.text) for e in probed.entries] != expected:
        return None
    return TopicPage(probed.name, probed.preamble, probed.entries[:-1], probed.head)


@settings(max_examples=200 * SCALE, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    head=HEADS,
    preamble=PERSON_TEXT,
    entries=st.lists(st.tuples(ENTRIES, PERSON_TEXT), max_size=3),
    appended=st.lists(st.tuples(ENTRIES, st.one_of(st.just(""), PERSON_TEXT)), min_size=1, max_size=4),
)
def test_the_checked_render_parses_as_the_page_alone(head, preamble, entries, appended):
    """render_page's check parses the page with a probe entry after it (after a page it checked before, the
    entries appended to it alone); the store reads the page back from that parse without the probe. Whatever a
    person wrote around the entries (fences, HTML, lists, headings, front matter) and whatever the entries
    hold, the check refuses what the whole page's check refuses, and the parse is the page's own."""
    entry_mod._checked.clear()
    made = [e._replace(after=after.strip()) for e, after in entries]
    for e, after in [(None, None), *appended]:
        if e is not None:
            made.append(e._replace(after=after.strip()))
        try:
            page = render_page("t", made, preamble.strip(), head)
        except UsageError:
            page = render_page("t", made, preamble.strip(), head, verify=False)
            assert _slow_check(page, made) is None
            continue
        assert _slow_check(page, made) == entry_mod._parse_page(page, "t")
        kept = entry_mod._checked["t"]
        assert kept[0] is page and parse_page(page, "t") is kept[1]  # the read back takes it
        assert kept[1] == entry_mod._parse_page(page, "t")
        assert parse_page(page, "u") == entry_mod._parse_page(page, "u")  # another name: parsed


def test_a_page_other_than_the_checked_one_is_parsed():
    page = render_page("t", [Entry("t", "2026-01-01T00:00:00Z", "one")])
    other = page.replace("one", "two")
    assert parse_page(other, "t").entries[0].text == "two"
    assert parse_page(page, "t").entries[0].text == "one"
