"""The personal memory repository: created on first use, written where configured, read by every project's
memory tools and hooks beside the project's own (real git repos; HOME and the user config in tmp dirs)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gitwiki import config as config_mod
from gitwiki.errors import NotFoundError, UsageError
from gitwiki.mcp.memory import MemoryTools
from gitwiki.memory import brief as brief_mod
from gitwiki.memory import personal, replies, stores
from gitwiki.memory import store as store_mod
from gitwiki.memory import topics as topics_mod
from gitwiki.memory.base import Memory
from gitwiki.memory.search import MemoryQuery
from gitwiki.wiki import Wiki
from tests.helpers import needs_model
from tests.memory.helpers import PROJECT, project, user_config


def git(path: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=path, check=True, capture_output=True, text=True).stdout


def test_first_use_creates_a_committed_personal_repository(tmp_path, home):
    user_config(tmp_path)
    a = project(tmp_path, "a")
    mem = Memory.open(a.path)
    assert not (home / "kb").exists()
    target, (topic,) = stores.writer(mem, "personal", ["rust"])
    done = store_mod.store(target, topic, "gotcha: cargo caches the registry index in CARGO_HOME")
    (result,) = done.results
    assert result.entry.ref == "~personal/rust:1"
    kb = home / "kb"
    assert (kb / ".git").is_dir() and (kb / "memory/rust.md").read_text().startswith("# rust\n")
    # Its config and every write are committed: nothing reviews a personal repository.
    assert git(kb, "status", "--porcelain") == ""
    assert git(kb, "log", "--format=%s").count("\n") == 2
    assert done.writes[0].commit is not None
    # The project is untouched; the personal index lives in the personal repo's git dir.
    assert a.git("status", "--porcelain") == "" and (kb / ".git/gitwiki").is_dir()
    mem.close()


def test_project_a_stores_to_personal_and_project_b_reads_and_searches_it(tmp_path, home):
    user_config(tmp_path)
    a, b = project(tmp_path, "a"), project(tmp_path, "b")
    mem_a = Memory.open(a.path)
    # auto: project a keeps no topic pages, so its writes go to the personal memory, as helix's do.
    target, (topic,) = stores.writer(mem_a, None, ["docker"])
    assert target is mem_a.personal
    store_mod.store(target, topic, "gotcha: docker buildx needs the containerd image store for multi-arch")
    mem_a.close()

    mem_b = Memory.open(b.path)
    found = replies.search(mem_b, "buildx multi-arch")
    assert [h["topic"] for h in found.data["hits"]] == ["~personal/docker"]
    assert "~personal/docker:1" in found.text
    assert "~personal/docker" in replies.brief(mem_b).text
    read = replies.read(mem_b, "~personal/docker", 1).data
    assert read["entries"][0]["index"] == 1 and read["path"] == "~personal/memory/docker.md"
    listed = replies.list_topics(mem_b).data["topics"]
    assert [t["topic"] for t in listed] == ["~personal/docker"]
    assert [e["topic"] for e in replies.recent(mem_b).data["entries"]] == ["~personal/docker"]
    assert replies.entries(mem_b, "~personal/docker").data["topic"] == "~personal/docker"
    topic_brief = brief_mod.brief(mem_b, "~personal/docker", detail="scan")
    assert topic_brief.kind == "topic" and [i.entry.ref for i in topic_brief.items] == ["~personal/docker:1"]
    # Its own store, its own index: b's index holds no personal page.
    assert all(not p.startswith("~") for p in mem_b.wiki.store.pages("wiki"))
    mem_b.close()


def test_an_index_dir_for_every_repository_leaves_the_personal_memory_its_own(tmp_path, home, monkeypatch):
    # GITWIKI_INDEX_DIR (or the user's [storage] index_dir) named one dir for the project and the personal memory
    # alike: the two repositories undid each other's rows there, and a search of both right after an import of
    # 432 notes lost the project's first topic (bench/memory_recall_eval.py --set simonw --personal: MRR 0.41).
    monkeypatch.setenv("GITWIKI_INDEX_DIR", str(tmp_path / "shared-index"))
    user_config(tmp_path)
    a = project(tmp_path, "a")
    mem = Memory.open(a.path)
    target, (topic,) = stores.writer(mem, "personal", ["rust"])
    store_mod.store(target, topic, "gotcha: cargo caches the registry index in CARGO_HOME")
    target, (topic,) = stores.writer(mem, "project", ["deploy"])
    store_mod.store(target, topic, "gotcha: helm rollback needs the release's revision number")
    assert mem.personal is not None
    assert mem.index_dir() == tmp_path / "shared-index"
    assert mem.personal.index_dir() == home / "kb" / ".git" / "gitwiki"
    assert [h["topic"] for h in replies.search(mem, "cargo registry").data["hits"]] == ["~personal/rust"]
    assert [h["topic"] for h in replies.search(mem, "helm rollback").data["hits"]] == ["deploy"]
    mem.close()
    # the hooks read the personal memory's index where the library keeps it
    from gitwiki.agent_hooks.lookup import Lookup
    from gitwiki.git import gitcli

    checkout = gitcli.find_checkout(a.path)
    assert checkout is not None
    lookup = Lookup.from_checkout(checkout)
    assert lookup.personal is not None and lookup.personal.index_dir == home / "kb" / ".git" / "gitwiki"
    lookup.close()


def test_a_topic_in_both_memories_stays_two_topics(tmp_path, home):
    user_config(tmp_path)
    a = project(tmp_path, "a")
    mem = Memory.open(a.path)
    store_mod.store(mem, "deploy", "the staging deploy runs from the release branch only")
    store_mod.store(mem.personal, "deploy", "my deploy checklist: tag, push, watch the canary dashboard")
    listed = [t.topic for t in topics_mod.list_topics(mem)]
    assert listed == ["deploy", "~personal/deploy"]
    assert "release branch" in replies.read(mem, "deploy").text
    assert "canary" in replies.read(mem, "~personal/deploy").text
    found = replies.search(mem, "deploy")
    assert sorted(h["topic"] for h in found.data["hits"]) == ["deploy", "~personal/deploy"]
    assert found.data["total"] == 2
    # Fused search keeps the best match level either memory reached: an every-word match in one leaves
    # out the other's any-word matches, as one memory does.
    one = replies.search(mem, "canary dashboard")
    assert [h["topic"] for h in one.data["hits"]] == ["~personal/deploy"] and one.data["matched"] == "and"
    assert [h["topic"] for h in replies.search(mem, MemoryQuery("deploy", topic="~personal/deploy")).data["hits"]] == [
        "~personal/deploy"
    ]
    assert [h["topic"] for h in replies.search(mem, "deploy topic:deploy").data["hits"]] == ["deploy"]
    # At the any-word level each memory's best hit scores 1 in its own index: the share of the query's
    # words an entry holds decides between them, whichever memory holds it.
    store_mod.store(mem, "wal", "sqlite WAL mode lets readers run beside one writer")
    store_mod.store(mem.personal, "vacuum", "postgres vacuum must run before the nightly reindex")
    either = replies.search(mem, "which database lets readers run beside a writer while vacuum waits")
    assert either.data["matched"] == "or" and [h["topic"] for h in either.data["hits"]][:2] == [
        "wal",
        "~personal/vacuum",
    ]
    store_mod.store(mem.personal, "replica", "a replica database lets readers run beside its writer")
    again = replies.search(mem, "which database lets readers run beside a writer while vacuum waits")
    assert [h["topic"] for h in again.data["hits"]][:2] == ["~personal/replica", "wal"]
    # A search word matches a personal topic's own name, not the label every one of them shares.
    assert replies.search(mem, "personal").data["total"] == 0
    mem.close()


def test_references_in_the_personal_memory_name_its_topics(tmp_path, home):
    user_config(tmp_path, write="project")
    a = project(tmp_path, "a")
    mem = Memory.open(a.path)
    store_mod.store(mem.personal, "engine", "the engine caches compiled shaders")
    store_mod.store(mem.personal, "render", "render waits on the engine cache", links=["engine:1"])
    mine = stores.topics_memory(mem, "personal", "xref")
    incoming = topics_mod.xref(mine, "~personal/engine")
    assert {(x.source, x.target, x.kind) for x in incoming} == {
        ("~personal/render:1", "~personal/engine:1", "link"),
        ("~personal/render:1", "~personal/engine", "mention"),
    }
    assert topics_mod.xref(mine, "engine") == incoming and topics_mod.xref(mine, "render") == []
    g = topics_mod.graph(mine)
    assert g.nodes == [("~personal/engine", 1), ("~personal/render", 1)]
    assert g.edges == [("~personal/render", "~personal/engine", 2)]
    mem.close()


def test_writes_go_where_configured(tmp_path, home):
    user_config(tmp_path)
    a = project(tmp_path, "a", {"wiki/memory/notes.md": "# notes\n"})
    mem = Memory.open(a.path)
    # auto, and the project keeps topic pages: the project.
    assert stores.writer(mem, None, ["x"])[0] is mem
    assert stores.writer(mem, "personal", ["x"])[0] is mem.personal
    # A ~personal/ topic names the personal memory; with scope project it is refused.
    target, names = stores.writer(mem, None, ["~personal/x"])
    assert target is mem.personal and names == ["x"]
    with pytest.raises(UsageError, match="scope project, but the topic names the personal memory"):
        stores.writer(mem, "project", ["~personal/x"])
    with pytest.raises(UsageError, match="one call writes to one memory"):
        stores.writer(mem, None, ["~personal/x", "y"])
    with pytest.raises(UsageError, match="scope must be project or personal"):
        stores.writer(mem, "global", ["x"])
    mem.close()
    user_config(tmp_path, write="personal")
    mem = Memory.open(a.path)
    assert stores.writer(mem, None, ["x"])[0] is mem.personal
    assert stores.writer(mem, "project", ["x"])[0] is mem
    mem.close()


def test_the_mcp_tools_take_a_scope_and_route_edits(tmp_path, home):
    user_config(tmp_path, write="project")
    a = project(tmp_path, "a")
    wiki = Wiki.open(a.path)
    tools = MemoryTools(wiki)
    stored = tools.memory_store("shell", "gotcha: zsh globs fail loudly where bash passes them on", scope="personal")
    assert stored.data["entry"]["topic"] == "~personal/shell"
    batch = tools.memory_batch([{"topic": "~personal/shell", "text": "decision: fish for interactive use"}])
    assert batch.data["results"][0]["entry"]["topic"] == "~personal/shell"
    tools.memory_store("shell", "the project's CI runs its scripts with bash -e")
    assert (a.path / "wiki/memory/shell.md").is_file()
    edited = tools.memory_edit("append", "~personal/shell", match_str="zsh", text="setopt nullglob turns it off")
    assert edited.data["entries"][0]["topic"] == "~personal/shell"
    assert "nullglob" in (home / "kb/memory/shell.md").read_text()
    assert "nullglob" not in (a.path / "wiki/memory/shell.md").read_text()
    with pytest.raises(UsageError, match="one call writes to one memory"):
        tools.memory_edit("merge", "~personal/shell", into="shell")
    listed = tools.memory_topics("list", scope="personal").data["topics"]
    assert [t["topic"] for t in listed] == ["~personal/shell"]
    both = tools.memory_topics("list").data["topics"]
    assert [t["topic"] for t in both] == ["shell", "~personal/shell"]
    with pytest.raises(NotFoundError):
        tools.memory_read("~personal/nope")
    tools.mem.close()


def test_the_cli_writes_with_personal_and_reads_both(tmp_path, home, cli):
    user_config(tmp_path, write="project")
    a = project(tmp_path, "a")
    code, out, err = cli(
        "memory", "store", "--personal", "git", "rebase --update-refs moves stacked branches", cwd=a.path
    )
    assert code == 0, err
    assert "~personal/git:1" in out and "of ~personal/memory/git.md" in out  # the page, in the personal repository
    code, out, err = cli("memory", "read", "~personal/git:1", "--json", cwd=a.path)  # the reference just printed
    assert code == 0 and json.loads(out)["entries"][0]["text"] == "rebase --update-refs moves stacked branches", err
    code, out, err = cli("memory", "store", "--json", "--personal", "git", "git absorb folds fixups", cwd=a.path)
    assert json.loads(out)["topic"] == "~personal/git"
    code, out, err = cli("memory", "edit", "delete", "~personal/git", "2", cwd=a.path)
    assert code == 0 and out.startswith("deleted 1 entry from ~personal/git\n"), err
    code, out, _ = cli("memory", "search", "--json", "stacked branches", cwd=a.path)
    assert [h["topic"] for h in json.loads(out)["hits"]] == ["~personal/git"]
    with pytest.raises(SystemExit):  # argparse: --project not allowed with --personal
        cli("memory", "store", "--personal", "--project", "git", "x", cwd=a.path)
    code, _, err = cli("memory", "store", "--project", "~personal/git", "x", cwd=a.path)
    assert code != 0 and "scope project, but the topic names the personal memory" in err


def test_a_repository_that_is_not_git_or_inside_the_project_is_refused(tmp_path, home):
    a = project(tmp_path, "a")
    settings = config_mod.load(a.path)
    (home / "stuff").mkdir()
    (home / "stuff/file.txt").write_text("not a repo")
    for bad, message in (
        (home / "stuff", "is not a git repository"),
        (a.path / "kb", "lie one inside the other"),
        (a.path, "lie one inside the other"),
        (tmp_path, "lie one inside the other"),
    ):
        memory = settings.memory._replace(repository=str(bad))
        with pytest.raises(UsageError, match=message):
            Memory(root=a.path, settings=settings._replace(memory=memory)).stores()
    with pytest.raises(UsageError, match="no personal memory repository is configured"):
        stores.writer(Memory.open(a.path), "personal", ["x"])
    # An empty folder is taken and initialised.
    (home / "empty").mkdir()
    memory = settings.memory._replace(repository=str(home / "empty"))
    assert Memory(root=a.path, settings=settings._replace(memory=memory)).personal is not None
    assert (home / "empty/.git").is_dir()


def test_a_checkout_cannot_choose_the_personal_repository(tmp_path, home, capsys):
    a = project(tmp_path, "a")
    a.write(".gitwiki.toml", PROJECT + '[memory]\nrepository = "~/elsewhere"\n')
    assert config_mod.load(a.path).memory.repository is None  # ignored (gitwiki.trust), with one line saying so
    assert "ignored [memory] repository" in capsys.readouterr().err
    a.write(".gitwiki.toml", PROJECT + '[[repository]]\nname = "kb"\npath = "../kb"\nmemory = true\n')
    with pytest.raises(UsageError, match="gitwiki repo allow kb"):
        personal.location(config_mod.load(a.path), a.path)
    # A project may turn the user's off.
    user_config(tmp_path)
    a.write(".gitwiki.toml", PROJECT + '[memory]\nrepository = ""\n')
    assert Memory.open(a.path).personal is None
    (tmp_path / "xdg/gitwiki/config.toml").write_text('[[repository]]\nname = "kb"\npath = "~/kb"\nmemory = true\n')
    assert Memory.open(a.path).personal is None


def test_a_checkout_may_keep_its_memory_writes_but_not_send_them_to_the_personal_memory(tmp_path, home, capsys):
    """What a hostile page talks an agent into storing must not reach every other project's hooks: a checkout's
    `write = "personal"` is ignored, with one line; `"project"` is taken."""
    a = project(tmp_path, "a", {"wiki/memory/rust.md": "# rust\n"})
    user_config(tmp_path, write="project")
    for asked in ("personal", "auto"):
        a.write(".gitwiki.toml", PROJECT + f'[memory]\nwrite = "{asked}"\n')
        assert config_mod.load(a.path).memory.write == "project"
    assert "ignored [memory] write" in capsys.readouterr().err  # once a process
    user_config(tmp_path, write="personal")
    a.write(".gitwiki.toml", PROJECT + '[memory]\nwrite = "project"\n')
    mem = Memory.open(a.path)
    assert mem.config.write == "project" and capsys.readouterr().err == ""
    assert store_mod.store(mem, "ops", "kept in the project").results[0].topic == "ops"
    assert (a.path / "wiki/memory/ops.md").is_file()


def test_config_keys_are_checked(tmp_path, home):
    a = project(tmp_path, "a")
    for text, message in (
        ('[memory]\nwrite = "global"\n', "write must be one of auto, project, personal"),
        ('[[repository]]\nname = "kb"\nurl = "https://example.com/kb.git"\nmemory = true\n', "needs a local path"),
    ):
        path = tmp_path / "xdg/gitwiki/config.toml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        with pytest.raises(UsageError, match=message):
            config_mod.load(a.path)
    path.write_text('[memory]\nrepository = "~/kb"\n[[repository]]\nname = "kb"\npath = "~/kb2"\nmemory = true\n')
    with pytest.raises(UsageError, match="one personal memory repository at most"):
        config_mod.load(a.path)
    path.write_text('[[repository]]\nname = "kb"\npath = "~/kb2"\nmemory = true\n')
    assert personal.location(config_mod.load(a.path), a.path).path == home / "kb2"


@given(st.text())
def test_a_topic_names_one_memory_and_keeps_its_name(raw):
    """Any topic text: the prefix, when it starts it, is split off once, and nothing else is changed."""
    label, name = personal.split(raw)
    assert label + name == raw and label in ("", personal.PREFIX)
    assert (label == personal.PREFIX) == raw.startswith(personal.PREFIX)
    assert personal.split(name) == ("", name) or name.startswith(personal.PREFIX)


@needs_model
@pytest.mark.slow
def test_hybrid_search_ranks_each_memory_in_its_own_index(tmp_path, home):
    path = tmp_path / "xdg/gitwiki/config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('[memory]\nrepository = "~/kb"\nwrite = "project"\n')
    a = project(tmp_path, "a")
    mem = Memory.open(a.path)
    store_mod.store(mem, "db", "postgres vacuum must run before the nightly reindex")
    store_mod.store(mem.personal, "db", "sqlite WAL mode lets readers run beside one writer")
    found = stores.search(mem, "which database lets readers run beside a writer")
    assert found.ranking == "hybrid" and found.hits[0].entry.ref == "~personal/db:1"
    # Each memory's pages are in its own index only.
    personal_blobs = {tf.blob for tf in mem.personal.topics().values()}
    assert not mem.wiki.store.known_blobs(personal_blobs)
    assert mem.personal.wiki.store.known_blobs(personal_blobs) == personal_blobs
    mem.close()


def test_through_the_mcp_server_scope_is_a_parameter_and_a_bad_one_is_refused(tmp_path, home):
    from tests.mcp.client import call, connect, refused, run

    user_config(tmp_path, write="project")
    a = project(tmp_path, "a")

    async def main():
        async with connect(a.path) as s:
            stored = await call(s, "memory_store", topic="vim", text="gq reflows a paragraph", scope="personal")
            assert stored.structured_content["entry"]["topic"] == "~personal/vim"
            found = await call(s, "memory_search", query="reflows paragraph")
            assert [h["topic"] for h in found.structured_content["hits"]] == ["~personal/vim"]
            # The schema's enum: refused by the SDK's validation, as every Literal parameter is.
            bad = await s.call_tool("memory_store", {"topic": "vim", "text": "x", "scope": "global"})
            assert bad.is_error and "Input should be 'project' or 'personal'" in bad.content[0].text
            both = await refused(s, "memory_store", topic="~personal/vim", text="x", scope="project")
            assert both.error.code == -32602 and "scope project" in both.error.message

    run(main)
    assert (home / "kb/memory/vim.md").is_file() and not (a.path / "wiki/memory").exists()


def test_a_personal_repository_whose_objects_are_gone_refuses_the_store_and_writes_nothing(tmp_path, home, cli):
    """An interrupted gc or a disk clean-up under ~/kb/.git/objects: `memory store --personal` was a pygit2
    traceback, and the entry was in the page anyway, uncommitted (a retry stored it twice). Now one error
    naming the repository and the repair, and the page as it was: the write was never acknowledged, so
    nothing is lost by refusing it."""
    user_config(tmp_path)
    a = project(tmp_path, "a")
    code, _, err = cli("memory", "store", "--personal", "deploy", "gotcha: canaries first", cwd=a.path)
    assert code == 0, err
    kb = home / "kb"
    for found in [p for p in (kb / ".git" / "objects").rglob("*") if p.is_file()]:
        found.unlink()
    page = (kb / "memory" / "deploy.md").read_bytes()
    code, out, err = cli("memory", "store", "--personal", "deploy", "gotcha: roll back with helm", cwd=a.path)
    assert code == 4 and out == "" and "Traceback" not in err
    assert err.count("\n") == 1 and f"git repository {kb} is damaged" in err and "git fsck" in err
    assert (kb / "memory" / "deploy.md").read_bytes() == page
    code, out, err = cli("memory", "store", "--project", "deploy", "gotcha: roll back with helm", cwd=a.path)
    assert code == 0, err  # the project's memory is another repository, and unharmed


def test_a_commit_that_fails_after_the_write_puts_the_page_back(tmp_path, home, monkeypatch):
    """A personal repository commits every write; when the commit fails (a ref that cannot move, a disk that
    fills), the write is undone instead of left uncommitted behind an error."""
    from gitwiki.errors import StoreError
    from gitwiki.git.gitrepo import GitRepo

    user_config(tmp_path)
    a = project(tmp_path, "a")
    mem = Memory.open(a.path)
    target, (topic,) = stores.writer(mem, "personal", ["deploy"])
    store_mod.store(target, topic, "gotcha: canaries first")
    kb = home / "kb"
    page = (kb / "memory" / "deploy.md").read_bytes()

    def refuse(self, paths, message):
        raise StoreError("the ref could not move")

    monkeypatch.setattr(GitRepo, "commit_paths", refuse)
    with pytest.raises(StoreError, match="the ref could not move"):
        store_mod.store(target, topic, "gotcha: roll back with helm")
    assert (kb / "memory" / "deploy.md").read_bytes() == page
    assert git(kb, "status", "--porcelain") == ""
    mem.close()


def test_auto_writes_a_topic_where_it_already_lives(tmp_path, home, cli):
    """With a personal memory holding `rust` and a project with other topic pages, `memory store rust …` went
    to a new project `rust` beside `~personal/rust`."""
    user_config(tmp_path)
    a = project(tmp_path, "a", {"wiki/memory/notes.md": "# notes\n"})
    mem = Memory.open(a.path)
    store_mod.store(mem.personal, "rust", "gotcha: cargo caches the registry index in CARGO_HOME")
    mem.close()
    code, out, err = cli("memory", "store", "rust", "clippy's pedantic group is opt-in per crate", cwd=a.path)
    assert code == 0 and out.startswith("stored ~personal/rust:2"), (out, err)
    assert not (a.path / "wiki/memory/rust.md").exists()
    assert "pedantic" in (home / "kb/memory/rust.md").read_text()
    # A name as the page is stored (Rust → rust) is the same topic; a new topic follows the old rule.
    mem = Memory.open(a.path)
    assert stores.writer(mem, None, ["Rust"])[0] is mem.personal
    assert stores.writer(mem, None, ["go"])[0] is mem
    assert stores.writer(mem, None, ["notes"])[0] is mem
    # A batch whose topics live in the personal memory (and new ones) goes there; topics that live apart, and
    # a topic both memories have, go where a new topic would.
    assert stores.writer(mem, None, ["rust", "go"])[0] is mem.personal
    assert stores.writer(mem, None, ["rust", "notes"])[0] is mem
    assert stores.writer(mem, "project", ["rust"])[0] is mem  # a scope decides over the topic's home
    assert stores.writer_edit(mem, None, "rust", None, None)[0] is mem.personal  # an edit finds it there too
    store_mod.store(mem, "rust", "the project pins its toolchain in rust-toolchain.toml")
    assert stores.writer(mem, None, ["rust"])[0] is mem
    mem.close()
    user_config(tmp_path, write="project")  # and so does write = "project"
    mem = Memory.open(a.path)
    (a.path / "wiki/memory/rust.md").unlink()
    assert stores.writer(mem, None, ["rust"])[0] is mem
    mem.close()
