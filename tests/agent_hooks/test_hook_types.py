"""Every hook type from a recorded event, through `gitwiki-hook`, the entry point `gitwiki hooks install` writes."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from tests.agent_hooks.helpers import PAGES, context_of, load


def test_session_briefing_reports_corpora_freshness_memory_and_checkpoint(wiki, hook):
    code, answer = hook("session", load("session_start", wiki.path), wiki.path)
    assert code == 0
    assert answer["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    text = context_of(answer)
    head = wiki.git("rev-parse", "HEAD").strip()
    assert f"corpus wiki (wiki/): 8 pages, indexed at {head[:12]}" in text
    assert "behind HEAD" not in text
    assert "memory topics, newest first: keys (1)\n" in text
    # the memory library's compact meta-brief
    assert (
        "# Memory: 1 entries in 1 topics, 0 in the last 7 days\n\n- keys: 1 entries, last 2026-01-02, 0/day  [gotcha]\n"
        in text
    )
    assert "Checkpoint (" in text and "wiki/memory/checkpoints/default.md):\nSaved 2026-01-03T09:00:00Z." in text
    assert "## Task\n\nfix key rotation\n\n## Next\n\n- write the rotation test" in text

    wiki.commit("more", {"wiki/new.md": "# New\n\nText.\n"})
    wiki.write("wiki/draft.md", "# Draft\n")
    text = context_of(hook("session", load("session_start", wiki.path, session_id="s2"), wiki.path)[1])
    assert f"behind HEAD {wiki.git('rev-parse', 'HEAD').strip()[:12]}: run `gitwiki index`" in text
    assert "1 pages changed in the worktree" in text


def test_the_worktree_count_leaves_out_memory_pages_the_hooks_already_show(wiki, hook, cli):
    """A memory entry stored this session is in the prompt hook's answers as soon as the index holds its page's
    new version: the briefing must not count that page among those the hooks miss."""
    code, _, err = cli("memory", "store", "keys", "zebra crossings need a second signing key", cwd=wiki.path)
    assert code == 0, err
    wiki.write("wiki/draft.md", "# Draft\n")
    prompt = load("user_prompt_submit", wiki.path, prompt="zebra crossings signing key")
    assert "- [memory] wiki/memory/keys.md:" in context_of(hook("prompt", prompt, wiki.path)[1])
    changed = [line[3:] for line in wiki.git("status", "--porcelain", "--untracked-files=all").splitlines()]
    assert "wiki/memory/keys.md" in changed
    missed = [p for p in changed if p.startswith("wiki/") and not p.startswith("wiki/memory/")]
    text = context_of(hook("session", load("session_start", wiki.path, session_id="s4"), wiki.path)[1])
    assert f"; {len(missed)} pages changed in the worktree are not in the hooks' answers until committed" in text


def test_session_without_index_says_how_to_build_one(repo, hook):
    repo.commit("wiki", {"wiki/a.md": "# A\n"})
    text = context_of(hook("session", load("session_start", repo.path), repo.path)[1])
    assert "There is no gitwiki index yet: run `gitwiki index`." in text


def test_prompt_injects_matching_sections_once_per_session(wiki, hook):
    code, answer = hook("prompt", load("user_prompt_submit", wiki.path), wiki.path)
    assert code == 0
    assert answer["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"
    text = context_of(answer)
    assert "- [wiki] wiki/deploy.md:3-5 Deploy › Rollback" in text
    assert "`rollback_release`" in text
    assert hook("prompt", load("user_prompt_submit", wiki.path), wiki.path) == (0, None)
    other = context_of(hook("prompt", load("user_prompt_submit", wiki.path, session_id="other"), wiki.path)[1])
    assert "wiki/deploy.md" in other


def test_prompt_without_enough_matching_terms_injects_nothing(wiki, hook):
    event = load("user_prompt_submit", wiki.path, prompt="What colour should the new logo be?")
    assert hook("prompt", event, wiki.path) == (0, None)


def test_session_state_expires_after_four_hours(wiki, hook):
    assert hook("prompt", load("user_prompt_submit", wiki.path), wiki.path)[1] is not None
    state_file = wiki.path / ".git" / "gitwiki" / "agent-sessions" / "abc123.json"
    data = json.loads(state_file.read_text())
    assert len(data["injected"]) == 1 and data["focus"] == {"deploy": 1}
    data["updated"] = time.time() - 4 * 3600 - 1
    state_file.write_text(json.dumps(data))
    assert "wiki/deploy.md" in context_of(hook("prompt", load("user_prompt_submit", wiki.path), wiki.path)[1])


def test_expired_session_files_are_removed_at_most_every_ten_minutes(wiki, hook):
    folder = wiki.path / ".git" / "gitwiki" / "agent-sessions"
    folder.mkdir(parents=True)
    old = time.time() - 5 * 3600

    def expired(name: str):
        path = folder / f"{name}.json"
        path.write_text("{}")
        os.utime(path, (old, old))
        return path

    first = expired("gone")
    hook("prompt", load("user_prompt_submit", wiki.path, session_id="new1"), wiki.path)
    assert not first.exists() and (folder / "new1.json").is_file()
    second = expired("gone-later")
    hook("prompt", load("user_prompt_submit", wiki.path, session_id="new2"), wiki.path)
    assert second.exists()  # pruned a moment ago
    os.utime(folder / ".pruned", (old, old))
    hook("prompt", load("user_prompt_submit", wiki.path, session_id="new3"), wiki.path)
    assert not second.exists() and (folder / "new1.json").is_file()


def test_post_build_searches_a_failed_test_run(wiki, hook):
    code, answer = hook("post-build", load("post_tool_use_bash", wiki.path), wiki.path)
    assert code == 0
    assert answer["hookSpecificOutput"]["hookEventName"] == "PostToolUse"
    text = context_of(answer)
    assert text.startswith("gitwiki notes on this error (")
    assert "wiki/cache.md" in text


def test_post_build_stays_quiet_on_success_and_on_other_commands(wiki, hook):
    passed = load("post_tool_use_bash", wiki.path)
    passed["tool_response"] = {"stdout": "3 passed in 0.10s", "stderr": "", "interrupted": False}
    assert hook("post-build", passed, wiki.path) == (0, None)
    listing = load("post_tool_use_bash", wiki.path)
    listing["tool_input"] = {"command": "ls -la", "description": "List"}
    assert hook("post-build", listing, wiki.path) == (0, None)


def test_error_context_searches_the_error(wiki, hook):
    code, answer = hook("error-context", load("post_tool_use_failure", wiki.path), wiki.path)
    assert answer["hookSpecificOutput"]["hookEventName"] == "PostToolUseFailure"
    assert "wiki/cache.md" in context_of(answer)
    interrupted = load("post_tool_use_failure", wiki.path, is_interrupt=True, session_id="s2")
    assert hook("error-context", interrupted, wiki.path) == (0, None)


def _turn(transcript: Path) -> str:
    """The transcript after one more turn: the same event JSON later in a session comes with a longer one."""
    with transcript.open("a") as f:
        f.write('{"type": "assistant"}\n')
    return str(transcript)


def test_pre_compact_then_session_compact_reinjects_focus_and_checkpoint(wiki, hook, tmp_path):
    prompt = load("user_prompt_submit", wiki.path, transcript_path=_turn(tmp_path / "t.jsonl"))
    assert hook("prompt", prompt, wiki.path)[1] is not None
    hook("ambient", load("pre_tool_use_edit", wiki.path), wiki.path)
    assert hook("pre-compact", load("pre_compact", wiki.path), wiki.path) == (0, None)
    text = context_of(hook("session", load("session_start_compact", wiki.path), wiki.path)[1])
    assert text.startswith("gitwiki (after compaction): phase Build.")
    assert "Focus topics this session: keys, deploy, crypto, architecture, legacy (" in text
    assert "Files edited this session: src/keys.py." in text
    assert "## Task\n\nfix key rotation" in text
    # The compaction summarized the injected sections away: they may come again.
    prompt["transcript_path"] = _turn(tmp_path / "t.jsonl")
    assert "wiki/deploy.md" in context_of(hook("prompt", prompt, wiki.path)[1])


def test_stop_reminds_once_when_files_were_edited_and_nothing_stored(wiki, hook, tmp_path):
    transcript = tmp_path / "t.jsonl"
    assert hook("stop", load("stop", wiki.path, transcript_path=_turn(transcript)), wiki.path) == (0, None)
    hook("ambient", load("pre_tool_use_edit", wiki.path), wiki.path)
    code, answer = hook("stop", load("stop", wiki.path, transcript_path=_turn(transcript)), wiki.path)
    assert answer["decision"] == "block"
    assert answer["reason"].startswith("gitwiki: this session edited src/keys.py and stored nothing in memory.")
    assert hook("stop", load("stop", wiki.path), wiki.path) == (0, None)  # once per session


def test_stop_is_quiet_after_a_store_or_when_already_continuing(wiki, hook, cli):
    hook("ambient", load("pre_tool_use_edit", wiki.path, session_id="s2"), wiki.path)
    assert hook("stop", load("stop", wiki.path, session_id="s2", stop_hook_active=True), wiki.path) == (0, None)
    code, _, err = cli("memory", "store", "keys", "fix: flush the cache before rotating", cwd=wiki.path)
    assert code == 0, err
    assert hook("stop", load("stop", wiki.path, session_id="s2"), wiki.path) == (0, None)


def test_stop_counts_only_entries_stored_in_this_session(wiki, hook):
    """A topic page written this session without a new entry (an old entry's file touched, a person's
    heading added) is not a store: the memory library's session lists entries by their timestamps."""
    hook("ambient", load("pre_tool_use_edit", wiki.path, session_id="s3"), wiki.path)
    page = wiki.path / "wiki" / "memory" / "keys.md"
    page.write_text(page.read_text() + "\n## Notes\n\nsee the rotation runbook.\n")
    later = time.time() + 5
    os.utime(page, (later, later))
    answer = hook("stop", load("stop", wiki.path, session_id="s3"), wiki.path)[1]
    assert answer["decision"] == "block" and "stored nothing in memory" in answer["reason"]


def test_subagent_gets_the_topic_list(wiki, hook):
    code, answer = hook("subagent", load("subagent_start", wiki.path), wiki.path)
    assert answer["hookSpecificOutput"]["hookEventName"] == "SubagentStart"
    assert context_of(answer).startswith("gitwiki memory topics, newest first: keys (1); search them")


def test_approve_mcp_allows_the_read_only_gitwiki_tools_only(repo, hook, tmp_path):
    """PreToolUse (Claude Code runs no PermissionRequest hook under -p): allow for gitwiki's reads, from the
    server registered as gitwiki or from the plugin; no answer for its writes that remove or rewrite (memory
    writes that only add are allowed: test_permissions.py) or any other tool."""
    code, answer = hook("approve-mcp", load("pre_tool_use_mcp", repo.path), tmp_path)
    assert code == 0
    assert answer == {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "allow",
            "permissionDecisionReason": "gitwiki: a read-only tool of the gitwiki MCP server",
        }
    }
    plugin_tool = load("pre_tool_use_mcp", repo.path, tool_name="mcp__plugin_gitwiki_gitwiki__read_markdown")
    assert hook("approve-mcp", plugin_tool, tmp_path)[1] == answer
    for tool, arguments in (
        ("mcp__gitwiki__memory_topics", {}),  # list, the default action
        ("mcp__gitwiki__memory_topics", {"action": "stats"}),
        ("mcp__gitwiki__memory_topics", {"action": "prune", "days": "90"}),  # helix's: lists idle topics
        ("mcp__gitwiki__memory_topics", {"action": "clean"}),  # a dry run
    ):
        assert (
            hook("approve-mcp", load("pre_tool_use_mcp", repo.path, tool_name=tool, tool_input=arguments), tmp_path)[1]
            == answer
        ), arguments
    for tool, arguments in (
        ("mcp__gitwiki__add_markdown", {"path": "x.md", "content": "# x"}),
        ("mcp__gitwiki__memory_edit", {"action": "delete", "topic": "t", "index": 1}),
        ("mcp__gitwiki__memory_topics", {"action": "clean", "apply": True}),
        ("mcp__gitwiki__memory_topics", {"action": "clear_checkpoint"}),
        ("mcp__gitwiki__memory_topics", "list"),
        ("mcp__github__create_issue", {}),
        ("mcp__gitwiki_evil__ground", {}),
        ("mcp__gitwiki__evil__ground", {}),
        ("Bash", {"command": "ls"}),
    ):
        event = load("pre_tool_use_mcp", repo.path, tool_name=tool, tool_input=arguments)
        assert hook("approve-mcp", event, tmp_path) == (0, None), tool


def test_memory_comes_from_the_memory_config_and_the_brief_is_compact(repo, cli, hook):
    """[memory] corpus and dir decide where topics are read (one source of truth with gitwiki memory); the
    session briefing carries the library's compact meta-brief, top 5 topics by activity."""
    config = (
        PAGES[".gitwiki.toml"] + '[[corpus]]\nname = "notes"\npath = "notes"\n[memory]\ncorpus = "notes"\ndir = "mem"\n'
    )
    topics = {
        f"notes/mem/t{n}.md": f"# t{n}\n\n## 2026-01-0{n + 1}T10:00:00Z — perf: step {n}\n\nperf: step {n}\n[tags: perf]\n"
        for n in range(6)
    }
    repo.commit("wiki", {**PAGES, ".gitwiki.toml": config, **topics, "notes/index.md": "# Notes\n"})
    assert cli("index", cwd=repo.path)[0] == 0
    text = context_of(hook("session", load("session_start", repo.path), repo.path)[1])
    assert "memory topics, newest first: t5 (1), t4 (1), t3 (1), t2 (1), t1 (1), t0 (1)\n" in text
    assert "# Memory: 6 entries in 6 topics, 0 in the last 7 days\n\n- t5: 1 entries, last 2026-01-06" in text
    assert "- t1: 1 entries, last 2026-01-02, 0/day  [perf]\n- … 1 more topics (topics action=list)" in text
    assert "keys" not in text.partition("memory topics")[2]  # wiki/memory is no longer the memory folder

    # the hooks' parse cache follows the pages: a store shows up in the next briefing
    assert (repo.path / ".git" / "gitwiki" / "agent-memory.json").is_file()
    code, _, err = cli("memory", "store", "t0", "decision: keep the step order", cwd=repo.path)
    assert code == 0, err
    text = context_of(hook("session", load("session_start", repo.path, session_id="s2"), repo.path)[1])
    assert "memory topics, newest first: t0 (2), t5 (1)" in text
    assert "# Memory: 7 entries in 6 topics, 1 in the last 7 days" in text


def test_the_cached_memory_overview_ends_when_an_entry_leaves_the_seven_day_window(wiki, hook, monkeypatch):
    """The keys topic's entry is from 2026-01-02T10:00:00Z; the briefing's overview is cached until it is a
    week old (the library's "last 7 days"), then made again."""
    from datetime import UTC, datetime, timedelta

    from gitwiki.agent_hooks import memory

    written = datetime(2026, 1, 2, 10, tzinfo=UTC)

    def briefing_at(now: datetime) -> str:
        class Clock(datetime):
            @classmethod
            def now(cls, tz=None):
                return now

        monkeypatch.setattr(memory, "datetime", Clock)
        text = context_of(hook("session", load("session_start", wiki.path, session_id=str(now)), wiki.path)[1])
        return next(line for line in text.splitlines() if line.startswith("# Memory:"))

    assert briefing_at(written + timedelta(days=6)) == "# Memory: 1 entries in 1 topics, 1 in the last 7 days"
    cached = json.loads((wiki.path / ".git" / "gitwiki" / "agent-overview.json").read_text())
    assert cached["until"] == (written + timedelta(days=7)).timestamp()
    assert briefing_at(written + timedelta(days=6, hours=23)) == "# Memory: 1 entries in 1 topics, 1 in the last 7 days"
    assert (
        briefing_at(written + timedelta(days=7, seconds=1)) == "# Memory: 1 entries in 1 topics, 0 in the last 7 days"
    )


def test_a_checkpoint_saved_after_the_overview_was_cached_is_the_one_shown(wiki, hook):
    first = context_of(hook("session", load("session_start", wiki.path, session_id="c1"), wiki.path)[1])
    assert ", wiki/memory/checkpoints/default.md):\nSaved 2026-01-03T09:00:00Z." in first
    (wiki.path / "wiki" / "memory" / "checkpoints" / "later.md").write_text(
        "# Checkpoint later\n\nSaved 2026-01-04T09:00:00Z.\n\n## Task\n\nship the rotation\n"
    )
    text = context_of(hook("session", load("session_start", wiki.path, session_id="c2"), wiki.path)[1])
    assert ", wiki/memory/checkpoints/later.md):\nSaved 2026-01-04T09:00:00Z.\n\n## Task\n\nship the rotation" in text


def test_the_one_hook_table_names_each_handler_and_what_it_takes():
    import importlib
    import inspect

    from gitwiki.agent_hooks import HOOK_TYPES

    for hook in HOOK_TYPES:
        module, function = hook.handler.split(":")
        handler = getattr(importlib.import_module(f"gitwiki.agent_hooks.{module}"), function)
        (param,) = inspect.signature(handler).parameters.values()
        # a repository hook gets the Call (event, lookup, session); approve-mcp the bare event
        assert (param.annotation in ("Call", "handlers.Call")) == hook.repository, hook.name
