"""helix's tool calls, as helix's reference writes them (helix/docs/TOOLS.md, helix/DOCS.md), sent unchanged
through the MCP SDK client to gitwiki's memory tools (helix's `store` is `memory_store`, and so on)."""

from __future__ import annotations

from tests.test_mcp_server import call, connect, refused, run

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
                links="build engine",
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
    assert entry["links"] == ["build", "engine"]


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
