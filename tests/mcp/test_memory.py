"""The memory tools through `gitwiki serve` and the SDK's stdio client: every tool and topics action."""

from __future__ import annotations

import json
import subprocess

import pytest
from mcp import MCPError

from gitwiki.mcp.memory import TOOLS
from gitwiki.memory.actions import TOPIC_ACTIONS
from tests.mcp.client import call, connect, refused, run, text

LEXICAL = "[embeddings]\nenabled = false\n"
LOCK = "gotcha: the writer lock is re-entrant per thread, not across processes or other threads"


def test_every_memory_tool_and_topics_action(repo):
    repo.commit("init", {".gitwiki.toml": LEXICAL, "wiki/index.md": "# Home\n", "src/app.py": "one\ntwo\n"})
    done_actions: set[str] = set()

    async def topics(s, action, **kw):
        done_actions.add(action)
        return (await call(s, "memory_topics", action=action, **kw)).structured_content

    async def main():
        async with connect(repo.path) as s:
            listed = {t.name: t for t in (await s.list_tools()).tools}
            assert set(TOOLS) <= set(listed)
            out = {}
            out["store_text"] = await text(s, "memory_store", topic="gotchas", text=LOCK, source="src/app.py:2")
            out["store"] = (await call(s, "memory_read", topic="gotchas", index=1)).structured_content["entries"][0]
            ref = out["store_text"].split()[1]  # `stored gotchas:1 …`: the reference memory_read takes
            out["by_ref"] = (await call(s, "memory_read", topic=ref)).structured_content["entries"]
            out["dup"] = (await call(s, "memory_store", topic="gotchas", text=LOCK, terse=True)).structured_content
            out["batch"] = (
                await call(
                    s,
                    "memory_batch",
                    entries=[
                        {"topic": "decisions", "text": "decision: memory lives in the wiki", "links": ["gotchas:1"]},
                        {"topic": "gotchas", "text": "perf: stores embed the new entry in the write"},
                    ],
                    verbose=True,
                )
            ).structured_content
            out["search"] = (await call(s, "memory_search", query="lock thread")).structured_content
            out["search_count"] = (await call(s, "memory_search", query="tag:perf", detail="count")).structured_content
            out["search_topics"] = (
                await call(s, "memory_search", query="memory wiki lock", mode="or", detail="topics")
            ).structured_content
            for detail in ("full", "brief", "grouped"):
                assert await text(s, "memory_search", query="lock", detail=detail)
            out["brief"] = (await call(s, "memory_brief")).structured_content
            out["brief_topic"] = (
                await call(s, "memory_brief", query="goTchas", detail="scan", focus=["gotchas"])
            ).structured_content
            out["read"] = await text(s, "memory_read", topic="gotchas")
            out["read_one"] = (await call(s, "memory_read", topic="gotchas", index=2)).structured_content
            out["edit"] = (
                await call(s, "memory_edit", action="tag", topic="gotchas", index=1, add=["locking"])
            ).structured_content
            out["revise"] = (
                await call(
                    s,
                    "memory_edit",
                    action="revise",
                    topic="decisions",
                    index=1,
                    text="decision: memory is markdown in the wiki",
                )
            ).structured_content
            out["list"] = await topics(s, "list")
            out["recent"] = await topics(s, "recent", limit=1)
            out["entries"] = await topics(s, "entries", topic="gotchas")
            out["stats"] = await topics(s, "stats", detail="tags")
            out["xref"] = await topics(s, "xref")
            out["graph"] = await topics(s, "graph", focus="decision*")
            out["session"] = await topics(s, "session")
            out["checkpoint"] = await topics(s, "checkpoint", task="ship memory", done=["store"], next=["bench"])
            out["resume"] = await topics(s, "resume")
            out["export"] = await topics(s, "export")
            (repo.path / "src/app.py").write_text("one\nTWO\n")
            out["stale"] = await topics(s, "stale")
            out["refresh"] = await topics(s, "refresh", topic="gotchas", index=1)
            out["compact"] = await topics(s, "compact")
            out["prune"] = await topics(s, "clean", min_confidence=0.9)
            out["idle"] = await topics(s, "prune", days=0)
            out["reindex"] = await topics(s, "reindex")
            out["clear"] = await topics(s, "clear_checkpoint")
            out["merge"] = (
                await call(s, "memory_edit", action="merge", topic="decisions", into="gotchas")
            ).structured_content
            out["delete"] = (
                await call(s, "memory_edit", action="delete", topic="gotchas", all=True)
            ).structured_content
            out["import"] = await topics(s, "import", data=out["export"])
            out["ground"] = (await call(s, "ground", query="lock per thread", mode="lexical")).structured_content
            out["no_topic"] = await refused(s, "memory_read", topic="nope")
            out["bad_action_args"] = await refused(s, "memory_topics", action="entries")
            with pytest.raises(MCPError) as info:  # `refused` takes `name` itself
                await s.call_tool("memory_topics", {"action": "resume", "name": "other"})
            out["no_checkpoint"] = info.value
            return out

    out = run(main)
    assert out["store"]["tags"] == ["gotcha"] and out["store"]["source"].startswith("src/app.py:2@")
    assert out["store_text"].startswith("stored gotchas:1 [gotcha] (lines 3-")
    assert out["by_ref"] == [out["store"]]
    assert not out["dup"]["stored"] and (out["dup"]["duplicate_of"], out["dup"]["overlap"]) == ("gotchas:1", 1.0)
    assert [r["stored"] for r in out["batch"]["results"]] == [True, True] and out["batch"]["pages"] == [
        "wiki/memory/decisions.md",
        "wiki/memory/gotchas.md",
    ]
    assert [h["topic"] + ":" + str(h["index"]) for h in out["search"]["hits"]] == ["gotchas:1"] and out["search"][
        "matched"
    ] == "and"
    assert out["search_count"]["total"] == 1 and "hits" not in out["search_count"]
    assert out["search_topics"]["topics"] == {"gotchas": 1, "decisions": 1}
    assert out["brief"]["kind"] == "meta" and {t["topic"] for t in out["brief"]["topics"]} == {"gotchas", "decisions"}
    assert out["brief_topic"]["kind"] == "topic" and [e["category"] for e in out["brief_topic"]["entries"]] == [
        "GOTCHAS"
    ]
    assert out["read"].startswith("# gotchas\n\n## ") and out["read_one"]["entries"][0]["tags"] == ["perf"]
    assert out["edit"]["entries"][0]["tags"] == ["gotcha", "locking"]
    assert out["revise"]["entries"][0]["modified"] and out["revise"]["entries"][0]["text"].startswith(
        "decision: memory is"
    )
    assert [t["topic"] for t in out["list"]["topics"]] == ["decisions", "gotchas"]
    assert len(out["recent"]["entries"]) == 1 and len(out["entries"]["entries"]) == 2
    assert dict(map(tuple, out["stats"]["tags"]))["gotcha"] == 1
    assert {"source": "decisions:1", "target": "gotchas:1", "kind": "link", "valid": True} in out["xref"]["xrefs"]
    assert out["graph"]["edges"] == [{"from": "decisions", "to": "gotchas", "weight": 1}]
    assert [n["topic"] for n in out["graph"]["nodes"]] == ["decisions", "gotchas"]
    assert len(out["session"]["entries"]) == 3
    assert out["checkpoint"]["path"] == "wiki/memory/checkpoints/default.md"
    assert out["resume"]["task"] == "ship memory" and out["resume"]["markdown"].startswith("# Resuming: ship memory")
    assert [t["name"] for t in out["export"]["topics"]] == ["decisions", "gotchas"] and out["export"]["checkpoints"][0][
        "next"
    ] == ["bench"]
    assert [x["entry"] for x in out["stale"]["stale"]] == ["gotchas:1"]
    assert "-two\n+TWO" in out["refresh"]["refresh"][0]["diff"]
    assert out["compact"]["changes"] == [] and not out["compact"]["applied"]
    assert {c["entry"] for c in out["prune"]["changes"]} == {"gotchas:1"} and not out["prune"]["applied"]
    assert {"gotchas", "decisions"} <= {i["topic"] for i in out["idle"]["idle"]}  # idle > 0 days: all
    assert out["reindex"]["pages"] == 2
    assert out["clear"]["name"] == "default"
    assert out["merge"]["target"] == "gotchas" and out["delete"]["removed"] == 3
    assert out["import"]["added"] == {"decisions": 1, "gotchas": 2}
    assert out["ground"]["docs"][0]["path"] == "wiki/memory/gotchas.md"
    assert "no memory topic 'nope'" in str(out["no_topic"])
    assert "needs topic" in str(out["bad_action_args"]) and "no checkpoint 'other'" in str(out["no_checkpoint"])
    assert done_actions | {"import"} >= set(TOPIC_ACTIONS)
    json.dumps(out["export"])  # the export is plain JSON


def test_hostile_memory_input_is_refused_as_invalid_params_or_stored_whole(repo):
    repo.commit("init", {".gitwiki.toml": LEXICAL, "wiki/index.md": "# Home\n"})

    async def main():
        async with connect(repo.path) as s:
            out = {}
            await call(s, "memory_store", topic="t", text="how to run the tests\n\n```\npytest -q")
            out["second"] = await text(s, "memory_store", topic="t", text="second", terse=True)
            out["third"] = await text(s, "memory_store", topic="t", text="third", terse=True)
            out["read"] = (await call(s, "memory_read", topic="t")).structured_content
            out["long"] = await refused(s, "memory_store", topic="x" * 300, text="t")
            out["days"] = (await call(s, "memory_search", days=10**12)).structured_content
            out["hours"] = (await call(s, "memory_search", hours=1e308)).structured_content
            out["import"] = await refused(
                s, "memory_topics", action="import", data={"topics": [{"name": "t", "entries": 5}]}
            )
            out["confidence"] = await refused(
                s,
                "memory_topics",
                action="import",
                data={"topics": [{"name": "t", "entries": [{"created": "x", "text": "y", "confidence": "high"}]}]},
            )
            out["unicode"] = await text(s, "memory_store", topic="日本語", text="メモ", terse=True)
            return out

    out = run(main)
    assert (out["second"], out["third"]) == ("stored t:2", "stored t:3")
    assert [e["title"] for e in out["read"]["entries"]] == ["how to run the tests", "second", "third"]
    for key in ("long", "import", "confidence"):
        assert out[key].error.code == -32602, (key, out[key])
    assert "too long" in str(out["long"]) and "entries must be a list" in str(out["import"])
    assert out["days"]["total"] == 3 and out["hours"]["total"] == 3
    assert out["unicode"] == "stored 日本語:1"


def test_the_cli_refuses_a_malformed_import_on_one_line(repo, cli, tmp_path):
    repo.commit("init", {".gitwiki.toml": LEXICAL, "wiki/index.md": "# Home\n"})
    bad = tmp_path / "export.json"
    bad.write_text(json.dumps({"topics": [{"name": "t", "entries": [{"created": 12345, "text": "x"}]}]}))
    code, out, err = cli("memory", "topics", "import", "--file", str(bad), cwd=repo.path)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and "created must be a UTC time" in err
    assert not (repo.path / "wiki/memory").exists()


def test_an_argument_no_tool_takes_is_refused_not_dropped(repo):
    """helix's `compact` with `log` or `mode`, and any unknown argument, ran as if it were not given (the SDK's
    argument model drops unknown keys): now invalid params naming it, and nothing is written."""
    repo.commit("init", {".gitwiki.toml": LEXICAL, "wiki/index.md": "# Home\n"})

    async def main():
        async with connect(repo.path) as s:
            await text(s, "memory_store", topic="t", text="the build cache lives in .cache/build")
            await text(s, "memory_store", topic="t", text="the build cache lives in .cache/build now", force=True)
            out = {"compact": await refused(s, "memory_topics", action="compact", apply=True, log=True, mode="x")}
            out["store"] = await refused(s, "memory_store", topic="t", text="new", tgas="perf")
            out["ground"] = await refused(s, "ground", query="cache", limt=3)
            out["read"] = (await call(s, "memory_read", topic="t")).structured_content
            return out

    out = run(main)
    for key in ("compact", "store", "ground"):
        assert out[key].error.code == -32602, (key, out[key])
    assert str(out["compact"]).startswith("memory_topics does not take log, mode; it takes: action, apply,")
    assert "memory_store does not take tgas" in str(out["store"]) and "ground does not take limt" in str(out["ground"])
    assert len(out["read"]["entries"]) == 2  # the refused compact folded nothing; the refused store added nothing
    done = subprocess.run(["gitwiki", "memory", "topics", "compact", "--log"], cwd=repo.path, capture_output=True)
    assert done.returncode == 2 and b"unrecognized arguments: --log" in done.stderr  # the CLI: a usage error
