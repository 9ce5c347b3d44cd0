"""helix's tool calls, as helix's reference writes them (helix/docs/TOOLS.md, helix/DOCS.md), sent unchanged
through the MCP SDK client to gitwiki's memory tools (helix's `store` is `memory_store`, and so on)."""

from __future__ import annotations

from tests.mcp.client import call, connect, refused, run, text

LEXICAL = "[embeddings]\nenabled = false\n"


async def helix(s, tool: str, **arguments) -> dict:
    """One helix call: every argument a string, as helix's tools take them."""
    assert all(isinstance(v, str | list) for v in arguments.values()), arguments
    return (await call(s, "memory_" + tool, **arguments)).structured_content


def test_separated_strings_are_taken_where_helix_takes_them(repo):
    repo.commit("init", {".gitwiki.toml": LEXICAL, "wiki/index.md": "# Home\n"})

    async def main():
        async with connect(repo.path) as s:
            out = {}
            out["first"] = await helix(s, "store", topic="build", text="arm64 only for the FFI bridge", tags="gotcha")
            out["store"] = await helix(
                s,
                "store",
                topic="engine",
                text="CachedEntry holds a pre-tokenized tf_map",
                tags="gotchas, build,arm64",
                links="build:0 engine",
                confidence="0.9",
                force="true",
            )
            out["brief"] = await helix(s, "brief", query="build", focus="gotchas,invariants")
            out["checkpoint"] = await helix(
                s,
                "topics",
                action="checkpoint",
                task="Implement Metal attention kernel",
                done="wrote kernel; added test",
                next="benchmark; profile",
                hypotheses="tile size matters",
                blocked="no GPU on CI",
                files="src/attn.rs,src/gpu.rs",
            )
            out["resume"] = await helix(s, "topics", action="resume")
            return out

    out = run(main)
    entry = out["store"]["entry"]
    assert entry["tags"] == ["arm64", "build", "gotcha"] and entry["confidence"] == 0.9
    assert [e["topic"] for e in out["brief"]["entries"]] == ["build"]
    resume = out["resume"]
    assert resume["done"] == ["wrote kernel", "added test"] and resume["next"] == ["benchmark", "profile"]
    assert resume["hypotheses"] == ["tile size matters"] and resume["blocked"] == ["no GPU on CI"]
    assert resume["files"] == ["src/attn.rs", "src/gpu.rs"]
    assert entry["links"] == ["build:1", "engine"]  # helix counts from 0


def test_helix_parameter_names_are_taken_beside_ours(repo):
    repo.commit("init", {".gitwiki.toml": LEXICAL, "wiki/index.md": "# Home\n"})

    async def main():
        async with connect(repo.path) as s:
            await helix(s, "store", topic="old-name", text="engine cache is lazy", tags="draft,engine")
            tagged = await call(
                s, "memory_edit", action="tag", topic="old-name", index=1, tags="performance, hot-path", remove="draft"
            )
            renamed = await helix(s, "edit", action="rename", topic="old-name", new_name="new-name")
            both = await refused(s, "memory_edit", action="rename", topic="new-name", to="a", new_name="b")
            return tagged.structured_content, renamed, both

    tagged, renamed, both = run(main)
    assert tagged["entries"][0]["tags"] == ["engine", "hot-path", "performance"]
    assert renamed["target"] == "new-name" and [e["topic"] for e in renamed["entries"]] == ["new-name"]
    assert both.error.code == -32602 and "new_name" in both.error.message


ENGINE = [
    "first: the cache is lazy",
    "second: the cache index is rebuilt on the next query",
    "perf: search takes 2 ms over the cache",
    "fourth: the lock is per process",
]


def test_helix_entry_selection_addresses_the_entries_helix_would(repo):
    """helix's edit (helix/src/write.rs): a string index counts from 0, match_str takes the first entry
    containing it, tag the last entry with it, no target the last entry."""
    repo.commit("init", {".gitwiki.toml": LEXICAL, "wiki/index.md": "# Home\n"})

    async def texts(s) -> list[str]:
        return [e["text"] for e in (await helix(s, "read", topic="engine"))["entries"]]

    async def main():
        async with connect(repo.path) as s:
            for text in ENGINE:
                await helix(s, "store", topic="engine", text=text)
            out = {"read0": (await helix(s, "read", topic="engine", index="0"))["entries"][0]["text"]}
            await helix(s, "edit", action="append", topic="engine", text="index two", index="2")
            await helix(s, "edit", action="append", topic="engine", text="no target")
            await helix(s, "edit", action="append", topic="engine", text="by tag", tag="perf")
            await helix(s, "edit", action="revise", topic="engine", text="revised", match_str="CACHE")
            await helix(s, "edit", action="tag", topic="engine", tags="hot-path", index="1")
            out["after_edits"] = await texts(s)
            out["tags1"] = (await helix(s, "read", topic="engine", index="1"))["entries"][0]["tags"]
            await helix(s, "edit", action="delete", topic="engine", match_str="cache")
            await helix(s, "edit", action="delete", topic="engine")
            out["after_deletes"] = await texts(s)
            out["entries"] = await helix(s, "topics", action="entries", topic="engine", match_str="INDEX two")
            out["ours"] = (await call(s, "memory_read", topic="engine", index=1)).structured_content
            out["none"] = await refused(s, "memory_edit", action="revise", topic="engine", text="x", match_str="zzz")
            out["zero"] = await refused(s, "memory_read", topic="engine", index=0)
            out["out_of_range"] = await refused(s, "memory_read", topic="engine", index="5")
            return out

    out = run(main)
    assert out["read0"] == ENGINE[0]
    assert out["after_edits"] == [
        "revised",
        ENGINE[1],
        ENGINE[2] + "\n\nindex two\n\nby tag",
        ENGINE[3] + "\n\nno target",
    ]
    assert "hot-path" in out["tags1"]
    # the first entry containing "cache" is now the second (the first was revised); the last goes after it
    assert out["after_deletes"] == ["revised"] + [ENGINE[2] + "\n\nindex two\n\nby tag"]
    assert [e["index"] for e in out["entries"]["entries"]] == [2]
    assert out["ours"]["entries"][0]["text"] == "revised"
    assert out["none"].error.code == -32602 and "zzz" in out["none"].error.message
    assert out["zero"].error.code == -32602 and "'0'" in out["zero"].error.message
    assert "'0'..'1'" in out["out_of_range"].error.message


def test_helix_search_counts_every_match_and_marks_matching_lines(repo):
    repo.commit("init", {".gitwiki.toml": LEXICAL, "wiki/index.md": "# Home\n"})

    async def main():
        async with connect(repo.path) as s:
            await helix(
                s,
                "batch",
                entries=[{"topic": "engine", "text": f"cache rule {n}\nsecond line {n}"} for n in range(5)],
            )
            topics = await helix(s, "search", query="cache", detail="topics")
            full = await text(s, "memory_search", query="rule", detail="full", limit="1")
            listed = await helix(s, "search", query="cache", limit="200")
            return topics, full, listed

    topics, full, listed = run(main)
    assert topics["topics"] == {"engine": 5} and topics["total"] == 5  # counted before the 4-per-topic cap
    heading = next(line for line in full.splitlines() if "cache rule" in line)
    n = heading[-1]
    assert heading.startswith("> ## ") and f"  second line {n}" in full.splitlines()
    assert len(listed["hits"]) == 4  # the listing keeps the cap of 4 a topic


def test_a_helix_agent_session_runs_unchanged(repo):
    """A helix agent's calls in order, each as helix's reference writes it (helix/docs/TOOLS.md, helix/DOCS.md),
    and the entries each edit addresses are the ones helix would address."""
    repo.commit("init", {".gitwiki.toml": LEXICAL, "wiki/index.md": "# Home\n"})

    async def main():
        async with connect(repo.path) as s:
            out = {}
            await helix(s, "store", topic="build-gotchas", text="arm64 only for FFI bridge", tags="gotcha, build")
            await helix(
                s,
                "store",
                topic="engine",
                text="CachedEntry holds pre-tokenized tf_map for zero-alloc search",
                tags="architecture, performance",
                source="src/cache.rs:27",
                confidence="0.9",
                terse="true",
            )
            out["batch"] = await helix(
                s,
                "batch",
                entries=[
                    {"topic": "api-design", "text": "REST endpoints use /v2/ prefix"},
                    {"topic": "api-design", "text": "Auth tokens expire after 1 hour", "tags": "gotcha"},
                    {"topic": "network", "text": "Max 8 TCP connections per pool", "source": "src/pool.rs:15"},
                ],
                verbose="true",
            )
            out["search"] = await helix(s, "search", query="tokens tag:gotcha", days="7", limit="10")
            out["count"] = await helix(s, "search", query="FFI bridge", topic="build-gotchas", detail="count")
            out["brief"] = await helix(s, "brief", query="api-design", focus="gotchas,invariants", since="48")
            await helix(s, "edit", action="append", topic="api-design", text="also on /v3/", match_str="REST")
            await helix(s, "edit", action="revise", topic="api-design", text="tokens: 2 hours", match_str="auth tok")
            await helix(s, "edit", action="append", topic="api-design", text="see the gateway")
            await helix(s, "edit", action="tag", topic="api-design", tags="security", remove="gotcha", index="1")
            out["api"] = (await helix(s, "read", topic="api-design"))["entries"]
            await helix(s, "edit", action="delete", topic="network", match_str="tcp")
            out["stale"] = await helix(s, "topics", action="stale", refresh="true")
            out["recent"] = await helix(s, "topics", action="recent", hours="24")
            await helix(
                s,
                "topics",
                action="checkpoint",
                task="Implement Metal attention kernel",
                done="wrote kernel; added test",
                next="benchmark",
                files="src/attn.rs,src/gpu.rs",
            )
            out["resume"] = await helix(s, "topics", action="resume")
            out["export"] = await helix(s, "topics", action="export")
            out["import"] = await helix(s, "topics", action="import", json='[{"topic":"test","text":"imported"}]')
            out["test"] = (await helix(s, "read", topic="test", index="0"))["entries"][0]
            return out

    out = run(main)
    assert out["batch"]["stored"] == 3
    assert [h["text"] for h in out["search"]["hits"]] == ["Auth tokens expire after 1 hour"]
    assert out["count"]["total"] == 1
    assert "refresh" in out["stale"]  # stale with refresh answers as the refresh action
    assert [e["text"] for e in out["brief"]["entries"]] == ["Auth tokens expire after 1 hour"]
    api = out["api"]
    assert [e["text"] for e in api] == [
        "REST endpoints use /v2/ prefix\n\nalso on /v3/",
        "tokens: 2 hours\n\nsee the gateway",
    ]
    assert api[1]["tags"] == ["security"] and api[1]["modified"]
    assert [e["topic"] for e in out["recent"]["entries"]].count("network") == 0
    assert out["resume"]["done"] == ["wrote kernel", "added test"] and out["resume"]["files"] == [
        "src/attn.rs",
        "src/gpu.rs",
    ]
    assert {t["name"] for t in out["export"]["topics"]} == {"api-design", "build-gotchas", "engine"}
    assert out["import"]["added"] == {"test": 1} and out["test"]["text"] == "imported"


def test_a_batch_items_helix_strings_mean_what_they_mean_in_store(repo):
    """A batch item's `links: "build:0"` counts from 0 as store's does, and its confidence and force are
    helix's strings: the same item addresses the same entry through store and through batch."""
    repo.commit("init", {".gitwiki.toml": LEXICAL, "wiki/index.md": "# Home\n"})

    async def main():
        async with connect(repo.path) as s:
            await helix(s, "store", topic="build", text="arm64 only for the FFI bridge")
            await helix(s, "store", topic="build", text="the release build strips symbols")
            item = {"topic": "engine", "text": "the cache needs the bridge", "tags": "gotchas, build"}
            item |= {"links": "build:1 build", "confidence": "0.5", "force": "true"}
            done = await helix(s, "batch", entries=[item, item | {"text": "the cache needs the bridge, still"}, item])
            return done, (await helix(s, "read", topic="engine"))["entries"]

    done, entries = run(main)
    # force "true" is read as true; an exact repeat is not stored even so (the same note twice says nothing more)
    assert [r["stored"] for r in done["results"]] == [True, True, False]
    assert done["results"][2]["duplicate_of"] == "engine:1"
    assert [(e["links"], e["tags"], e["confidence"]) for e in entries] == [
        (["build:2", "build"], ["build", "gotcha"], 0.5)
    ] * 2
