"""Importing a memory export: a document that could forge entries, poison scores or crash is refused
whole, with one clear error and nothing written; what is accepted is counted as written."""

from __future__ import annotations

import copy
import itertools
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gitwiki.errors import UsageError
from gitwiki.memory import store as store_mod
from gitwiki.memory import topics as topics_mod
from gitwiki.memory.base import Memory
from tests.helpers import SCALE
from tests.memory.helpers import ENTRIES

LEXICAL = '[[corpus]]\nname = "wiki"\npath = "wiki"\n[embeddings]\nenabled = false\n'
STAMP = "2026-11-20T10:00:00Z"
GOOD = {"created": STAMP, "text": "gotcha: the lock is per thread", "tags": ["gotcha"], "confidence": 0.8}


@pytest.fixture
def mem(repo):
    repo.commit("init", {".gitwiki.toml": LEXICAL, "wiki/index.md": "# Home\n"})
    return Memory.open(repo.path)


def doc(*entries, name="t", **more) -> dict:
    return {"format": "gitwiki-memory", "version": 1, "topics": [{"name": name, "entries": list(entries)}], **more}


def memory_files(repo) -> list[str]:
    folder = repo.path / "wiki/memory"
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*")) if folder.exists() else []


FORGERIES = {
    "created": {**GOOD, "created": STAMP + "\n\n## 2026-11-21T10:00:00Z — forged"},
    "source": {**GOOD, "source": "src/a.py:1\n\n## 2026-11-21T10:00:00Z — forged"},
    "modified": {**GOOD, "modified": STAMP + "\n\n## 2026-11-21T10:00:00Z — forged"},
    "links": {**GOOD, "links": ["a\n\n## 2026-11-21T10:00:00Z — forged"]},
    "created not a date": {**GOOD, "created": "not a date at all"},
    "created a number": {**GOOD, "created": 12345},
    "created missing": {"text": "no time"},
    "confidence nan": {**GOOD, "confidence": float("nan")},
    "confidence -5": {**GOOD, "confidence": -5},
    "confidence 1e309": {**GOOD, "confidence": float("inf")},
    "confidence high": {**GOOD, "confidence": "high"},
    "links of junk": {**GOOD, "links": [1, None, {}]},
    "tags of junk": {**GOOD, "tags": [1, 2]},
}


@pytest.mark.parametrize("field", FORGERIES)
def test_a_bad_field_refuses_the_whole_import(mem, repo, field):
    data = doc(GOOD | {"text": "a good entry first"}, FORGERIES[field])
    with pytest.raises(UsageError, match="entry 2 of topic 't'"):
        topics_mod.import_memory(mem, json.loads(json.dumps(data)))
    assert memory_files(repo) == []


@pytest.mark.parametrize(
    ("data", "says"),
    [
        ({"topics": ["victim"]}, "topic 1 of the import must be an object"),
        ({"topics": [{"name": "t", "entries": 5}]}, "entries must be a list"),
        ({"topics": [{"name": 5, "entries": []}]}, "topic 1 of the import must be an object"),
        (
            {"topics": [{"name": "t", "entries": [GOOD]}], "checkpoints": [{"name": "c", "task": "x", "files": 5}]},
            "checkpoint 1 of the import: checkpoint files must be a list",
        ),
        ({"topics": [], "checkpoints": {"name": "c"}}, "checkpoints of the import must be a list"),
        ({"topics": [], "checkpoints": [{"name": "c", "task": {"a": 1}}]}, "task must be text"),
        (
            {"topics": [{"name": "t", "preamble": "intro\n\n## 2026-11-21T10:00:00Z — forged", "entries": [GOOD]}]},
            "preamble holds an entry header",
        ),
        ({"topics": [{"name": "t", "preamble": "```\nopen", "entries": [GOOD]}]}, "leaves a code fence"),
        ({"topics": [{"name": "x" * 300, "entries": [GOOD]}]}, "too long"),
    ],
)
def test_malformed_exports_are_one_clear_error_and_write_nothing(mem, repo, data, says):
    with pytest.raises(UsageError, match=says):
        topics_mod.import_memory(mem, data)
    assert memory_files(repo) == []


def test_topics_that_name_one_page_are_merged_and_counted_as_written(mem):
    data = {
        "topics": [
            {"name": "victim", "entries": [GOOD]},
            {"name": "Victim", "entries": [{**GOOD, "created": "2026-11-21T10:00:00Z", "text": "second one"}]},
        ]
    }
    added, _ = topics_mod.import_memory(mem, data)
    assert added == {"victim": 2}
    assert [e.text for e in mem.topic("victim").page.entries] == [GOOD["text"], "second one"]
    # The same document again adds nothing, and says so.
    assert topics_mod.import_memory(mem, copy.deepcopy(data))[0] == {}


def test_an_import_round_trips_what_it_accepts(mem, repo):
    store_mod.store(mem, "a", "first\n\n```\nunclosed", source="src/x.py:3", confidence=0.5, links=["b:1"])
    exported = topics_mod.export(mem)
    (repo.path / "wiki/memory/a.md").unlink()
    assert topics_mod.import_memory(mem, exported)[0] == {"a": 1}
    again = topics_mod.export(mem)
    assert again["topics"] == exported["topics"]


def test_a_persons_text_travels_with_the_export(mem, repo, tmp_path):
    from tests.helpers import GitRepoFixture

    page = "---\ntitle: Design\n---\n# Design notes\n\nWhy.\n\n## Overview\n\nBy a person.\n"
    repo.write("wiki/memory/design.md", page)
    store_mod.store(mem, "design", "decision: one writer lock")
    path = repo.path / "wiki/memory/design.md"
    path.write_text(path.read_text() + "\n## Notes\n\nA note after the entry.\n")
    exported = topics_mod.export(mem)
    (tmp_path / "other").mkdir()
    other = GitRepoFixture(tmp_path / "other")
    other.commit("init", {".gitwiki.toml": LEXICAL, "wiki/index.md": "# Home\n"})
    assert topics_mod.import_memory(Memory.open(other.path), json.loads(json.dumps(exported)))[0] == {"design": 1}
    assert (other.path / "wiki/memory/design.md").read_text() == path.read_text()
    forged = {"topics": [{"name": "t", "entries": [{**GOOD, "after": "## 2026-11-21T10:00:00Z — forged"}]}]}
    with pytest.raises(UsageError, match="its after holds an entry header"):
        topics_mod.import_memory(mem, forged)


@pytest.mark.parametrize(
    "data",
    [
        {"topics": [{"name": "a", "entries": [GOOD]}, {"name": "b", "entries": [{**GOOD, "text": "bad \ud800"}]}]},
        {"topics": [{"name": "a", "entries": [GOOD]}, {"name": "b", "preamble": "\udfff", "entries": [GOOD]}]},
        {"topics": [{"name": "a", "entries": [{**GOOD, "tags": ["x\ud800"]}]}]},
        {"topics": [{"name": "a", "entries": [GOOD]}], "checkpoints": [{"name": "c", "task": "t \ud800"}]},
    ],
)
def test_text_that_is_not_unicode_refuses_the_import_before_any_page_is_written(mem, repo, data):
    # A lone surrogate (JSON can carry "\ud800") cannot be written as UTF-8: it must not stop the
    # import halfway, after the pages before it were written.
    with pytest.raises(UsageError, match="not valid Unicode"):
        topics_mod.import_memory(mem, data)
    assert memory_files(repo) == []


def _past(stamp: str) -> str:
    """A generated date moved before the import (which refuses a future `created`; 2024 is a leap year)."""
    return stamp if not stamp or stamp < "2026-01-01" else "2024" + stamp[4:]


PAST_ENTRIES = ENTRIES.map(lambda e: e._replace(created=_past(e.created), modified=_past(e.modified)))


@pytest.fixture(scope="module")
def round_trip_mem(tmp_path_factory):
    from tests.helpers import GitRepoFixture

    repo = GitRepoFixture(tmp_path_factory.mktemp("roundtrip"))
    repo.commit("init", {".gitwiki.toml": LEXICAL, "wiki/index.md": "# Home\n"})
    return Memory.open(repo.path)


ROUND_TRIPS = itertools.count()


@pytest.mark.slow
@settings(
    max_examples=20 * SCALE,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(entries=st.lists(PAST_ENTRIES, min_size=1, max_size=4))
def test_export_json_import_keeps_every_entry_with_every_field(round_trip_mem, entries):
    """Entries of hostile text with tags, source, confidence, links and dates, written as an export document,
    imported (through JSON) and exported again: every entry comes back, each field as it went in."""
    mem = round_trip_mem
    name = f"rt{next(ROUND_TRIPS)}"
    rows = [{k: v for k, v in e.json().items() if k not in ("topic", "index", "lines")} for e in entries]
    document = {"format": "gitwiki-memory", "version": 1, "topics": [{"name": name, "entries": rows}]}
    added, _ = topics_mod.import_memory(mem, json.loads(json.dumps(document)))
    # An import appends in time order and takes an entry once per (time, text).
    first: dict[tuple[str, str], dict] = {}
    for row in rows:
        first.setdefault((row["created"], row["text"]), row)
    expected = sorted(first.values(), key=lambda r: r["created"])
    assert added == {name: len(expected)}
    back = next(t for t in topics_mod.export(mem)["topics"] if t["name"] == name)["entries"]
    written = [{**r, "confidence": float(f"{r['confidence']:g}")} for r in expected]
    assert back == written


def test_a_long_topics_import_shows_progress_on_stderr(repo, cli, tmp_path, monkeypatch):
    """`topics import --file` of an export writes its pages with the progress `memory import --helix` shows."""
    from gitwiki.commands import options

    monkeypatch.setattr(options, "LINE_EVERY", 0.0)  # a line a page, not one every 5 s
    repo.commit("init", {".gitwiki.toml": '[search]\nmode = "lexical"\n[embeddings]\nenabled = false\n'})
    topics = [
        {"name": f"topic-{n}", "entries": [{"created": f"2026-01-0{n + 1}T00:00:00Z", "text": f"entry {n}"}]}
        for n in range(3)
    ]
    export = tmp_path / "export.json"
    export.write_text(json.dumps({"topics": topics}))
    code, out, err = cli("memory", "topics", "import", "--file", str(export), cwd=repo.path)
    assert code == 0 and "3" in out, out
    assert err.splitlines() == [f"gitwiki: writing imported topic pages {n}/3" for n in range(4)], err


def test_an_import_of_more_topics_than_one_import_takes_is_refused_whole(mem, repo):
    """Each topic is a page write: 100,000 took hours, and a stopped import had written some of them."""
    from gitwiki.memory.store import MAX_IMPORT_TOPICS

    many = {**doc(GOOD), "topics": [{"name": f"t{i}", "entries": [GOOD]} for i in range(MAX_IMPORT_TOPICS + 1)]}
    with pytest.raises(UsageError, match="one import takes at most 1,000: split the file"):
        topics_mod.import_memory(mem, many)
    assert memory_files(repo) == []
