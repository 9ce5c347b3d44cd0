"""The memory library on real git repos: writes, dedup, search ranking and filters, briefs, topic actions."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta

import pytest

from gitwiki.errors import NotFoundError, UsageError
from gitwiki.memory import brief as brief_mod
from gitwiki.memory import checkpoint as cp
from gitwiki.memory import search as search_mod
from gitwiki.memory import store as store_mod
from gitwiki.memory import topics as topics_mod
from gitwiki.memory.actions import batch_items
from gitwiki.memory.base import Memory
from gitwiki.memory.entry import parse_page
from tests.helpers import MODEL_DIR, MODEL_NAME, needs_model

LEXICAL = '[[corpus]]\nname = "wiki"\npath = "wiki"\n[embeddings]\nenabled = false\n'
NOW = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)


@pytest.fixture
def repo_mem(repo):
    repo.commit("init", {".gitwiki.toml": LEXICAL, "wiki/index.md": "# Home\n\nThe wiki.\n", "src/app.py": "a\nb\nc\n"})
    return repo, Memory.open(repo.path)


def page(repo, topic: str) -> str:
    return (repo.path / f"wiki/memory/{topic}.md").read_text()


def entry_md(stamp: str, text: str, meta: str = "") -> str:
    return f"## {stamp} — {text.splitlines()[0]}\n\n{text}\n" + (f"\n{meta}\n" if meta else "") + "\n"


def write_topic(repo, topic: str, *entries: str) -> None:
    repo.write(f"wiki/memory/{topic}.md", f"# {topic}\n\n" + "".join(entries))


# ---- store, dedup, tags, links ---------------------------------------------------------------------


def test_store_writes_a_lint_clean_page_and_auto_tags(repo_mem):
    repo, mem = repo_mem
    done = store_mod.store(
        mem, "Go Tchas", "gotcha: the lock is per thread", tags=["Locking", "#locking"], confidence=0.8
    )
    (result,) = done.results
    assert result.stored and result.topic == "go-tchas" and result.entry.ref == "go-tchas:1"
    assert result.entry.tags == ("gotcha", "locking") and result.entry.confidence == 0.8
    text = page(repo, "go-tchas")
    assert text.startswith("# go-tchas\n\n## 20") and "[tags: gotcha, locking]\n[confidence: 0.8]\n" in text
    assert done.writes[0].findings == [] and done.writes[0].commit is None
    assert repo.git("status", "--porcelain").strip() == "?? wiki/memory/"
    lint = subprocess.run(
        [sys.executable, "-m", "gitwiki", "lint", "wiki/memory/go-tchas.md"],
        cwd=repo.path,
        capture_output=True,
        text=True,
    )
    assert lint.returncode == 0, lint.stdout
    # An entry is a normal chunk: `gitwiki ground` finds it.
    found = mem.wiki.search("lock per thread", mode="lexical")
    assert found.docs[0].path == "wiki/memory/go-tchas.md"
    assert found.docs[0].chunks[0].breadcrumb[1].endswith("gotcha: the lock is per thread")


def test_duplicates_above_70_percent_on_six_tokens_are_stored_with_a_warning(repo_mem):
    _, mem = repo_mem
    base = "the writer lock guards every index update across worktrees and hooks"
    store_mod.store(mem, "t", base)
    # "too" adds no term: stored, with a warning naming the entry it is like.
    dup = store_mod.store(mem, "t", base + " too").results[0]
    assert dup.stored and dup.entry.ref == "t:2" and dup.similar_to.ref == "t:1" and dup.overlap > 0.7
    assert dup.warnings[0].startswith(f"{dup.overlap:.0%} like t:1 (the writer lock guards")
    # 7 shared of 10 (70 %) is not above the threshold.
    near = store_mod.store(mem, "t", "the writer lock guards every index update across shards, queues and caches")
    assert near.results[0].stored and near.results[0].overlap == 0.0 and near.results[0].similar_to is None
    # Below 6 tokens nothing counts as a near-duplicate.
    assert store_mod.store(mem, "t", "lock the index").results[0].stored
    assert store_mod.store(mem, "t", "lock the index now").results[0].stored
    # force: no comparison, no warning.
    forced = store_mod.store(mem, "t", base + " as well", force=True).results[0]
    assert forced.stored and forced.entry.index == 6 and forced.similar_to is None and not forced.warnings
    # Other topics are not compared.
    other = store_mod.store(mem, "other", base).results[0]
    assert other.stored and other.similar_to is None


def test_links_are_validated_and_sources_pinned(repo_mem):
    repo, mem = repo_mem
    store_mod.store(mem, "decisions", "sqlite for the local index")
    result = store_mod.store(
        mem, "t", "see the decision", links=["decisions:1", "decisions:9", "nowhere"], source="src/app.py:2"
    ).results[0]
    assert result.warnings == (
        "link decisions:9: topic 'decisions' has 1 entries",
        "link nowhere: no topic 'nowhere' yet",
    )
    blob = repo.git("hash-object", "src/app.py").strip()
    assert result.entry.source == f"src/app.py:2@{blob[:12]}"
    missing = store_mod.store(mem, "t", "about a file that is not there", source="src/gone.py:3").results[0]
    assert missing.entry.source == "src/gone.py:3" and "not a file" in missing.warnings[0]
    with pytest.raises(UsageError, match="repo-relative"):
        store_mod.store(mem, "t", "x", source="../etc/passwd")
    with pytest.raises(UsageError, match="confidence"):
        store_mod.store(mem, "t", "x", confidence=1.5)


def test_batch_one_write_per_topic_and_intra_batch_dedup(repo_mem):
    repo, mem = repo_mem
    text = "decision: every memory write goes through the page write path of the wiki"
    done = store_mod.batch(
        mem,
        batch_items(
            [
                {"topic": "a", "text": text},
                {"topic": "a", "text": text + " always"},
                {"topic": "b", "text": "how-to: run the benchmark with python bench/bench_memory.py"},
                {"topic": "a", "text": "perf: fine"},
                {"topic": "a", "text": "perf:  fine "},
            ]
        ),
    )
    assert [r.stored for r in done.results] == [True, True, True, True, False]
    assert done.results[1].similar_to.ref == "a:1"  # a near-duplicate: stored, with a warning
    assert done.results[4].duplicate_of.ref == "a:3"  # the same text as an earlier item: not stored twice
    assert sorted(w.path for w in done.writes) == ["wiki/memory/a.md", "wiki/memory/b.md"]
    entries = parse_page(page(repo, "a"), "a").entries
    assert [e.tags for e in entries] == [("decision",), ("decision",), ("perf",)]
    with pytest.raises(UsageError, match="entry 1"):
        store_mod.batch(mem, batch_items([{"text": "no topic"}]))


def test_two_processes_storing_at_once_lose_nothing(repo_mem):
    repo, _ = repo_mem
    script = (
        "import sys\nfrom gitwiki.memory.base import Memory\nfrom gitwiki.memory.store import store\n"
        "m = Memory.open(sys.argv[1])\n"
        "for i in range(15):\n    store(m, 'shared', f'process {sys.argv[2]} entry {i} alpha beta gamma delta', force=True)\n"
    )
    procs = [subprocess.Popen([sys.executable, "-c", script, str(repo.path), str(n)]) for n in (1, 2)]
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    entries = parse_page(page(repo, "shared"), "shared").entries
    assert len(entries) == 30
    assert {e.text for e in entries} == {
        f"process {n} entry {i} alpha beta gamma delta" for n in (1, 2) for i in range(15)
    }
    assert len({e.heading for e in entries}) == 30


def test_commit_option_commits_only_the_memory_page(repo):
    repo.commit("init", {".gitwiki.toml": LEXICAL + "[memory]\ncommit = true\ndir = 'notes'\n", "wiki/a.md": "# A\n"})
    repo.write("wiki/a.md", "# A\n\nunrelated edit\n")
    mem = Memory.open(repo.path)
    done = store_mod.store(mem, "t", "committed entry")
    assert done.writes[0].commit == repo.git("rev-parse", "HEAD").strip()
    assert repo.git("log", "-1", "--format=%s").strip() == "gitwiki: add_markdown wiki/notes/t.md"
    # The page alone: not the unrelated edit, and no front index.md made for a wiki that has none
    assert repo.git("show", "--name-only", "--format=", "HEAD").split() == ["wiki/notes/t.md"]
    assert repo.git("status", "--porcelain").strip() == "M wiki/a.md"
    assert not (repo.path / "wiki" / "index.md").exists()


def test_a_store_keeps_the_index_blocks_a_wiki_has_current(repo):
    """A memory refreshes the blocks of an index.md above its pages, as every page write does."""
    from gitwiki.pages.index_blocks import END_MARKER, START_MARKER

    front = f"# Home\n\n{START_MARKER}\n{END_MARKER}\n"
    repo.commit("init", {".gitwiki.toml": LEXICAL + "[memory]\ndir = 'notes'\n", "wiki/index.md": front})
    done = store_mod.store(Memory.open(repo.path), "t", "an entry")
    assert done.writes[0].index_files == ["wiki/index.md"]
    assert "notes/t.md" in (repo.path / "wiki" / "index.md").read_text()


# ---- search ----------------------------------------------------------------------------------------


def test_search_and_first_then_or_fallback_and_identifier_splitting(repo_mem):
    _, mem = repo_mem
    store_mod.store(mem, "a", "rotateSigningKey runs every 90 days")
    store_mod.store(mem, "a", "the signing service keeps its keys in vault")
    store_mod.store(mem, "b", "rotation of passwords happens yearly")
    both = search_mod.search(mem, "rotate_signing_key")
    assert both.matched == "and" and [h.entry.ref for h in both.hits] == ["a:1"]
    either = search_mod.search(mem, "signing passwords")
    assert either.matched == "or" and {h.entry.ref for h in either.hits} == {"a:1", "a:2", "b:1"}
    forced_or = search_mod.search(mem, search_mod.MemoryQuery("signing vault", mode="or"))
    assert forced_or.matched == "or" and forced_or.hits[0].entry.ref == "a:2" and len(forced_or.hits) == 2
    assert search_mod.search(mem, "the of and").hits == []  # stop words only


def test_search_ranks_by_relevance_and_confidence_newer_first_among_equals_four_per_topic(repo):
    old = [entry_md(f"2026-0{m}-01T00:00:00Z", f"cache eviction note {m}") for m in range(1, 6)]
    write_topic(repo, "many", *old)
    write_topic(
        repo,
        "few",
        entry_md("2026-11-22T00:00:00Z", "cache eviction is LRU", "[confidence: 0.5]"),
        entry_md("2026-11-22T00:00:00Z", "cache eviction happens hourly"),
    )
    repo.commit("init", {".gitwiki.toml": LEXICAL})
    mem = Memory.open(repo.path)
    found = search_mod.search(mem, search_mod.MemoryQuery("cache eviction", now=NOW, limit=10))
    assert found.total == 7 and len(found.hits) == 6
    refs = [h.entry.ref for h in found.hits]
    # The five notes of `many` score alike (the same words, the same length): newer first, and many:1, the fifth
    # of its topic, is left out. few:1 has the relevance of few:2 at half the confidence: last.
    assert refs == ["few:2", "many:5", "many:4", "many:3", "many:2", "few:1"]
    h = found.hits[0]
    assert h.relevance == 1.0 and h.score == 1.0  # months old or a day: the age is no factor
    assert found.hits[1].score == pytest.approx(found.hits[4].score)


def test_an_old_note_that_answers_ranks_above_newer_neighbours(repo):
    """× recency buried an answer of a few months under any newer note sharing a word (docs/research/memory-dates.md);
    the age now only orders entries of equal score."""
    write_topic(
        repo,
        "ops",
        entry_md("2026-02-01T00:00:00Z", "rotate the signing key with vault write transit/keys/signing/rotate"),
        entry_md("2026-11-22T00:00:00Z", "the signing service logs to journald"),
        entry_md("2026-11-23T00:00:00Z", "key names in vault are kebab-case"),
    )
    repo.commit("init", {".gitwiki.toml": LEXICAL})
    mem = Memory.open(repo.path)
    found = search_mod.search(mem, search_mod.MemoryQuery("rotate the signing key", now=NOW, mode="or"))
    assert [h.entry.ref for h in found.hits][0] == "ops:1"
    assert [h.entry.ref for h in search_mod.search(mem, search_mod.MemoryQuery(None, now=NOW)).hits] == [
        "ops:3",
        "ops:2",
        "ops:1",
    ]  # no words: newest first


def test_search_filters_inline_and_dates(repo):
    write_topic(
        repo,
        "ops",
        entry_md("2026-11-23T09:00:00Z", "deploy freeze on fridays", "[tags: decision]"),
        entry_md("2026-11-22T09:00:00Z", "deploy with argo", "[tags: how-to]\n[source: ci/deploy.sh:3@abcdef012345]"),
        entry_md("2026-11-16T09:00:00Z", "deploy used to be manual", "[tags: decision]"),
    )
    write_topic(repo, "dev", entry_md("2026-11-23T10:00:00Z", "deploy previews per branch"))
    repo.commit("init", {".gitwiki.toml": LEXICAL})
    mem = Memory.open(repo.path)

    def refs(query=None, **kw):
        return [h.entry.ref for h in search_mod.search(mem, search_mod.MemoryQuery(query, now=NOW, **kw)).hits]

    def chosen(query=None, **kw):
        return sorted(refs(query, **kw))

    assert refs("deploy tag:decision") == ["ops:1", "ops:3"]
    assert refs("deploy topic:dev") == ["dev:1"]
    # ops:2 is newer than ops:3 but its source is gone (stale, × 0.7).
    assert refs("deploy", topic="o*") == ["ops:1", "ops:3", "ops:2"]
    assert refs("source:ci/deploy.sh") == ["ops:2"]
    assert chosen("deploy", after="today") == ["dev:1", "ops:1"]
    assert chosen("deploy", after="yesterday", before="yesterday") == ["ops:2"]  # on or before, as helix's
    assert chosen("deploy", after="this-week") == ["dev:1", "ops:1"]  # the week began on Monday 2026-11-23
    assert chosen("deploy", before="2026-11-16") == chosen("deploy", before="2026-11-17") == ["ops:3"]
    assert chosen("deploy", before="2026-11-16T08:59:59Z") == []
    assert chosen("deploy", hours=6) == ["dev:1", "ops:1"]
    assert chosen("deploy", days=2) == ["dev:1", "ops:1", "ops:2"]
    assert refs(tag="decision") == ["ops:1", "ops:3"]  # no words: newest first
    # ops:2's source file does not exist any more: stale, × 0.7.
    stale_hit = next(h for h in search_mod.search(mem, search_mod.MemoryQuery("argo", now=NOW)).hits)
    assert stale_hit.stale and stale_hit.score == pytest.approx(stale_hit.relevance * 0.7)
    with pytest.raises(UsageError, match="date"):
        search_mod.search(mem, search_mod.MemoryQuery("x", after="last tuesday"))


def test_stale_after_a_commit_lowers_confidence_and_refresh_shows_the_diff(repo_mem):
    repo, mem = repo_mem
    store_mod.store(mem, "code", "b is the second line of app", source="src/app.py:2")
    assert topics_mod.stale_entries(mem) == []
    assert not search_mod.search(mem, "second line").hits[0].stale
    repo.commit("change app", {"src/app.py": "a\nB changed\nc\n"})
    (found,) = topics_mod.stale_entries(mem)
    assert (found.entry.ref, found.path, found.current) == (
        "code:1",
        "src/app.py",
        repo.git("hash-object", "src/app.py").strip(),
    )
    hit = search_mod.search(mem, "second line").hits[0]
    assert hit.stale and hit.score == pytest.approx(hit.relevance * 0.7)
    (fresh,) = topics_mod.refresh_entries(mem)
    assert "-b\n+B changed\n" in fresh.diff and fresh.diff.startswith("--- src/app.py@")


# ---- brief -----------------------------------------------------------------------------------------


def test_brief_dedup_supersession_chains_categories_and_tiers(repo):
    write_topic(
        repo,
        "iris-auth",
        entry_md("2026-11-01T00:00:00Z", "gotcha: tokens expire after one hour in staging", "[tags: gotcha]"),
        entry_md("2026-11-10T00:00:00Z", "gotcha: tokens expire after two hours in staging", "[tags: gotcha]"),
        entry_md("2026-11-02T00:00:00Z", "decision: sessions live in redis", "[tags: decision]"),
        entry_md("2026-11-03T00:00:00Z", "redis cluster needs three nodes"),
        entry_md("2026-11-04T00:00:00Z", "redis failover takes a minute"),
        entry_md("2026-11-05T00:00:00Z", "redis memory is capped at 2 GB", "[tags: perf]"),
    )
    write_topic(
        repo, "iris-web", entry_md("2026-11-06T00:00:00Z", "decision: sessions live in redis", "[tags: decision]")
    )
    write_topic(repo, "other", entry_md("2026-11-06T00:00:00Z", "unrelated"))
    repo.commit("init", {".gitwiki.toml": LEXICAL})
    mem = Memory.open(repo.path)
    b = brief_mod.brief(mem, "iris-*", detail="scan", now=NOW)
    assert b.kind == "topic" and {t.topic for t in b.topics} == {"iris-auth", "iris-web"}
    by_ref = {i.entry.ref: i for i in b.items}
    assert "iris-web:1" not in by_ref and by_ref["iris-auth:3"].also_in == ("iris-web:1",)
    assert by_ref["iris-auth:1"].superseded_by == "iris-auth:2" and by_ref["iris-auth:2"].superseded_by == ""
    assert [(i.entry.ref, i.category) for i in b.items if not i.superseded_by] == [
        ("iris-auth:2", "GOTCHAS"),
        ("iris-auth:3", "DECISIONS"),
        ("iris-auth:6", "PERFORMANCE"),
        ("iris-auth:4", "UNTAGGED"),
        ("iris-auth:5", "UNTAGGED"),
    ]
    assert b.chains == [brief_mod.Chain("redis", ("iris-auth:3", "iris-auth:4", "iris-auth:5", "iris-auth:6"))]
    assert "## SUPERSEDED\n\n- iris-auth:1 gotcha: tokens expire after one hour in staging → iris-auth:2" in b.markdown
    assert "- iris-auth:3 2026-11-02 decision: sessions live in redis (also in iris-web:1)" in b.markdown
    summary = brief_mod.brief(mem, "iris-*", now=NOW).markdown.splitlines()
    assert len(summary) <= 15 and summary[2].startswith("GOTCHAS (1): iris-auth:2")
    full = brief_mod.brief(mem, "iris-auth", detail="full", focus=["gotchas"], now=NOW)
    assert {i.category for i in full.items} == {"GOTCHAS"} and "### iris-auth:2 · 2026-11-10T00:00:00Z" in full.markdown
    since = brief_mod.brief(mem, "iris-auth", detail="scan", since="2026-11-05", now=NOW)
    assert {i.entry.ref for i in since.items} == {"iris-auth:2", "iris-auth:6"}
    # helix's since is hours (helix/docs/TOOLS.md): 2026-11-05T00:00Z is 444 hours before NOW
    for hours, refs in (("444", {"iris-auth:2", "iris-auth:6"}), (443, {"iris-auth:2"}), ("1e308", None)):
        got = {i.entry.ref for i in brief_mod.brief(mem, "iris-auth", detail="scan", since=hours, now=NOW).items}
        assert got == (refs or {i.entry.ref for i in brief_mod.brief(mem, "iris-auth", detail="scan", now=NOW).items})
    with pytest.raises(UsageError, match="hours"):
        brief_mod.brief(mem, "iris-auth", since=-3, now=NOW)
    words = brief_mod.brief(mem, "failover", now=NOW)
    assert words.kind == "search" and [i.entry.ref for i in words.items] == ["iris-auth:5"]
    with pytest.raises(UsageError, match="focus"):
        brief_mod.brief(mem, "iris-*", focus=["nope"])


def test_brief_chains_stay_in_a_topic_and_show_the_word_as_written(repo):
    """Chains showed the stem (`redi`) and ran across topics: a word shared by two topics' entries chained them."""
    write_topic(
        repo,
        "cache",
        entry_md("2026-11-01T00:00:00Z", "Redis evicts keys under memory pressure"),
        entry_md("2026-11-02T00:00:00Z", "redis eviction policy is allkeys-lru"),
        entry_md("2026-11-03T00:00:00Z", "redis keys carry a one-day TTL"),
        entry_md("2026-11-04T00:00:00Z", "the CDN caches images for a week"),
    )
    write_topic(
        repo,
        "queue",
        entry_md("2026-11-05T00:00:00Z", "jobs wait in redis lists"),
        entry_md("2026-11-06T00:00:00Z", "redis streams replaced the lists"),
        entry_md("2026-11-07T00:00:00Z", "workers poll every second"),
    )
    repo.commit("init", {".gitwiki.toml": LEXICAL})
    b = brief_mod.brief(Memory.open(repo.path), "*", detail="scan", now=NOW)
    assert b.chains == [brief_mod.Chain("redis", ("cache:1", "cache:2", "cache:3"))]
    assert "## CHAINS\n\n- redis: cache:1 → cache:2 → cache:3\n" in b.markdown


def test_supersession_needs_two_days_between_entries_as_helix(repo):
    """An entry was SUPERSEDED by a like one written a minute later (helix: two calendar days or more apart)."""
    first = "the build cache lives in .cache/build"
    write_topic(
        repo,
        "build",
        entry_md("2026-11-01T10:00:00Z", first),
        entry_md("2026-11-01T10:01:00Z", first + " now"),  # a minute later: a step of the same work
        entry_md("2026-11-02T23:59:00Z", first + " today"),  # the next day
    )
    write_topic(
        repo,
        "ci",
        entry_md("2026-11-01T23:00:00Z", "the ci cache lives in .cache/ci"),
        entry_md("2026-11-03T00:30:00Z", "the ci cache lives in .cache/ci now"),  # two calendar days later
    )
    repo.commit("init", {".gitwiki.toml": LEXICAL})
    mem = Memory.open(repo.path)
    superseded = {i.entry.ref: i.superseded_by for i in brief_mod.brief(mem, "*", now=NOW).items if i.superseded_by}
    assert superseded == {"ci:1": "ci:2"}


def test_meta_brief_ranks_topics_by_activity(repo):
    write_topic(repo, "old", entry_md("2026-01-01T00:00:00Z", "x", "[tags: gap]"))
    write_topic(repo, "busy", *[entry_md(f"2026-11-2{d}T00:00:00Z", f"note {d}", "[tags: perf]") for d in range(3)])
    repo.commit("init", {".gitwiki.toml": LEXICAL})
    b = brief_mod.brief(Memory.open(repo.path), now=NOW)
    assert b.kind == "meta" and [t.topic for t in b.topics] == ["busy", "old"]
    assert (b.topics[0].entries, b.topics[0].recent, b.topics[0].velocity) == (3, 3, 0.43)
    assert b.themes == [("perf", 3), ("gap", 1)]
    assert b.markdown.startswith("# Memory: 4 entries in 2 topics, 3 in the last 7 days")
    assert "- busy: 3 entries, last 2026-11-22, 0.43/day  [perf]" in b.markdown


# ---- edit and topic actions ------------------------------------------------------------------------


def test_edit_actions(repo_mem):
    repo, mem = repo_mem
    for text in ("first note", "second note about redis", "third note about redis"):
        store_mod.store(mem, "t", text)
    store_mod.store(mem, "u", "links to t", links=["t:2", "t"])
    appended = store_mod.append(mem, "t", index=1, text="gotcha: more")
    assert appended.entries[0].text == "first note\n\ngotcha: more" and appended.entries[0].tags == ("gotcha",)
    assert appended.entries[0].modified
    revised = store_mod.revise(mem, "t", index=1, text="rewritten")
    assert revised.entries[0].text == "rewritten" and "[modified: " in page(repo, "t")
    tagged = store_mod.tag(mem, "t", index=1, add=["A", "b"], remove=["gotcha"])
    assert tagged.entries[0].tags == ("a", "b")
    assert store_mod.delete(mem, "t", match_str="THIRD").removed == 1
    with pytest.raises(NotFoundError):
        store_mod.delete(mem, "t", index=7)
    with pytest.raises(UsageError, match="one of index, match_str or all"):
        store_mod.delete(mem, "t", index=1, all=True)
    store_mod.store(mem, "v", "v one")
    merged = store_mod.merge(mem, "t", into="v")
    assert merged.target == "v" and [e.ref for e in merged.entries] == ["v:2", "v:3"]
    assert not (repo.path / "wiki/memory/t.md").exists()
    assert parse_page(page(repo, "u"), "u").entries[0].links == ("v:3", "v")
    renamed = store_mod.rename(mem, "v", to="Vee")
    assert renamed.target == "vee" and parse_page(page(repo, "u"), "u").entries[0].links == ("vee:3", "vee")
    assert store_mod.delete(mem, "vee", all=True).removed == 3
    assert set(mem.topics()) == {"u"}


def test_topic_listing_stats_xref_graph(repo_mem):
    _, mem = repo_mem
    store_mod.store(mem, "auth", "tokens expire hourly", tags=["gotcha"])
    store_mod.store(mem, "web", "the web app refreshes auth tokens", links=["auth:1", "ghost:2"])
    assert [a.topic for a in topics_mod.list_topics(mem)] == ["auth", "web"]
    assert [e.ref for e in topics_mod.recent(mem, 1)] == ["web:1"]
    assert [e.ref for e in topics_mod.session(mem)[1]] == ["auth:1", "web:1"]
    assert topics_mod.session(mem, since="2999-01-01") == ("2999-01-01T00:00:00Z", [])
    s = topics_mod.stats(mem, "tags")
    assert (s.topics, s.entries, s.tagged, s.tags) == (2, 2, 1, [("gotcha", 1)])
    assert topics_mod.xref(mem) == [
        topics_mod.XRef("web:1", "auth:1", "link", True),
        topics_mod.XRef("web:1", "ghost:2", "link", False),
        topics_mod.XRef("web:1", "auth", "mention", True),
    ]
    # helix's xref names the topics that refer to this one; its own references are the out direction
    assert [x.source for x in topics_mod.xref(mem, "auth")] == ["web:1", "web:1"]
    assert topics_mod.xref(mem, "web") == []
    assert [x.target for x in topics_mod.xref(mem, "web", "out")] == ["auth:1", "ghost:2", "auth"]
    assert len(topics_mod.xref(mem, "Auth", "both")) == 2
    with pytest.raises(UsageError, match="direction"):
        topics_mod.xref(mem, "auth", "sideways")
    # helix's prune: the topics idle for more than N days, the most recently active first
    assert topics_mod.prune(mem) == []
    later = topics_mod.prune(mem, 1, now=datetime.now(UTC) + timedelta(days=2, hours=1))
    assert [(i.topic, i.days) for i in later] == [("web", 2), ("auth", 2)]
    with pytest.raises(UsageError, match="days"):
        topics_mod.prune(mem, float("nan"))
    g = topics_mod.graph(mem)
    assert g.nodes == [("auth", 1), ("web", 1)] and g.edges == [("web", "auth", 2)]
    assert topics_mod.graph(mem, focus="auth").edges == [("web", "auth", 2)]
    assert topics_mod.stats(mem, "index").index["pages"] == 2


def test_prune_and_compact_dry_run_then_apply(repo):
    text = "the build cache lives in the shared runner volume for all jobs"
    write_topic(
        repo,
        "ci",
        entry_md("2026-11-01T00:00:00Z", text, "[tags: a]"),
        entry_md("2026-11-01T00:00:00Z", text + " today", "[tags: b]"),
        entry_md("2026-11-02T00:00:00Z", "a weak guess", "[confidence: 0.2]"),
    )
    repo.commit("init", {".gitwiki.toml": LEXICAL})
    mem = Memory.open(repo.path)
    dry = topics_mod.compact(mem)
    assert not dry.applied and [(c.entry.ref, c.reason) for c in dry.changes] == [("ci:1", "absorbs ci:2")]
    assert len(mem.topic("ci").page.entries) == 3
    assert topics_mod.compact(mem, apply=True).applied
    (kept, weak) = mem.topic("ci").page.entries
    assert kept.tags == ("a", "b") and kept.modified
    pruned = topics_mod.clean(mem)
    assert [(c.entry.ref, c.reason) for c in pruned.changes] == [("ci:2", "confidence 0.20 < 0.3")]
    topics_mod.clean(mem, apply=True)
    assert [e.text for e in mem.topic("ci").page.entries] == [text]


def test_checkpoint_round_trip_and_clear(repo_mem):
    repo, mem = repo_mem
    saved, writes = cp.checkpoint(mem, "ship memory", done=["format", "store"], next="search\nbrief", files=["a.py"])
    assert saved.path == "wiki/memory/checkpoints/default.md" and writes[0].path == "wiki/memory/checkpoints/default.md"
    assert "checkpoints" not in mem.topics()
    loaded = cp.load_checkpoint(mem)
    assert loaded == saved and loaded.next == ("search", "brief") and loaded.hypotheses == ()
    resumed = cp.resume(mem, now=datetime.fromisoformat(saved.saved) + timedelta(hours=2, minutes=5))
    assert resumed.age_seconds == 7500
    assert resumed.markdown.startswith(f"# Resuming: ship memory\n\nCheckpoint `default` saved {saved.saved} (2h ago).")
    assert "## Done\n\n- format\n- store\n" in resumed.markdown and "## Files\n\n- a.py" in resumed.markdown
    cp.clear_checkpoint(mem)
    assert cp.load_checkpoint(mem) is None
    with pytest.raises(NotFoundError, match="no checkpoint"):
        cp.resume(mem)


def test_export_import_round_trip_loses_nothing(repo_mem, tmp_path):
    repo, mem = repo_mem
    store_mod.store(mem, "a", "gotcha: first", source="src/app.py:1", confidence=0.6, links=["b"])
    store_mod.store(mem, "b", "second\n\n### with a sub heading\n\n- and a list")
    store_mod.revise(mem, "b", index=1, text="second, revised")
    cp.checkpoint(mem, "task", next=["x"])
    exported = topics_mod.export(mem)

    from tests.helpers import GitRepoFixture

    other_path = tmp_path / "other"
    other_path.mkdir()
    other = GitRepoFixture(other_path)
    other.commit("init", {".gitwiki.toml": LEXICAL, "wiki/index.md": "# Home\n"})
    target = Memory.open(other.path)
    assert topics_mod.import_memory(target, json.loads(json.dumps(exported))) == ({"a": 1, "b": 1}, ["default"])
    again = topics_mod.export(target)
    assert {k: v for k, v in again.items() if k != "exported"} == {k: v for k, v in exported.items() if k != "exported"}
    assert topics_mod.import_memory(target, exported)[0] == {}  # merging twice adds nothing
    for name in ("a", "b"):
        assert (other.path / f"wiki/memory/{name}.md").read_text() == page(repo, name)


@needs_model
def test_the_new_entry_is_embedded_in_the_write(repo):
    repo.commit("init", {"wiki/index.md": "# Home\n"})
    mem = Memory.open(repo.path)
    done = store_mod.store(mem, "t", "the deploy pipeline promotes images from staging to production")
    embedder = mem.wiki.embedder()
    blob = next(iter(mem.topics().values())).blob
    assert mem.wiki.store.missing_vectors(embedder.model_id, [blob]) == [] and done.results[0].stored
    found = search_mod.search(mem, "how do releases reach prod")
    assert found.ranking == "hybrid" and found.matched == "semantic" and found.hits[0].entry.ref == "t:1"


def three_notes(repo) -> Memory:
    """A hybrid memory of three notes over two topics, embedded."""
    repo.commit("init", {"wiki/index.md": "# Home\n"})
    mem = Memory.open(repo.path)
    for topic, text in [
        ("ops", "the deploy pipeline promotes images from staging to production"),
        ("ops", "rollback: revert the release tag and deploy again"),
        ("dev", "run the linters before pushing a branch"),
    ]:
        store_mod.store(mem, topic, text)
    return mem


LOADING_SEARCH = (
    "import json, sys\n"
    "from gitwiki.index import embed\nfrom gitwiki.memory.base import Memory\nfrom gitwiki.memory import search\n"
    "embed.load_in_background(sys.argv[1])  # as a CLI search starts\n"
    "m = Memory.open(sys.argv[1], cache=True)\n"
    "during = embed.loading(m.settings.embeddings)\n"
    "first = search.search(m, sys.argv[2])\n"
    "again = search.search(m, sys.argv[2])\n"
    "hits = [[(h.entry.ref, round(h.relevance, 6)) for h in f.hits] for f in (first, again)]\n"
    "print(json.dumps([during, first.ranking, again.ranking, *hits]))\n"
)


@needs_model
def test_a_search_goes_on_while_the_model_loads_and_ranks_as_once_it_has(repo, tmp_path):
    """A fresh process's search does not wait for the model loading on another thread (`QueryVector.loading`): it
    ranks as a search with the model loaded does. A model that does not load leaves it lexical, said on stderr."""
    three_notes(repo)
    run = [sys.executable, "-c", LOADING_SEARCH, str(repo.path), "shipping new versions to customers"]
    done = subprocess.run(run, capture_output=True, text=True, check=True)
    during, first, again, hits, hits_after = json.loads(done.stdout)
    assert (during, first, again) == (True, "hybrid", "hybrid") and hits == hits_after
    assert len(hits) == 3 and len({score for _, score in hits}) == 3  # no shared word: the dense ranking orders them
    broken = tmp_path / "broken-model"  # its load fails in onnxruntime, after the imports: while the search runs
    broken.mkdir()
    for name in ("config.json", "special_tokens_map.json", "tokenizer.json", "tokenizer_config.json"):
        (broken / name).write_bytes((MODEL_DIR / name).read_bytes())
    (broken / "model.onnx").write_bytes(b"not an onnx model" * 100)
    env = {**os.environ, "GITWIKI_MODEL_PATH": str(broken), "GITWIKI_MODEL": MODEL_NAME}
    done = subprocess.run([*run[:-1], "deploy pipeline"], capture_output=True, text=True, check=True, env=env)
    during, first, again, hits, hits_after = json.loads(done.stdout)
    assert (during, first, again) == (True, "lexical", "lexical") and hits == hits_after and hits[0][0] == "ops:1"
    assert "lexical search only" in done.stderr


@needs_model
def test_a_cli_search_ranks_in_the_models_process_and_reads_vectors_through_their_file(repo):
    """A fresh CLI search forks the model's process (`model_process.load_for_owner`), which embeds the query and
    ranks the vectors there: this process imports neither numpy nor onnxruntime. The vectors are read through their
    file (`index.store.vector_file`, written by the first read). Both rank as a search in one process does."""
    mem = three_notes(repo)
    query = "shipping new versions to customers"
    hits = search_mod.search(mem, query).hits
    here = [h.entry.ref for h in hits]
    script = (  # as the process's entry point (`gitwiki memory search`), which ends by `cli.end_now`
        "import json, os, sys\nimport gitwiki.cli as cli\n"
        "def end(code):\n"
        "    print(json.dumps(sorted(m for m in ('numpy', 'onnxruntime') if m in sys.modules)), flush=True)\n"
        "    os._exit(code)\n"
        "cli.end_now = end\n"
        "sys.argv = ['gitwiki', 'memory', 'search', '--json', *sys.argv[1:]]\n"
        "cli.main()\n"
    )
    env = {**os.environ, "GITWIKI_NO_SERVER": "1"}
    (vectors,) = mem.wiki.index_dir.glob("vectors-*.bin")  # the search here wrote it
    for fresh in (False, True):
        if fresh:
            vectors.unlink()
        done = subprocess.run(
            [sys.executable, "-c", script, query], cwd=repo.path, capture_output=True, text=True, check=True, env=env
        )
        reply, imported = done.stdout.splitlines()
        data = json.loads(reply)
        assert data["ranking"] == "hybrid" and json.loads(imported) == []
        assert [f"{h['topic']}:{h['index']}" for h in data["hits"]] == here
        # The JSON gives 6 decimals: compared to that, not rounded again (0.8985499 and 0.898550 round apart at 4)
        assert [h["relevance"] for h in data["hits"]] == pytest.approx([h.relevance for h in hits], abs=1e-6)
        assert vectors.is_file()


def test_refusals_name_the_fix(repo_mem, tmp_path):
    repo, mem = repo_mem
    with pytest.raises(UsageError, match="index page"):
        store_mod.store(mem, "Index", "x")
    outside = tmp_path / "secret.txt"
    outside.write_text("s")
    (repo.path / "link.txt").symlink_to(outside)
    with pytest.raises(UsageError, match="symlink"):
        store_mod.store(mem, "t", "x", source="link.txt")
    repo.write(".gitwiki.toml", LEXICAL + '[memory]\ndir = ""\n')
    with pytest.raises(UsageError, match=r"\[memory\] dir"):
        Memory.open(repo.path)


def test_hook_reads_load_no_git_bindings_index_or_model(repo_mem):
    repo, mem = repo_mem
    store_mod.store(mem, "t", "gotcha: something worth keeping")
    cp.checkpoint(mem, "a task")
    steps = (
        "from gitwiki.memory import brief, checkpoint, topics\n"
        "m = Memory.open(sys.argv[1])\n"
        "assert checkpoint.resume(m).checkpoint.task == 'a task'\n"
        "assert [a.topic for a in topics.list_topics(m)] == ['t'] and brief.brief(m).kind == 'meta'\n"
        "assert brief.brief(m, 't').items[0].category == 'GOTCHAS'\n"
    )
    assert imported_after(repo, steps, ("pygit2", "numpy", "fastembed", "sqlite3", "gitwiki.wiki")) == []


def imported_after(repo, steps: str, modules: tuple[str, ...]) -> list[str]:
    """Which of `modules` a fresh interpreter imported running `steps` (sys and Memory imported, the repo in argv)."""
    script = f"import sys\nfrom gitwiki.memory.base import Memory\n{steps}print(sorted(set({modules!r}) & set(sys.modules)))\n"
    done = subprocess.run([sys.executable, "-c", script, str(repo.path)], capture_output=True, text=True, check=True)
    return list(ast.literal_eval(done.stdout.strip()))


def test_a_search_reads_the_index_without_git_bindings(repo_mem):
    """A memory search reads worktree files and the index, no git object: pygit2 (45-60 ms of a cold CLI search)
    stays unimported, and git is asked once to find the checkout."""
    repo, mem = repo_mem
    store_mod.store(mem, "t", "gotcha: the deploy needs the VPN up")
    steps = (
        "from gitwiki.memory import stores\n"
        "m = Memory.open(sys.argv[1], cache=True)\n"
        "assert [h.entry.topic for h in stores.search(m, 'deploy vpn').hits] == ['t']\n"
    )
    assert imported_after(repo, steps, ("pygit2", "gitwiki.wiki", "gitwiki.git.remote")) == ["gitwiki.wiki"]
    assert mem.wiki.repo.head() is not None  # the same repository, opened on first use, reads HEAD


def test_recent_keeps_the_last_days_or_hours_as_helix(repo):
    """helix's topics recent (helix/src/topics.rs): entries of the last N days, or hours, which win."""
    now = datetime.now(UTC)

    def ago(**kw) -> str:
        return (now - timedelta(**kw)).strftime("%Y-%m-%dT%H:%M:%SZ")

    write_topic(
        repo,
        "ops",
        entry_md(ago(days=40), "old"),
        entry_md(ago(days=3), "three days"),
        entry_md(ago(hours=2), "two hours"),
    )
    repo.commit("init", {".gitwiki.toml": LEXICAL})
    mem = Memory.open(repo.path)

    def texts(*args, **kw) -> list[str]:
        return [e.text for e in topics_mod.recent(mem, *args, **kw)]

    assert texts() == ["two hours", "three days", "old"]
    assert texts(days=7) == ["two hours", "three days"]
    assert texts(days=7, hours=5) == ["two hours"]
    assert texts(1, days=90) == ["two hours"]
