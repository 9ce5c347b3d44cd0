"""Fuzzed memory (hypothesis): whatever an entry's text or an import holds, store → read → edit → export →
import never changes another entry and never raises outside gitwiki's error hierarchy.

`GITWIKI_RELIABILITY_TRIALS=N` runs N times as many examples (docs/reliability.md has the counts of a
larger run); each test counts the examples it ran in `RAN`, which the larger run prints.
"""

from __future__ import annotations

import itertools
import json
import re
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gitwiki.errors import GitwikiError, UsageError
from gitwiki.markdown.chunker import parser
from gitwiki.memory import entry as entry_mod
from gitwiki.memory import replies
from gitwiki.memory import store as store_mod
from gitwiki.memory import topics as topics_mod
from gitwiki.memory.base import Memory
from gitwiki.memory.entry import Entry, clean_text, parse_page, render_page, split_lines
from tests.helpers import SCALE, GitRepoFixture
from tests.memory.helpers import HOSTILE, TEXT, WORDS

LEXICAL = '[[corpus]]\nname = "wiki"\npath = "wiki"\n[embeddings]\nenabled = false\n'
RAN: Counter[str] = Counter()

STAMP = "2026-01-02T00:00:00Z"


def headings(page: str) -> list[int]:
    tokens = parser().parse(page)
    return [t.map[0] for t in tokens if t.type == "heading_open" and t.level == 0 and t.tag in ("h1", "h2")]


@settings(max_examples=400 * SCALE, deadline=None)
@given(texts=st.lists(TEXT, min_size=1, max_size=4))
def test_any_text_is_one_entry_that_reads_back_and_commonmark_agrees(texts):
    RAN["entry texts"] += 1
    cleaned = []
    for text in texts:
        try:
            cleaned.append(clean_text(text))
            assert clean_text(cleaned[-1]) == cleaned[-1]  # cleaning is idempotent: an append re-cleans
        except UsageError:
            assert not text.replace("\x00", "").strip()  # a NUL is not shown: the page would be binary
    entries = [Entry("t", STAMP, text) for text in cleaned]
    page = render_page("t", entries)
    back = parse_page(page, "t").entries
    assert [(e.text, e.tags, e.after) for e in back] == [(text, (), "") for text in cleaned]
    assert headings(page) == [0, *(e.start_line - 1 for e in back)]
    assert render_page("t", back) == page  # parse ∘ render is the identity


# Lines of the characters a plain entry may hold, beside those that come close: the first character, line
# ends, runs of spaces, `-`/`=`/`+` lines and numbers that would open a list or a setext underline elsewhere.
PLAIN_TEXT = st.text(alphabet="aZ09 .,;:!?'\"()/+=%@-#*_`~<>[]\\\n", min_size=1, max_size=60)


@settings(max_examples=1000 * SCALE, deadline=None)
@given(text=st.one_of(PLAIN_TEXT, st.from_regex(entry_mod._PLAIN_ENTRY, fullmatch=True)))
def test_a_text_taken_as_plain_is_one_section_without_its_parse(text):
    """clean_text skips parsing an entry back when its text is a plain line: such a line must read back whole
    and leave the next entry an entry, as the parse would have checked."""
    RAN["plain texts"] += 1
    if entry_mod._PLAIN_ENTRY.fullmatch(text):
        assert entry_mod._one_section(text)
        assert clean_text(text) == text


def test_a_plain_line_is_cleaned_without_parsing_it_back(monkeypatch):
    def parsed(text: str) -> bool:
        raise AssertionError(f"parsed back: {text!r}")

    monkeypatch.setattr(entry_mod, "_one_section", parsed)
    assert clean_text("gotcha: the writer lock (see note 12); retry at 50%.") == (
        "gotcha: the writer lock (see note 12); retry at 50%."
    )
    with pytest.raises(AssertionError, match="parsed back"):
        clean_text("a `code span` is parsed back")


@settings(max_examples=300 * SCALE, deadline=None)
@given(preamble=st.one_of(st.just(""), TEXT), between=st.lists(st.one_of(st.just(""), TEXT), min_size=2, max_size=2))
def test_a_persons_page_parses_as_commonmark_sections(preamble, between):
    """Hand-written text around entries: memory's entries are exactly the dated H2s CommonMark sees."""
    RAN["hand-written pages"] += 1
    page = f"---\ntitle: x\n---\n# Notes\n\n{preamble}\n\n## {STAMP} — one\n\n{between[0]}\n\n## {STAMP} — two\n\n{between[1]}\n"
    parsed = parse_page(page, "t")
    seen = set(headings(page.replace("---\ntitle: x\n---\n", "\n\n\n", 1)))
    assert {e.start_line - 1 for e in parsed.entries} <= seen
    lines = split_lines(page)  # CR ends a line for CommonMark too
    dated = {i for i in seen if re.match(r" {0,3}##[ \t]+\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ — ", lines[i])}
    assert {e.start_line - 1 for e in parsed.entries} == dated
    assert parsed.head.startswith("---\ntitle: x\n---\n# Notes")


@pytest.fixture(scope="module")
def fuzz_mem(tmp_path_factory):
    repo = GitRepoFixture(tmp_path_factory.mktemp("memfuzz"))
    repo.commit("init", {".gitwiki.toml": LEXICAL, "wiki/index.md": "# Home\n"})
    return repo, Memory.open(repo.path)


TOPICS = itertools.count()
OPS = st.lists(
    st.one_of(
        st.tuples(st.just("store"), TEXT),
        st.tuples(st.just("append"), st.integers(1, 4), TEXT),
        st.tuples(st.just("revise"), st.integers(1, 4), TEXT),
        st.tuples(st.just("delete"), st.integers(1, 4)),
        st.tuples(st.just("tag"), st.integers(1, 4), st.lists(WORDS, max_size=2)),
    ),
    min_size=1,
    max_size=6,
)


@pytest.mark.slow
@settings(
    max_examples=25 * SCALE,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(first=TEXT, ops=OPS)
def test_store_edit_export_import_never_touch_another_entry(fuzz_mem, first, ops):
    repo, mem = fuzz_mem
    topic, copy = f"f{next(TOPICS)}", f"c{next(TOPICS)}"
    RAN["edit sequences"] += 1
    model: list[tuple[str, str, tuple[str, ...]]] = []  # (created, text, tags) per entry, in page order
    for op in [("store", first), *ops]:
        RAN["edit operations"] += 1
        try:
            if op[0] == "store":
                r = store_mod.store(mem, topic, op[1], force=True).results[0]
                if r.entry is None:  # the topic holds this text already (whitespace aside): never stored twice
                    assert r.duplicate_of is not None and r.duplicate_of.text.split() == op[1].split()
                else:
                    model.append((r.entry.created, r.entry.text, r.entry.tags))
            elif op[0] == "delete":
                store_mod.delete(mem, topic, index=op[1])
                del model[op[1] - 1]
            elif op[0] == "tag":
                e = store_mod.tag(mem, topic, index=op[1], add=op[2] or ["x"]).entries[0]
                model[op[1] - 1] = (e.created, e.text, e.tags)
            else:
                edit = store_mod.append if op[0] == "append" else store_mod.revise
                e = edit(mem, topic, op[2], index=op[1]).entries[0]
                model[op[1] - 1] = (e.created, e.text, e.tags)
        except GitwikiError:  # an empty text, an index past the end, a topic not there yet: refused
            pass
        on_page = mem.topics().get(topic)
        assert [(e.created, e.text, e.tags) for e in (on_page.page.entries if on_page else ())] == model
    exported = topics_mod.export(mem)
    mine = next((t for t in exported["topics"] if t["name"] == topic), None)
    if mine is None:
        return
    others = {name: tf.data for name, tf in mem.topics().items()}
    added, _ = topics_mod.import_memory(mem, json.loads(json.dumps({"topics": [{**mine, "name": copy}]})))
    # Import appends in time order and takes an entry once per (time, text), as docs/memory-tools.md says.
    first_seen: dict[tuple[str, str], tuple[str, str, tuple[str, ...]]] = {}
    for c, t, tags in model:
        first_seen.setdefault((c, t), (c, t, tags))
    expected = sorted(first_seen.values(), key=lambda m: m[0])
    assert added == {copy: len(expected)}
    assert [(e.created, e.text, e.tags) for e in mem.topic(copy).page.entries] == expected
    assert {name: tf.data for name, tf in mem.topics().items() if name != copy} == others


# Text as people and tools write it: trailing spaces (markdown's line break), tabs, CRLF and lone CRs, blank
# lines and whitespace at the ends, any Unicode, beside the lines that could break a page.
LINE_END = st.sampled_from(["\n", "\r\n", "\r", "  \n", "\t\r\n", "\n\n", "\n \n"])
EXACT_TEXT = st.lists(
    st.tuples(st.one_of(WORDS, HOSTILE, st.sampled_from(["  two spaces  ", "\tindented", "tab\tinside\t"])), LINE_END),
    min_size=1,
    max_size=6,
).map(lambda lines: "".join(line + end for line, end in lines)[: -len(lines[-1][1]) or None])
EXACT_TEXT = st.one_of(EXACT_TEXT, st.tuples(st.sampled_from(["", " ", "\n", "\t"]), EXACT_TEXT).map("".join))


@pytest.mark.slow
@settings(
    max_examples=40 * SCALE,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(text=EXACT_TEXT)
def test_a_stored_text_reads_back_exactly(fuzz_mem, text):
    """store → read gives back every character of the text: trailing spaces, tabs, CRLF, Unicode, the ends."""
    repo, mem = fuzz_mem
    RAN["exact texts"] += 1
    topic = f"x{next(TOPICS)}"
    try:
        stored = store_mod.store(mem, topic, text).results[0]
    except UsageError:
        assert not text.replace("\x00", "").strip()  # an empty text is the only one refused (a NUL is not shown)
        return
    assert stored.entry.text == text
    assert replies.read(mem, stored.entry.ref).data["entries"][0]["text"] == text
    assert Memory.open(repo.path).entry(topic, 1).text == text  # parsed anew from the page on disk


JSON = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), WORDS, TEXT),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(WORDS, inner, max_size=3)),
    max_leaves=8,
)
FIELD = st.sampled_from(["created", "text", "tags", "source", "confidence", "links", "modified"])
GITWIKI_ENTRY = st.fixed_dictionaries(
    {"created": st.just(STAMP), "text": TEXT},
    optional={
        "tags": st.lists(WORDS, max_size=3),
        "source": st.sampled_from(["", "src/a.py:3@0123456789ab", "a b"]),
        "confidence": st.one_of(st.floats(0, 1), st.floats()),
        "links": st.lists(st.sampled_from(["a", "b:1", "b", "c:x"]), max_size=2),
        "modified": st.sampled_from(["", STAMP, "yesterday"]),
        "after": st.one_of(st.just("## Notes\n\nby a person"), TEXT),
    },
)
# Mostly well-formed entries (an import with one bad entry is refused whole), some with a field replaced.
MUTATED_ENTRY = st.one_of(
    GITWIKI_ENTRY,
    GITWIKI_ENTRY,
    GITWIKI_ENTRY,
    st.builds(lambda e, k, v: {**e, k: v}, GITWIKI_ENTRY, FIELD, JSON),
    JSON,
)
GITWIKI_EXPORT = st.fixed_dictionaries(
    {
        "topics": st.lists(
            st.fixed_dictionaries(
                {
                    "name": st.sampled_from(["a", "A", "b", "é", "", "!"]),
                    "entries": st.lists(MUTATED_ENTRY, max_size=3),
                },
                optional={
                    "preamble": st.one_of(st.just(""), TEXT),
                    "head": st.one_of(st.just("---\nowner: x\n---\n# Title"), TEXT),
                },
            ),
            max_size=3,
        )
    },
    optional={
        "checkpoints": st.one_of(
            JSON,
            st.lists(
                st.fixed_dictionaries(
                    {"name": WORDS}, optional={"task": JSON, "done": JSON, "files": JSON, "saved": JSON}
                ),
                max_size=2,
            ),
        )
    },
)
# Other tools' exports (helix-style: memories as a flat list, topics as a mapping, entries keyed by id).
HELIX_EXPORT = st.one_of(
    st.fixed_dictionaries(
        {"memories": st.lists(st.fixed_dictionaries({"topic": WORDS, "content": TEXT, "timestamp": JSON}), max_size=3)}
    ),
    st.fixed_dictionaries(
        {
            "topics": st.dictionaries(
                WORDS, st.lists(st.fixed_dictionaries({"text": TEXT, "created_at": JSON}), max_size=2), max_size=2
            )
        }
    ),
    st.fixed_dictionaries(
        {
            "topics": st.lists(
                st.fixed_dictionaries({"topic": WORDS, "entries": st.dictionaries(WORDS, JSON, max_size=2)}), max_size=2
            )
        }
    ),
    JSON,
)


@pytest.mark.slow
@settings(
    max_examples=60 * SCALE,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.one_of(GITWIKI_EXPORT, HELIX_EXPORT))
def test_any_import_is_merged_whole_or_refused_whole(fuzz_mem, data):
    repo, mem = fuzz_mem
    RAN["imports"] += 1
    before = {name: tf.data for name, tf in mem.topics(fresh=True).items()}
    counts = {name: len(tf.page.entries) for name, tf in mem.topics().items()}
    try:
        added, _ = topics_mod.import_memory(mem, json.loads(json.dumps(data)))
    except UsageError:
        RAN["imports refused"] += 1
        assert {name: tf.data for name, tf in mem.topics(fresh=True).items()} == before
        return
    RAN["imports merged"] += 1
    after = mem.topics(fresh=True)
    for name, tf in after.items():
        assert len(tf.page.entries) == counts.get(name, 0) + added.get(name, 0)
        old = parse_page(before[name].decode(), name).entries if name in before else ()
        assert [(e.created, e.text) for e in tf.page.entries[: len(old)]] == [(e.created, e.text) for e in old]


def teardown_module():
    if SCALE > 1:
        print("\nmemory fuzz examples:", dict(RAN))


@given(
    st.one_of(
        st.text(max_size=30),
        st.floats(allow_nan=True, allow_infinity=True),
        st.integers(min_value=-(10**30), max_value=10**30),
        st.sampled_from(["24", "0.5", "1e308", "nan", "-1", "2026-11-20", "today", "2026-11-20T10:00:00Z"]),
    )
)
def test_brief_since_is_a_moment_or_a_usage_error(value):
    """brief's since (hours as helix's, or a day) from any caller: a moment not after now, or a UsageError."""
    from datetime import UTC, datetime

    from gitwiki.memory.search import since_moment

    now = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
    try:
        moment = since_moment(value, now)
    except UsageError:
        return
    assert moment.tzinfo is not None and (moment <= now or not isinstance(value, (int, float)))


@given(st.one_of(st.none(), st.integers(), st.text(max_size=12), st.sampled_from(["0", " 2 ", "²", "٣", "-1", "1e3"])))
def test_an_mcp_index_is_an_entry_number_or_a_usage_error(value):
    """memory tools' index (a number from 1, helix's string from 0): a number ≥ 1, None, or a UsageError."""
    from gitwiki.mcp.memory import entry_number

    try:
        n = entry_number(value)
    except UsageError:
        return
    assert n is None if value is None else (isinstance(n, int) and n >= 1)


@given(st.text(max_size=40) | st.sampled_from(["a:²", "a:0 b", "a:٣", "a: b:1"]))
def test_helix_links_are_links_or_a_usage_error(value):
    """helix's links string (from 0) becomes links the store takes or refuses with a UsageError."""
    from gitwiki.memory.helix import helix_links
    from gitwiki.memory.store import _links

    try:
        links = _links(helix_links(value))
    except UsageError:
        return
    assert all(isinstance(link, str) for link in links)


@pytest.mark.parametrize("value", ["[" * 3000 + "]", "{" * 3000, '"unterminated', "12", '"  "'])
def test_a_hand_written_text_line_that_is_no_json_string_is_the_pages_text(value):
    """A committed page's `[text: [[[…` nested past the recursion limit ended every memory command in a traceback,
    for every topic: a line gitwiki did not write is a person's, and read as it is shown."""
    page = parse_page(f"# t\n\n## 2026-01-01T00:00:00Z — e\n\nshown\n\n[text: {value}]\n", "t")
    assert len(page.entries) == 1 and f"shown\n\n[text: {value}]" in page.entries[0].text
