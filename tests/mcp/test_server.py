"""The MCP server driven as a real subprocess (`python -m gitwiki serve`) through the SDK's stdio client."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from gitwiki.mcp.memory import TOOLS as MEMORY_TOOLS
from tests.helpers import DEPLOY, LEXICAL, needs_model
from tests.mcp.client import call, connect, refused, run, text

TOOLS = {
    "list_corpora",
    "list_files",
    "list_tree",
    "ground",
    "read_markdown",
    "outline_markdown",
    "read_many",
    "add_markdown",
    "delete_markdown",
    "index",
    "get_footnote",
    "page_history",
} | set(MEMORY_TOOLS)


@pytest.fixture
def wiki_repo(repo):
    repo.commit(
        "init",
        {".gitwiki.toml": LEXICAL, "wiki/guides/deploy.md": DEPLOY, "wiki/faq.md": "# FAQ\n\nAsk the platform team.\n"},
    )
    return repo


def test_tools_annotations_instructions_and_the_format_argument(wiki_repo):
    async def main():
        async with connect(wiki_repo.path) as s:
            tools = {t.name: t for t in (await s.list_tools()).tools}
            return s.instructions, tools

    instructions, tools = run(main)
    assert set(tools) == TOOLS | {"agent_hook"}
    # the hooks' tool is the app's (Claude Code's mcp_tool hooks), never announced to the model; the others are
    assert tools["agent_hook"].meta == {"ui": {"visibility": ["app"]}}
    assert all(t.meta is None for n, t in tools.items() if n != "agent_hook")
    assert "ground" in instructions and "read_markdown" in instructions
    read_only = {n for n, t in tools.items() if t.annotations.read_only_hint and n not in MEMORY_TOOLS}
    assert read_only == {
        "list_corpora",
        "list_files",
        "list_tree",
        "ground",
        "read_markdown",
        "outline_markdown",
        "read_many",
        "get_footnote",
        "page_history",
    }
    assert tools["delete_markdown"].annotations.destructive_hint is True
    assert tools["add_markdown"].annotations.destructive_hint is False
    assert tools["index"].annotations.idempotent_hint is True
    for tool in tools.values():
        for name, prop in tool.input_schema["properties"].items():
            assert prop.get("description"), f"{tool.name}.{name} has no description"
    assert tools["add_markdown"].input_schema["required"] == ["path", "content"]
    for tool in tools.values():  # an outputSchema would oblige the tool to return structuredContent every time
        assert tool.output_schema is None, tool.name
        assert tool.input_schema["properties"]["format"]["enum"] == ["text", "json"], tool.name
        assert tool.input_schema["properties"]["format"]["default"] == "text"


def test_ground_explain_gives_the_numbers_the_cli_gives(wiki_repo):
    async def main():
        async with connect(wiki_repo.path) as s:
            explained = await call(s, "ground", query="helm rollback", mode="lexical", explain=True)
            explained_text = await text(s, "ground", query="helm rollback", mode="lexical", explain=True)
            plain = await call(s, "ground", query="helm rollback", mode="lexical")
            return explained, explained_text, plain

    explained, explained_text, plain = run(main)
    gitwiki = [sys.executable, "-m", "gitwiki", "-C", str(wiki_repo.path), "ground", "helm rollback", "--no-server"]
    cli = subprocess.run([*gitwiki, "--mode", "lexical", "--json", "--explain"], capture_output=True, text=True)
    assert explained.structured_content == json.loads(cli.stdout)
    docs = explained.structured_content["docs"]
    assert docs[0]["explain"]["rankers"]["lexical"]["rank"] == 1 and docs[0]["explain"]["score"] == docs[0]["score"]
    assert "  why: lexical #1" in explained_text
    assert all("explain" not in d for d in plain.structured_content["docs"])


def test_the_model_reads_text_and_programs_ask_for_json(wiki_repo):
    """By default a tool answers with its text alone (what Claude Code shows the model: it would show the JSON
    instead when there is structuredContent); `format: json` gives the JSON contract, also as the text."""

    async def main():
        async with connect(wiki_repo.path) as s:
            plain = await s.call_tool("ground", {"query": "helm rollback", "mode": "lexical"})
            listed = await s.call_tool("memory_topics", {})
            as_json = await call(s, "ground", query="helm rollback", mode="lexical")
            return plain, listed, as_json

    plain, listed, as_json = run(main)
    gitwiki = [sys.executable, "-m", "gitwiki", "-C", str(wiki_repo.path), "ground", "helm rollback", "--no-server"]
    outline = subprocess.run([*gitwiki, "--mode", "lexical"], capture_output=True, text=True, check=True).stdout
    assert plain.structured_content is None and [c.type for c in plain.content] == ["text"]
    assert plain.content[0].text == outline  # the CLI's outline, not a byte more
    assert listed.structured_content is None  # the memory tools too: one mechanism for every tool
    assert json.loads(as_json.content[0].text) == as_json.structured_content
    document = subprocess.run([*gitwiki, "--mode", "lexical", "--json"], capture_output=True, text=True, check=True)
    assert as_json.structured_content == json.loads(document.stdout)


def test_every_read_tool_answers_with_text_and_structured_content(wiki_repo):
    head = wiki_repo.git("rev-parse", "HEAD").strip()

    async def main():
        async with connect(wiki_repo.path) as s:
            out = {}
            out["corpora"] = await call(s, "list_corpora")
            out["files"] = await call(s, "list_files")
            out["glob"] = await call(s, "list_files", glob="guides/*")
            out["tree"] = await call(s, "list_tree", depth=1)
            out["ground"] = await call(s, "ground", query="helm rollback", mode="lexical")
            out["read"] = await call(s, "read_markdown", path="guides/deploy.md", start_line=5, end_line=7)
            out["history"] = await call(s, "page_history", path="guides/deploy.md")
            out["index"] = await call(s, "index")
            out["ground_text"] = await text(s, "ground", query="helm rollback", mode="lexical")
            out["read_text"] = await text(s, "read_markdown", path="guides/deploy.md", start_line=5, end_line=7)
            out["read_repo_relative"] = await text(s, "read_markdown", path="wiki/faq.md")
            out["footnote"] = await text(s, "get_footnote", page="guides/deploy.md", footnote_number=1)
            return out

    out = run(main)
    corpus = out["corpora"].structured_content["corpora"][0]
    assert (corpus["name"], corpus["path"], corpus["head_commit"]) == ("wiki", "wiki", head)
    files = out["files"].structured_content
    assert (files["commit"], files["dirty"]) == (head, [])
    assert files["files"] == [
        {"path": "wiki/faq.md", "absolute_path": str(wiki_repo.path / "wiki/faq.md")},
        {"path": "wiki/guides/deploy.md", "absolute_path": str(wiki_repo.path / "wiki/guides/deploy.md")},
    ]
    assert [f["path"] for f in out["glob"].structured_content["files"]] == ["wiki/guides/deploy.md"]
    tree = out["tree"].structured_content["tree"]
    assert (tree["pages"], tree["subdirs"][0]["path"], tree["subdirs"][0]["pages"]) == (2, "wiki/guides", 1)
    ground = out["ground"]
    assert ground.structured_content["docs"][0]["path"] == "wiki/guides/deploy.md"
    assert ground.structured_content["commit"] == head
    assert "wiki/guides/deploy.md:5-" in out["ground_text"] and "Deploy > Rollback" in out["ground_text"]
    assert out["read_text"] == "## Rollback\n\nUse helm rollback to undo a release.\n"
    assert out["read"].structured_content["text"] == out["read_text"]
    assert out["read"].structured_content["dirty"] is False
    assert out["read_repo_relative"] == "# FAQ\n\nAsk the platform team.\n"
    assert out["footnote"] == "The runbook, section 3."
    assert out["history"].structured_content["commits"][0]["subject"] == "init"
    assert out["index"].structured_content["reports"][0]["up_to_date"] is True


def test_progressive_disclosure_outline_sections_read_many_and_folder_summaries(repo):
    install = "# Install\n\nPick one.\n\n## Linux\n\napt install x\n\n## Mac\n\nbrew install x\n"
    index = "---\ndescription: How we ship.\n---\n# Guides\n\nAll the guides.\n"
    repo.commit(
        "init",
        {
            ".gitwiki.toml": LEXICAL,
            "wiki/guides/deploy.md": DEPLOY,
            "wiki/guides/install.md": install,
            "wiki/guides/index.md": index,
            "wiki/faq.md": "# FAQ\n\nAsk the platform team.\n",
        },
    )
    head = repo.git("rev-parse", "HEAD").strip()
    cap = len(DEPLOY) + 10  # deploy.md fits, index.md after it does not

    async def main():
        async with connect(repo.path) as s:
            return {
                "outline": await call(s, "outline_markdown", path="guides/install.md"),
                "section": await call(s, "read_markdown", path="guides/install.md#install/linux"),
                "many": await call(s, "read_many", paths=["faq.md", "guides/install.md#linux", "guides/d*.md"]),
                "capped": await call(s, "read_many", paths=["guides/*.md", "faq.md"], max_bytes=cap),
                "tree": await call(s, "list_tree"),
                "ground": await call(s, "ground", query="apt install rollback", mode="lexical"),
                "outline_text": await text(s, "outline_markdown", path="guides/install.md"),
                "section_text": await text(s, "read_markdown", path="guides/install.md#install/linux"),
                "by_text": await text(s, "read_markdown", path="wiki/guides/install.md#Mac"),
                "lines": await text(s, "read_markdown", path="guides/deploy.md:5-7"),
                "many_text": await text(s, "read_many", paths=["faq.md", "guides/install.md#linux", "guides/d*.md"]),
                "capped_text": await text(s, "read_many", paths=["guides/*.md", "faq.md"], max_bytes=cap),
                "tree_text": await text(s, "list_tree"),
                "ground_text": await text(s, "ground", query="apt install rollback", mode="lexical"),
                "unknown": await refused(s, "read_markdown", path="guides/install.md#windows"),
                "no_glob": await refused(s, "read_many", paths=["nothing/*.md"]),
                "both": await refused(s, "read_markdown", path="faq.md:1-2", start_line=1),
            }

    out = run(main)
    sections = out["outline"].structured_content["sections"]
    assert [(e["slug_path"], e["start_line"], e["end_line"]) for e in sections] == [
        ("install", 1, 11),
        ("install/linux", 5, 8),
        ("install/mac", 9, 11),
    ]
    assert sections[1]["bytes"] == len("## Linux\n\napt install x\n\n")
    assert out["outline"].structured_content["commit"] == head
    assert "wiki/guides/install.md:5-8  Linux" in out["outline_text"]
    assert out["section_text"] == out["section"].structured_content["text"] == "## Linux\n\napt install x\n\n"
    assert out["section"].structured_content["start_line"] == 5
    assert out["by_text"] == "## Mac\n\nbrew install x\n"
    assert out["lines"] == "## Rollback\n\nUse helm rollback to undo a release.\n"
    many = out["many"].structured_content
    assert [(p["path"], p["start_line"]) for p in many["parts"]] == [
        ("wiki/faq.md", 1),
        ("wiki/guides/install.md", 5),
        ("wiki/guides/deploy.md", 1),
    ]
    assert many["left_out"] == [] and many["bytes"] == sum(len(p["text"].encode()) for p in many["parts"])
    assert "==> wiki/guides/install.md:5-8 <==\n## Linux" in out["many_text"]
    capped = out["capped"].structured_content
    assert [p["path"] for p in capped["parts"]] == ["wiki/guides/deploy.md"]
    assert [p["path"] for p in capped["left_out"]] == ["wiki/guides/index.md", "wiki/guides/install.md", "faq.md"]
    assert f"left out past max_bytes {cap}" in out["capped_text"]
    tree = out["tree"].structured_content["tree"]
    assert tree["summary"] is None and tree["subdirs"][0]["summary"] == "How we ship."
    assert "wiki/guides/  (3 pages)  How we ship." in out["tree_text"]
    # Folder context: search results from guides/ carry its summary, once for the two pages found there.
    ground = out["ground"]
    assert {d["path"] for d in ground.structured_content["docs"]} == {"wiki/guides/install.md", "wiki/guides/deploy.md"}
    assert ground.structured_content["folders"] == {"wiki/guides": "How we ship."}
    assert "\n\nwiki/guides/  How we ship.\nwiki/guides/" in out["ground_text"]  # after the weak-match line
    assert out["ground_text"].count("How we ship.") == 1
    assert out["unknown"].code == -32602
    assert "no section 'windows'" in out["unknown"].message and "#install/linux, #install/mac" in out["unknown"].message
    assert out["no_glob"].code == -32602 and "no page matches 'nothing/*.md'" in out["no_glob"].message
    assert out["both"].code == -32602 and "already names the lines" in out["both"].message


def test_refusals_are_invalid_params_with_the_reason(wiki_repo, tmp_path):
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere/secret.md").write_text("# Secret\n")
    (wiki_repo.path / "wiki/escape").symlink_to(tmp_path / "elsewhere")

    async def main():
        async with connect(wiki_repo.path) as s:
            return [
                await refused(s, "read_markdown", path="../README.md"),
                await refused(s, "read_markdown", path=str(wiki_repo.path / "wiki/faq.md")),
                await refused(s, "read_markdown", path="escape/secret.md"),
                await refused(s, "add_markdown", path="escape/new.md", content="# x\n"),
                await refused(s, "add_markdown", path="notes.txt", content="x"),
                await refused(s, "add_markdown", path="big.md", content="x" * 1_000_001),
                await refused(s, "add_markdown", path="faq.md", content="# again\n"),
                await refused(s, "delete_markdown", path="../../etc/passwd.md"),
                await refused(s, "read_markdown", path="nope.md"),
                await refused(s, "get_footnote", page="faq.md", footnote_number=7),
                await refused(s, "ground", query="   "),
                await refused(s, "list_files", corpus="other"),
                await refused(s, "add_markdown", path="a" * 300 + ".md", content="# long\n"),
                await refused(s, "read_markdown", path="/".join(["folder"] * 700) + "/p.md"),
            ]

    errors = run(main)
    assert {e.code for e in errors} == {-32602}
    reasons = [
        "contains '..'",
        "is absolute",
        "outside corpus",
        "outside corpus",
        "not a markdown page",
        "over the 1000000-byte limit",
        "overwrite: true",
        "contains '..'",
        "no page 'nope.md'",
        "no footnote [^7]",
        "query is empty",
        "no corpus named 'other'",
        "over 255 bytes",
        "over 4096 bytes",
    ]
    for error, reason in zip(errors, reasons, strict=False):
        assert reason in error.message, (reason, error.message)
    assert not (tmp_path / "elsewhere/new.md").exists() and not (wiki_repo.path / "wiki/big.md").exists()


def test_several_corpora_require_one_for_page_tools(repo):
    repo.commit(
        "init",
        {
            ".gitwiki.toml": LEXICAL
            + '[[corpus]]\nname = "eng"\npath = "eng"\n[[corpus]]\nname = "ops"\npath = "ops"\n',
            "eng/a.md": "# A\n",
            "ops/b.md": "# B\n",
        },
    )

    async def main():
        async with connect(repo.path) as s:
            error = await refused(s, "add_markdown", path="c.md", content="# C\n")
            written = await call(s, "add_markdown", path="c.md", content="# C\n", corpus="ops")
            return error, written

    error, written = run(main)
    assert error.code == -32602 and "eng, ops" in error.message
    assert written.structured_content["absolute_path"] == str(repo.path / "ops/c.md")


def test_writes_index_lint_and_delete_through_the_server(wiki_repo):
    async def main():
        async with connect(wiki_repo.path) as s:
            added = await call(
                s,
                "add_markdown",
                path="runbooks/pager.md",
                content="# Pager\n\nThe wombat alarm. See [gone](gone.md).\n",
            )
            found = await call(s, "ground", query="wombat alarm", mode="lexical")
            told = await text(
                s,
                "add_markdown",
                path="runbooks/pager.md",
                content="# Pager\n\nThe wombat alarm. See [gone](gone.md).\n",
                overwrite=True,
            )
            again = await call(
                s, "add_markdown", path="runbooks/pager.md", content="# Pager\n\nThe koala alarm.\n", overwrite=True
            )
            deleted = await call(s, "delete_markdown", path="runbooks/pager.md")
            gone = await call(s, "ground", query="koala alarm", mode="lexical")
            return added, found, told, again, deleted, gone

    added, found, told, again, deleted, gone = run(main)
    data = added.structured_content
    assert (data["action"], data["path"], data["commit"]) == ("created", "wiki/runbooks/pager.md", None)
    assert any(f["path"] == "wiki/runbooks/pager.md" and "gone.md" in f["message"] for f in data["findings"])
    assert told.startswith("overwritten wiki/runbooks/pager.md in corpus wiki") and "1 lint finding(s)" in told
    assert found.structured_content["docs"][0]["path"] == "wiki/runbooks/pager.md"
    assert "wiki/runbooks/pager.md" in found.structured_content["dirty"]
    assert again.structured_content["action"] == "overwritten"
    assert deleted.structured_content["action"] == "deleted"
    assert "wiki/runbooks/pager.md" not in {d["path"] for d in gone.structured_content["docs"]}
    assert "[Pager]" not in (wiki_repo.path / "wiki/index.md").read_text()


def test_every_page_tool_takes_and_prints_the_paths_ground_prints(wiki_repo):
    """One path convention: the repo-relative path `ground` prints is what add_markdown, delete_markdown and
    every read tool take, and what each prints; the corpus-relative form still works. outline_markdown prints
    what the CLI's `gitwiki outline` prints, from the repo root or a subfolder."""

    async def main():
        async with connect(wiki_repo.path) as s:
            found = await call(s, "ground", query="helm rollback", mode="lexical")
            shown = found.structured_content["docs"][0]["path"]
            out = {"shown": shown}
            new = shown.replace("deploy.md", "oncall.md")
            out["added"] = await text(s, "add_markdown", path=new, content="# On-call\n\nPage the rota.\n")
            out["added_json"] = (
                await call(s, "add_markdown", path=new, content="# On-call\n\nPage the rota!\n", overwrite=True)
            ).structured_content
            out["old_form"] = (
                await call(s, "add_markdown", path="guides/legacy.md", content="# Legacy\n")
            ).structured_content
            out["listed"] = [f["path"] for f in (await call(s, "list_files")).structured_content["files"]]
            out["tree_text"] = await text(s, "list_tree")
            out["outline"] = await text(s, "outline_markdown", path=shown)
            out["outline_old_form"] = await text(s, "outline_markdown", path="guides/deploy.md")
            out["read"] = (await call(s, "read_markdown", path=shown)).structured_content["path"]
            out["many"] = await text(s, "read_many", paths=["wiki/guides/o*.md", new])
            out["footnote"] = (await call(s, "get_footnote", page=shown, footnote_number=1)).structured_content
            out["history"] = (await call(s, "page_history", path=shown)).structured_content["path"]
            for path in out["listed"]:  # every path a tool printed reads back
                assert (await call(s, "read_markdown", path=path)).structured_content["path"] == path
            out["deleted"] = await text(s, "delete_markdown", path=new)
            out["deleted_old_form"] = await text(s, "delete_markdown", path="guides/legacy.md")
            return out

    out = run(main)
    assert out["shown"] == "wiki/guides/deploy.md"
    assert out["added"].startswith("created wiki/guides/oncall.md in corpus wiki\n")
    assert (wiki_repo.path / "wiki/guides/oncall.md").exists() is False  # deleted again below
    assert out["added_json"]["path"] == "wiki/guides/oncall.md" and out["added_json"]["action"] == "overwritten"
    assert out["old_form"]["path"] == "wiki/guides/legacy.md"
    assert out["listed"] == [
        "wiki/faq.md",
        "wiki/guides/deploy.md",
        "wiki/guides/legacy.md",
        "wiki/guides/oncall.md",
        "wiki/index.md",  # scaffolded by the first write, with its index block
    ]
    assert out["tree_text"].startswith("wiki/  (5 pages)") and "\n  wiki/guides/  (3 pages)" in out["tree_text"]

    def cli_outline(path: str, where: Path) -> str:
        gitwiki = [sys.executable, "-m", "gitwiki", "-C", str(where), "outline", path]
        return subprocess.run(gitwiki, capture_output=True, text=True, check=True).stdout

    printed = cli_outline("wiki/guides/deploy.md", wiki_repo.path)
    assert out["outline"] == out["outline_old_form"] == printed  # byte for byte
    assert printed.startswith("wiki/guides/deploy.md:1-")
    assert cli_outline("deploy.md", wiki_repo.path / "wiki/guides") == printed  # from a subfolder too
    assert out["read"] == out["history"] == out["footnote"]["path"] == "wiki/guides/deploy.md"
    assert out["many"].startswith("==> wiki/guides/oncall.md:1-3 <==\n# On-call")
    assert out["deleted"].startswith("deleted wiki/guides/oncall.md in corpus wiki\n")
    assert out["deleted_old_form"].startswith("deleted wiki/guides/legacy.md in corpus wiki\n")


def test_a_page_edited_on_disk_between_calls_is_found_by_the_next_ground(wiki_repo):
    async def main():
        async with connect(wiki_repo.path) as s:
            before = await call(s, "ground", query="capybara", mode="lexical")
            (wiki_repo.path / "wiki/faq.md").write_text("# FAQ\n\nAsk the capybara.\n")
            edited = await call(s, "ground", query="capybara", mode="lexical")
            wiki_repo.commit("edit faq")
            committed = await call(s, "ground", query="capybara", mode="lexical")
            return before, edited, committed

    before, edited, committed = run(main)
    assert before.structured_content["docs"] == []
    assert edited.structured_content["docs"][0]["path"] == "wiki/faq.md"
    assert edited.structured_content["dirty"] == ["wiki/faq.md"]
    assert committed.structured_content["dirty"] == []
    assert committed.structured_content["commit"] == wiki_repo.git("rev-parse", "HEAD").strip()


def test_two_servers_writing_and_indexing_at_once_are_serialized(wiki_repo):
    wiki_repo.write(".gitwiki.toml", LEXICAL + "[mcp]\ncommit_writes = true\n")
    wiki_repo.commit("commit writes")

    async def writer(prefix: str, results: list):
        async with connect(wiki_repo.path) as s:
            for i in range(4):
                await call(
                    s, "add_markdown", path=f"{prefix}/page{i}.md", content=f"# {prefix} {i}\n\nnumbat {prefix}{i}\n"
                )
                results.append(await call(s, "index"))

    async def main():
        results: list = []
        async with anyio.create_task_group() as tg:
            tg.start_soon(writer, "alpha", results)
            tg.start_soon(writer, "beta", results)
        async with connect(wiki_repo.path) as s:
            files = await call(s, "list_files")
            found = await call(s, "ground", query="numbat", mode="lexical", top_files=20)
        return results, files, found

    results, files, found = run(main)
    assert len(results) == 8
    expected = {f"{p}/page{i}.md" for p in ("alpha", "beta") for i in range(4)}
    assert {f"wiki/{p}" for p in expected} <= {f["path"] for f in files.structured_content["files"]}
    assert {d["path"] for d in found.structured_content["docs"]} - {"wiki/index.md"} == {f"wiki/{p}" for p in expected}
    log = wiki_repo.git("log", "--format=%s").splitlines()
    assert sum(line.startswith("gitwiki: add_markdown") for line in log) == 8  # no commit lost to a race
    index = (wiki_repo.path / "wiki/index.md").read_text()
    assert all(f"({p})" in index for p in expected)
    assert wiki_repo.git("status", "--porcelain") == ""


def test_store_faults_are_internal_errors_and_stdout_stays_clean(wiki_repo, tmp_path, monkeypatch):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    monkeypatch.setenv("GITWIKI_INDEX_DIR", str(blocker / "index"))
    errlog = (tmp_path / "stderr.txt").open("w+")

    async def main():
        async with connect(wiki_repo.path, errlog) as s:
            return await refused(s, "ground", query="helm")

    error = run(main)
    assert error.code == -32603 and "cannot create index dir" in error.message
    errlog.seek(0)
    assert "cannot create index dir" in errlog.read()


@needs_model
def test_hybrid_ground_with_the_model(repo):
    repo.commit("init", {"wiki/guides/deploy.md": DEPLOY, "wiki/faq.md": "# FAQ\n\nAsk the platform team.\n"})

    async def main():
        async with connect(repo.path) as s:
            return await call(s, "ground", query="how do I undo a bad release?")

    result = run(main).structured_content
    assert result["mode"] == "hybrid"
    assert result["docs"][0]["path"] == "wiki/guides/deploy.md"
    assert result["weak"] is False and result["docs"][0]["weak"] is False


def test_ground_says_when_nothing_matches(wiki_repo):
    async def main():
        async with connect(wiki_repo.path) as s:
            weak = await call(s, "ground", query="helm quota billing invoices", mode="lexical")
            weak_text = await text(s, "ground", query="helm quota billing invoices", mode="lexical")
            strong = await call(s, "ground", query="helm rollback", mode="lexical")
            return weak, weak_text, strong, await text(s, "ground", query="helm rollback", mode="lexical")

    weak, weak_text, strong, strong_text = run(main)
    assert weak.structured_content["weak"] is True
    assert weak_text.startswith("weak match: no page below holds most of the words of 'helm quota")
    assert weak.structured_content["docs"][0]["path"] == "wiki/guides/deploy.md"  # a match, but a guess
    assert strong.structured_content["weak"] is False and "weak match" not in strong_text


def test_mcp_config_prints_client_snippets(wiki_repo, cli, monkeypatch):
    code, out, _ = cli("mcp", "config", cwd=wiki_repo.path)
    entry = json.loads(out)["mcpServers"]["gitwiki"]
    assert code == 0 and entry["args"] == ["-C", str(wiki_repo.path.resolve()), "serve"]
    monkeypatch.setenv("GITWIKI_MODEL", "some/model")
    monkeypatch.setenv("GITWIKI_MODEL_PATH", "relative/models")
    code, out, _ = cli("mcp", "config", cwd=wiki_repo.path)
    env = json.loads(out)["mcpServers"]["gitwiki"]["env"]
    assert env["GITWIKI_MODEL"] == "some/model" and env["GITWIKI_MODEL_PATH"] == os.path.abspath("relative/models")
    code, out, _ = cli("mcp", "config", "--project", "--name", "docs", cwd=wiki_repo.path)
    assert json.loads(out) == {"mcpServers": {"docs": {"command": "gitwiki", "args": ["serve"]}}}


def test_mcp_inspector_cli_lists_the_tools(wiki_repo):
    npx = shutil.which("npx")
    if npx is None:
        pytest.skip("node/npx is not installed")
    probe = subprocess.run(
        [npx, "--offline", "--yes", "@modelcontextprotocol/inspector", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    if probe.returncode != 0:
        pytest.skip("@modelcontextprotocol/inspector is not in the npm cache and tests run offline")
    listed = subprocess.run(
        [
            npx,
            "--offline",
            "--yes",
            "@modelcontextprotocol/inspector",
            "--cli",
            sys.executable,
            "-m",
            "gitwiki",
            "-C",
            str(wiki_repo.path),
            "serve",
            "--method",
            "tools/list",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert listed.returncode == 0, listed.stderr
    assert {t["name"] for t in json.loads(listed.stdout)["tools"]} == TOOLS


def test_a_degraded_search_is_said_in_the_instructions_and_every_ground_footer(repo, cli, monkeypatch, tmp_path):
    """No model (GITWIKI_MODEL_PATH names a folder without one) and a page past [search] max_page_bytes: what the
    model reads says so, as the CLI's footer does: the instructions' last line and each `ground` answer."""
    from gitwiki import __version__
    from gitwiki.mcp import early as mcp_early

    monkeypatch.delenv("GITWIKI_MODEL", raising=False)
    monkeypatch.setenv("GITWIKI_MODEL_PATH", str(tmp_path / "no-model-here"))
    repo.commit(
        "pages",
        {
            ".gitwiki.toml": '[[corpus]]\nname = "wiki"\npath = "wiki"\n[search]\nmax_page_bytes = 2000\n',
            "wiki/huge.md": "# Huge\n\n" + "deploy notes\n" * 200,
            "wiki/fine.md": "# Fine\n\ndeploy notes\n",
        },
    )
    assert cli("index", "-q", cwd=repo.path)[0] == 0  # records that the model does not load

    async def main():
        with open(tmp_path / "serve.log", "w") as log:  # the cli fixture's capsys stderr has no fd
            async with connect(repo.path, errlog=log) as s:
                return s.instructions, await text(s, "ground", query="deploy notes")

    told, answer = run(main)
    assert told.rstrip().endswith("`gitwiki status` says why.") and "Search is lexical only" in told
    assert len(told) <= 2048
    footer = answer.rstrip().splitlines()[-1]
    assert "mode lexical (no model: check that" in footer
    assert "searched only up to [search] max_page_bytes: wiki/huge.md" in answer
    # the stateless era's `server/discover` (Claude Code 2.1.332) is answered with the same instructions
    discover = mcp_early.early_answers(__version__, "a note")[mcp_early.STATELESS_VERSION][mcp_early.DISCOVER]
    assert discover["instructions"] == mcp_early.instructions("a note")
