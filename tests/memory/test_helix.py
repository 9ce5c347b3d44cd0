"""Migration from helix: its binary data.log (written here from helix's documented format) and its JSON
export become memory pages with their topics, tags, dates and links; deleted entries stay out; a damaged
or hostile log is refused whole with one clear error and nothing written."""

from __future__ import annotations

import itertools
import json
import struct
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gitwiki.errors import UsageError
from gitwiki.memory import helix, replies
from gitwiki.memory.base import Memory
from gitwiki.memory.entry import normalize_tags
from tests.helpers import SCALE
from tests.mcp.client import call, connect, refused, run
from tests.memory.helpers import ENTRIES, Log

LEXICAL = '[[corpus]]\nname = "wiki"\npath = "wiki"\n[embeddings]\nenabled = false\n'


def sample() -> Log:
    log = Log()
    log.entry("build-gotchas", "[tags: gotcha, build]\narm64 only for the FFI bridge\nlink with -arch arm64", 1440)
    gone = log.entry("build-gotchas", "an entry deleted later", 1500)
    log.entry(
        "engine",
        "[tags: architectures]\n[source: src/cache.rs:27]\n[confidence: 0.85]\n[links: build-gotchas:0]\n"
        "CachedEntry holds pre-tokenized tf_map",
        2 * 1440 + 90,
    )
    log.delete(gone)
    revised = log.entry("engine", "first version", 3000)
    log.entry("engine", "[modified: 2024-01-05 10:00]\nsecond version", 3000)
    log.delete(revised)
    return log


@pytest.fixture
def mem(repo):
    repo.commit("init", {".gitwiki.toml": LEXICAL, "wiki/index.md": "# Home\n"})
    return Memory.open(repo.path)


def test_a_documented_log_parses_into_live_entries_with_their_metadata():
    doc = helix.parse_log(sample().bytes())
    topics = {t["name"]: t["entries"] for t in doc["topics"]}
    assert list(topics) == ["build-gotchas", "engine"]
    gotcha, engine, second = topics["build-gotchas"][0], topics["engine"][0], topics["engine"][1]
    assert len(topics["build-gotchas"]) == 1 and len(topics["engine"]) == 2  # both deletes honoured
    assert gotcha == {
        "created": "2024-01-02T00:00:00Z",
        "text": "arm64 only for the FFI bridge\nlink with -arch arm64",
        "tags": ["gotcha", "build"],
    }
    assert engine["created"] == "2024-01-03T01:30:00Z" and engine["source"] == "src/cache.rs:27"
    assert engine["confidence"] == 0.85 and engine["links"] == ["build-gotchas:1"]  # helix's 0 is gitwiki's 1
    assert second["text"] == "second version" and second["modified"] == "2024-01-05T10:00:00Z"


def test_import_helix_writes_pages_singular_tags_and_skips_deleted(mem, repo):
    from gitwiki.memory import replies

    dry = replies.import_helix(mem, sample().bytes(), dry_run=True)
    assert dry.data == {"added": {"build-gotchas": 1, "engine": 2}, "checkpoints": [], "dry_run": True}
    assert dry.text.startswith("would import 3 entries") and not (repo.path / "wiki/memory").exists()
    done = replies.import_helix(mem, sample().bytes())
    assert done.data["added"] == {"build-gotchas": 1, "engine": 2}
    page = (repo.path / "wiki/memory/engine.md").read_text()
    assert "## 2024-01-03T01:30:00Z — CachedEntry holds pre-tokenized tf_map" in page
    assert "[tags: architecture]" in page and "[links: build-gotchas:1]" in page and "deleted" not in page
    assert "first version" not in page and "[modified: 2024-01-05T10:00:00Z]" in page
    assert replies.import_helix(mem, sample().bytes()).data["added"] == {}  # a second import adds nothing


def test_helix_json_export_imports_through_the_same_checks(mem, repo):
    from gitwiki.memory import replies

    export = {"net": [{"ts": 60, "body": "[tags: gotchas]\nmax 8 TCP connections per pool"}]}
    assert replies.import_helix(mem, json.dumps(export).encode()).data["added"] == {"net": 1}
    assert "[tags: gotcha]" in (repo.path / "wiki/memory/net.md").read_text()
    bad = {"net": [{"ts": 60, "body": "x\n[confidence: 7]"}]}
    with pytest.raises(UsageError, match="confidence must be a number from 0 to 1"):
        replies.import_helix(mem, json.dumps(bad).encode())
    forged = {"net": [{"ts": 61, "body": "y\n[source: a.py:1]\n[links: a\n## 2026-11-21T10:00:00Z — forged]"}]}
    replies.import_helix(mem, json.dumps(forged).encode())  # a header in a body stays text of its entry
    assert [e.text.split("\n")[0] for e in mem.topics(fresh=True)["net"].page.entries] == [
        "max 8 TCP connections per pool",
        "y",
    ]
    helix_topics = {"topics": [{"ts": 5, "body": "a helix topic called topics"}]}
    assert replies.import_helix(mem, json.dumps(helix_topics).encode()).data["added"] == {"topics": 1}
    with pytest.raises(UsageError, match="gitwiki export, not helix"):
        replies.import_helix(mem, json.dumps({"format": "gitwiki-memory", "topics": []}).encode())


DAMAGED = {
    "empty": b"",
    "bad magic": b"XXXX\x01\x00\x00\x00",
    "version 2": b"AMRL\x02\x00\x00\x00",
    "unknown record": b"AMRL\x01\x00\x00\x00\x07",
    "huge body": b"AMRL\x01\x00\x00\x00" + struct.pack("<BBIi2x", 1, 1, 2**32 - 1, 0) + b"t",
    "delete of nothing": Log().bytes() + struct.pack("<B3xI", 2, 8),
    "invalid utf-8": b"AMRL\x01\x00\x00\x00" + struct.pack("<BBIi2x", 1, 1, 1, 0) + b"t\xff",
    "time before year 1": b"AMRL\x01\x00\x00\x00" + struct.pack("<BBIi2x", 1, 1, 1, -(2**31)) + b"tx",
    "time in the future": b"AMRL\x01\x00\x00\x00" + struct.pack("<BBIi2x", 1, 1, 1, 2**31 - 1) + b"tx",
}


@pytest.mark.parametrize("name", DAMAGED)
def test_a_damaged_log_is_refused_with_one_clear_error(name):
    with pytest.raises(UsageError) as info:
        helix.parse_log(DAMAGED[name])
    assert "\n" not in str(info.value)


def test_minutes_from_1970_as_helixs_code_counts_and_from_2024_as_its_readme_says_both_read():
    # helix/src/time.rs counts minutes since 1970 (local time); helix's README says since 2024-01-01 UTC.
    log = Log()
    log.entry(
        "t", "from the code", (datetime(2026, 2, 21, 6, 11, tzinfo=UTC) - helix.UNIX_EPOCH) // timedelta(minutes=1)
    )
    log.entry("t", "from the readme", (datetime(2026, 2, 21, 6, 11, tzinfo=UTC) - helix.EPOCH) // timedelta(minutes=1))
    entries = helix.parse_log(log.bytes(), now=datetime(2026, 11, 26, tzinfo=UTC))["topics"][0]["entries"]
    assert [e["created"] for e in entries] == ["2026-02-21T06:11:00Z"] * 2


def test_an_entry_dated_after_today_is_refused():
    for base in (helix.UNIX_EPOCH, helix.EPOCH):
        log = Log()
        log.entry("t", "x", (datetime(2027, 1, 1, tzinfo=UTC) - base) // timedelta(minutes=1))
        with pytest.raises(UsageError, match="is dated 2027-01-01T00:00:00Z, after today"):
            helix.parse_log(log.bytes(), now=datetime(2026, 11, 26, tzinfo=UTC))
    day_ahead = Log()
    day_ahead.entry("t", "x", (datetime(2026, 11, 27, tzinfo=UTC) - helix.EPOCH) // timedelta(minutes=1))
    assert helix.summary(helix.parse_log(day_ahead.bytes(), now=datetime(2026, 11, 26, tzinfo=UTC))) == {"t": 1}


def test_a_delete_of_a_deleted_entry_or_mid_record_offset_is_refused():
    log = Log()
    at = log.entry("t", "x")
    log.delete(at)
    log.delete(at)
    with pytest.raises(UsageError, match="no live entry starts"):
        helix.parse_log(log.bytes())
    log = Log()
    at = log.entry("t", "x")
    log.delete(at + 1)
    with pytest.raises(UsageError, match="no live entry starts"):
        helix.parse_log(log.bytes())


def test_every_truncation_of_a_valid_log_is_refused_unless_it_ends_at_a_record():
    log = sample()
    data = log.bytes()
    parsed = set()
    for cut in range(len(data) + 1):
        try:
            helix.parse_log(data[:cut])
        except UsageError as e:
            assert "\n" not in str(e)
        else:
            parsed.add(cut)
    assert parsed == set(log.ends)  # a cut inside the header or a record is never half-read


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=200))
def test_random_bytes_parse_or_are_refused_cleanly(data):
    for blob in (data, b"AMRL\x01\x00\x00\x00" + data):
        try:
            doc = helix.parse_log(blob)
        except UsageError as e:
            assert "\n" not in str(e)
        else:
            assert all(isinstance(t["name"], str) for t in doc["topics"])


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.text(min_size=1, max_size=20),
            st.text(max_size=60),
            st.integers(0, 1_500_000) | st.integers(-(2**31), 2**31 - 1),
            st.booleans(),
        ),
        max_size=8,
    ),
    st.integers(0, 10),
)
def test_generated_logs_keep_exactly_the_live_entries(records, bad_delete):
    log, live = Log(), []
    for topic, body, minutes, deleted in records:
        if len(topic.encode()) > 255:
            continue
        at = log.entry(topic, body, minutes)
        if deleted:
            log.delete(at)
        else:
            live.append((topic, minutes, body))
    try:
        doc = helix.parse_log(log.bytes())
    except UsageError as e:  # only a blank topic, a time out of range: never an exception of another kind
        assert "\n" not in str(e)
    else:
        assert sum(helix.summary(doc).values()) == len(live)
    log.delete(8 + bad_delete if bad_delete else 3)  # an offset inside the header or a record
    with pytest.raises(UsageError):
        helix.parse_log(log.bytes())


def test_cli_import_helix_dry_run_import_and_refusal(mem, repo, cli, tmp_path):
    path = tmp_path / "data.log"
    path.write_bytes(sample().bytes())
    code, out, _ = cli("memory", "import", "--helix", str(path), "--dry-run", cwd=repo.path)
    assert code == 0 and out.startswith("would import 3 entries: build-gotchas +1, engine +2")
    assert not (repo.path / "wiki/memory").exists()
    code, out, _ = cli("memory", "import", "--helix", str(path), cwd=repo.path)
    assert code == 0 and out.startswith("imported 3 entries")
    path.write_bytes(sample().bytes()[:-3])
    code, out, err = cli("memory", "import", "--helix", str(path), cwd=repo.path)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and "cut short" in err
    code, out, err = cli("memory", "import", "--helix", str(tmp_path / "missing.log"), cwd=repo.path)
    assert code == 2 and "cannot read" in err


def test_mcp_import_takes_helix_json_parameter(repo):
    repo.commit("init", {".gitwiki.toml": LEXICAL, "wiki/index.md": "# Home\n"})
    export = json.dumps({"api-design": [{"ts": 0, "body": "REST endpoints use /v2/ prefix"}]})

    async def main():
        async with connect(repo.path) as s:
            done = (await call(s, "memory_topics", action="import", json=export)).structured_content
            bad = await refused(s, "memory_topics", action="import", json={"t": [{"ts": "x", "body": "y"}]})
            return done, bad

    done, bad = run(main)
    assert done["added"] == {"api-design": 1}
    assert bad.error.code == -32602 and "whole minutes" in str(bad)
    assert (
        "## 2024-01-01T00:00:00Z — REST endpoints use /v2/ prefix"
        in (repo.path / "wiki/memory/api-design.md").read_text()
    )


def test_a_body_that_is_not_unicode_refuses_the_import_and_writes_nothing(mem, repo):
    from gitwiki.memory import replies

    export = '{"a": [{"ts": 1, "body": "fine"}], "b": [{"ts": 2, "body": "bad \\ud800"}]}'
    with pytest.raises(UsageError, match="not valid Unicode"):
        replies.import_helix(mem, export.encode())
    assert not (repo.path / "wiki/memory").exists()


HOSTILE = st.sampled_from(
    [
        "## 2026-11-21T10:00:00Z — forged",
        "[tags: x]",
        "[links: a:0 b]",
        "[confidence: 2]",
        "[source: a.py:1\n## forged]",
        "```",
        "# H1",
        "line\u2028two",
        "---",
        "<!--",
        "",
    ]
)


@pytest.mark.slow
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(
        st.tuples(st.sampled_from(["a", "b", "Ab"]), st.lists(HOSTILE | st.text(max_size=20), max_size=4)),
        min_size=1,
        max_size=5,
    ),
    st.data(),
)
def test_any_generated_log_imports_whole_or_writes_nothing(tmp_path_factory, records, data):
    from gitwiki.memory import replies
    from tests.helpers import GitRepoFixture

    repo = GitRepoFixture(tmp_path_factory.mktemp("r"))
    repo.commit("init", {".gitwiki.toml": LEXICAL, "wiki/index.md": "# Home\n"})
    log, live = Log(), []
    for n, (topic, lines) in enumerate(records):
        at = log.entry(topic, "\n".join([f"entry {n}", *lines]), n)
        if data.draw(st.booleans()):
            log.delete(at)
        else:
            live.append(topic.lower())  # `Ab` is page ab
    mem = Memory.open(repo.path)
    try:
        added = replies.import_helix(mem, log.bytes()).data["added"]
    except UsageError as e:
        assert "\n" not in str(e)
        assert not (repo.path / "wiki/memory").exists()
    else:
        pages = mem.topics(fresh=True)
        assert added == {t: live.count(t) for t in set(live)}
        assert sum(len(tf.page.entries) for tf in pages.values()) == len(live)


def test_hierarchical_helix_topics_flatten_to_one_page_name_links_included(mem, repo):
    from gitwiki.memory import replies

    log = Log()
    log.entry("iris/crash-analysis", "the triage order", 10)
    log.entry("iris/notes", "[links: iris/crash-analysis:0]\nsee the triage", 11)
    assert replies.import_helix(mem, log.bytes()).data["added"] == {"iris-crash-analysis": 1, "iris-notes": 1}
    assert "[links: iris-crash-analysis:1]" in (repo.path / "wiki/memory/iris-notes.md").read_text()


def test_a_link_number_that_is_no_decimal_stays_as_written():
    # '²' is a digit to str.isdigit but not a number int() reads: it once raised ValueError out of the import
    assert helix._link("engine:²") == "engine:²" and helix._link("engine:0") == "engine:1"


@pytest.fixture(scope="module")
def export_mem(tmp_path_factory):
    from tests.helpers import GitRepoFixture

    repo = GitRepoFixture(tmp_path_factory.mktemp("helixexport"))
    repo.commit("init", {".gitwiki.toml": LEXICAL, "wiki/index.md": "# Home\n"})
    return Memory.open(repo.path)


HELIX_TOPICS = itertools.count()
HELIX_ENTRY = st.tuples(
    # Cleaned hostile text. helix's format has no code fences: a `[tags: …]` line anywhere in a body is
    # metadata, in a fence too, so such texts are helix's metadata, not text, and are left out here.
    ENTRIES.map(lambda e: e.shown or e.text).filter(
        lambda t: not any(helix._META.match(line.strip()) for line in t.split("\n"))
    ),
    st.lists(st.from_regex(r"[a-z][a-z-]{0,10}", fullmatch=True), max_size=3),
    st.sampled_from([None, 0, 0.25, 0.5, 1]),
    st.lists(st.tuples(st.sampled_from(["engine", "build-gotchas", "x"]), st.integers(0, 40)), max_size=2),
)


@pytest.mark.slow
@settings(
    max_examples=30 * SCALE,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(items=st.lists(HELIX_ENTRY, min_size=1, max_size=4))
def test_a_helix_json_export_imports_every_entry_with_its_fields(export_mem, items):
    """helix's export `{topic: [{ts, body}]}`, each body a hostile text with helix's metadata lines: every entry
    arrives with its text, tags (singular), confidence, links (counted from 0 there, from 1 here) and date."""
    topic = f"hx{next(HELIX_TOPICS)}"
    rows = []
    for minutes, (text, tags, confidence, links) in enumerate(items, 1):
        meta = [f"[tags: {', '.join(tags)}]"] if tags else []
        meta += [f"[confidence: {confidence}]"] if confidence is not None else []
        meta += [f"[links: {' '.join(f'{n}:{i}' for n, i in links)}]"] if links else []
        rows.append({"ts": minutes * 60, "body": "\n".join([*meta, text])})
    added = replies.import_helix(export_mem, json.dumps({topic: rows}).encode()).data["added"]
    assert added == {topic: len(items)}
    back = export_mem.topic(topic).page.entries
    assert [(e.text, e.tags, e.confidence, e.links, e.created) for e in back] == [
        (
            text,
            normalize_tags(tags),
            1.0 if confidence is None else confidence,
            tuple(dict.fromkeys(f"{n}:{i + 1}" for n, i in links)),
            (helix.EPOCH + timedelta(hours=minutes)).strftime("%Y-%m-%dT%H:%M:%SZ"),
        )
        for minutes, (text, tags, confidence, links) in enumerate(items, 1)
    ]


# ---- issue 28: hostile or unusual helix documents ------------------------------------------------------


def test_a_helix_topic_named_format_imports_from_json(mem, repo):
    """gitwiki's export has `format` as a string; helix's topic `format` holds a list (refused before)."""
    from gitwiki.memory import replies

    export = {"format": [{"ts": 60, "body": "dates are ISO 8601"}], "net": [{"ts": 61, "body": "pool of 8"}]}
    assert replies.import_helix(mem, json.dumps(export).encode()).data["added"] == {"format": 1, "net": 1}
    assert "dates are ISO 8601" in (repo.path / "wiki/memory/format.md").read_text()


def test_a_helix_topic_too_long_for_a_file_name_is_shortened_with_a_note(mem, repo, cli, tmp_path):
    """helix allows 255 bytes; a page name 200: the import is no longer refused whole, the topic is
    shortened (the same way on every import) and the note says which, where, and how to rename it."""
    long_topic = "architecture-" + "x" * 230
    log = Log()
    log.entry("ok", "a short topic's entry", 60)
    at = log.entry(long_topic, "an entry of the long topic", 61)
    (tmp_path / "data.log").write_bytes(log.bytes())
    code, out, err = cli("memory", "import", "--helix", str(tmp_path / "data.log"), cwd=repo.path)
    short = helix.fitting_topic(long_topic)
    assert code == 0 and err == "" and "imported 2 entries" in out
    assert f"note: helix: the entry at byte {at} of topic 'architecture-xxx" in out
    assert f"243 bytes, more than a page's file name holds; imported as {short!r}" in out and "edit rename" in out
    assert (
        len(short.encode()) <= 200
        and short.startswith("architecture-xxx")
        and (repo.path / f"wiki/memory/{short}.md").exists()
    )
    code, out, _ = cli("memory", "import", "--helix", str(tmp_path / "data.log"), cwd=repo.path)
    assert code == 0 and out.startswith("imported 0 entries")  # the same page again: nothing new


def test_long_topics_alike_in_their_start_stay_apart():
    a, b = "t" * 250 + "a", "t" * 250 + "b"
    assert helix.fitting_topic(a) != helix.fitting_topic(b)
    assert helix.fitting_topic("short") == "short" and helix.fitting_topic("-" * 300) == "-" * 300


def test_deeply_nested_json_is_refused_with_one_line(mem, repo, cli, tmp_path):
    """A RecursionError traceback before, through `memory import` and `topics import --file`."""
    from gitwiki.memory import replies

    nested = b'{"net": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    with pytest.raises(UsageError, match="nests arrays or objects too deep"):
        replies.import_helix(mem, nested)
    (tmp_path / "deep.json").write_bytes(nested)
    for args in (("import", "--helix"), ("topics", "import", "--file")):
        code, out, err = cli("memory", *args, str(tmp_path / "deep.json"), cwd=repo.path)
        assert code == 2 and out == "" and "too deep" in err and len(err.strip().splitlines()) == 1


def test_a_future_modified_is_imported_as_the_import_time_and_a_future_created_is_refused(mem, repo):
    """`[modified: 2999-01-01 00:00]` made brief report 2999 as the topic's last activity for ever."""
    from gitwiki.memory import replies

    export = {"net": [{"ts": 60, "body": "[modified: 2999-01-01 00:00]\npool of 8"}]}
    done = replies.import_helix(mem, json.dumps(export).encode())
    assert "note: entry 1 of topic 'net' in the import: modified 2999-01-01T00:00:00Z is after today" in done.text
    (entry,) = mem.topics(fresh=True)["net"].page.entries
    assert entry.modified < "2100" and entry.modified >= entry.created
    code_export = {
        "format": "gitwiki-memory",
        "version": 1,
        "topics": [{"name": "net", "entries": [{"created": "2999-01-01T00:00:00Z", "text": "from the future"}]}],
    }
    with pytest.raises(UsageError, match="created 2999-01-01T00:00:00Z is after today"):
        replies.import_(mem, code_export)
    assert "from the future" not in (repo.path / "wiki/memory/net.md").read_text()


JSON_VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=20)),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=10), inner, max_size=4)),
    max_leaves=20,
)
HELIXISH = st.one_of(
    JSON_VALUES,
    st.dictionaries(
        st.text(max_size=300),
        st.lists(
            st.fixed_dictionaries(
                {"ts": st.one_of(st.integers(-(2**40), 2**40), JSON_VALUES), "body": st.one_of(st.text(), JSON_VALUES)}
            ),
            max_size=3,
        ),
        max_size=3,
    ),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(HELIXISH)
def test_any_json_document_parses_as_a_helix_export_or_is_refused_cleanly(data):
    """The JSON parser of helix's export: a document in its shape or a UsageError, never another exception;
    every topic it yields fits a page name or is refused at import with its own message."""
    try:
        document = helix.parse_export(data)
    except UsageError as e:
        assert "\n" not in str(e)
        return
    for topic in document["topics"]:
        assert isinstance(topic["name"], str) and all(isinstance(e["text"], str) for e in topic["entries"])
    assert all(isinstance(n, str) for n in document.get("notes", []))


def test_a_long_import_shows_progress_on_stderr(mem, repo, cli, tmp_path, monkeypatch):
    from gitwiki.commands import options

    monkeypatch.setattr(options, "LINE_EVERY", 0.0)  # a line a page, not one every 5 s
    log = Log()
    for n in range(3):
        log.entry(f"topic-{n}", f"entry {n}", 60 + n)
    (tmp_path / "data.log").write_bytes(log.bytes())
    code, out, err = cli("memory", "import", "--helix", str(tmp_path / "data.log"), cwd=repo.path)
    assert code == 0 and out.startswith("imported 3 entries")
    assert err.splitlines() == [f"gitwiki: writing imported topic pages {n}/3" for n in range(4)]
