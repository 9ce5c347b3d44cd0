"""Every hook type from a recorded event, through the real `gitwiki hook` entry point."""

from __future__ import annotations

import json
import os
import time

from tests.agent_hooks.conftest import context_of, load


def test_session_briefing_reports_corpora_freshness_memory_and_checkpoint(wiki, hook):
    code, answer = hook("session", load("session_start", wiki.path), wiki.path)
    assert code == 0
    assert answer["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    text = context_of(answer)
    head = wiki.git("rev-parse", "HEAD").strip()
    assert f"corpus wiki (wiki/): 8 pages, indexed at {head[:12]}" in text
    assert "behind HEAD" not in text
    assert "memory topics, newest first: keys (1)\n" in text
    assert "Checkpoint (" in text and "wiki/memory/checkpoints/default.md):\nSaved 2026-01-03T09:00:00Z." in text
    assert "## Task\n\nfix key rotation\n\n## Next\n\n- write the rotation test" in text

    wiki.commit("more", {"wiki/new.md": "# New\n\nText.\n"})
    wiki.write("wiki/draft.md", "# Draft\n")
    text = context_of(hook("session", load("session_start", wiki.path, session_id="s2"), wiki.path)[1])
    assert f"behind HEAD {wiki.git('rev-parse', 'HEAD').strip()[:12]}: run `gitwiki index`" in text
    assert "1 pages changed in the worktree" in text


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


def test_pre_compact_then_session_compact_reinjects_focus_and_checkpoint(wiki, hook):
    assert hook("prompt", load("user_prompt_submit", wiki.path), wiki.path)[1] is not None
    hook("ambient", load("pre_tool_use_edit", wiki.path), wiki.path)
    assert hook("pre-compact", load("pre_compact", wiki.path), wiki.path) == (0, None)
    text = context_of(hook("session", load("session_start_compact", wiki.path), wiki.path)[1])
    assert text.startswith("gitwiki (after compaction): phase Build.")
    assert "Focus topics this session: keys, deploy, crypto, architecture, legacy (" in text
    assert "Files edited this session: src/keys.py." in text
    assert "## Task\n\nfix key rotation" in text
    # The compaction summarized the injected sections away: they may come again.
    assert "wiki/deploy.md" in context_of(hook("prompt", load("user_prompt_submit", wiki.path), wiki.path)[1])


def test_stop_reminds_once_when_files_were_edited_and_nothing_stored(wiki, hook):
    assert hook("stop", load("stop", wiki.path), wiki.path) == (0, None)  # nothing edited
    hook("ambient", load("pre_tool_use_edit", wiki.path), wiki.path)
    code, answer = hook("stop", load("stop", wiki.path), wiki.path)
    assert answer["decision"] == "block"
    assert answer["reason"].startswith("gitwiki: this session edited src/keys.py and stored nothing in memory.")
    assert hook("stop", load("stop", wiki.path), wiki.path) == (0, None)  # once per session


def test_stop_is_quiet_after_a_store_or_when_already_continuing(wiki, hook):
    hook("ambient", load("pre_tool_use_edit", wiki.path, session_id="s2"), wiki.path)
    assert hook("stop", load("stop", wiki.path, session_id="s2", stop_hook_active=True), wiki.path) == (0, None)
    page = wiki.path / "wiki" / "memory" / "keys.md"
    page.write_text(page.read_text() + "\n## 2026-01-04T10:00:00Z — fix: flush first\n\nfix: flush first.\n")
    later = time.time() + 5
    os.utime(page, (later, later))
    assert hook("stop", load("stop", wiki.path, session_id="s2"), wiki.path) == (0, None)


def test_subagent_gets_the_topic_list(wiki, hook):
    code, answer = hook("subagent", load("subagent_start", wiki.path), wiki.path)
    assert answer["hookSpecificOutput"]["hookEventName"] == "SubagentStart"
    assert context_of(answer).startswith("gitwiki memory topics, newest first: keys (1); search them")


def test_approve_mcp_allows_gitwiki_tools_only(repo, hook, tmp_path):
    code, answer = hook("approve-mcp", load("permission_request", repo.path), tmp_path)
    assert code == 0
    assert answer == {"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {"behavior": "allow"}}}
    plugin_tool = load("permission_request", repo.path, tool_name="mcp__plugin_gitwiki_gitwiki__read_markdown")
    assert hook("approve-mcp", plugin_tool, tmp_path)[1] == answer
    for foreign in ("mcp__github__create_issue", "mcp__gitwiki_evil__ground", "mcp__gitwiki__evil__x", "Bash"):
        event = load("permission_request_foreign", repo.path, tool_name=foreign)
        assert hook("approve-mcp", event, tmp_path) == (0, None), foreign
