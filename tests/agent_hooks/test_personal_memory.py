"""The hooks read the personal memory repository beside the project's memory (gitwiki.memory.personal)."""

from __future__ import annotations

import pytest

from gitwiki.memory import store as store_mod
from gitwiki.memory.base import Memory
from tests.agent_hooks.helpers import context_of, load
from tests.memory.helpers import project, user_config

pytestmark = pytest.mark.usefixtures("home")


def test_hooks_see_personal_memory(tmp_path, cli, hook):
    user_config(tmp_path)
    a = project(tmp_path, "a")
    code, _, err = cli("index", cwd=a.path)
    assert code == 0, err
    mem = Memory.open(a.path)
    store_mod.store(mem.personal, "kubernetes", "gotcha: kubectl rollout restart keeps the old replicaset pods")
    mem.close()
    text = context_of(hook("session", load("session_start", a.path), a.path)[1])
    assert "~personal/kubernetes (1)" in text
    event = load("user_prompt_submit", a.path, prompt="why does kubectl rollout restart keep replicaset pods?")
    found = context_of(hook("prompt", event, a.path)[1])
    assert "- [personal memory] ~personal/memory/kubernetes.md" in found
    # The hooks read it; they never create it.
    user = tmp_path / "xdg/gitwiki/config.toml"
    user.write_text(user.read_text().replace("~/kb", "~/not-yet"))
    hook("session", load("session_start", a.path, session_id="s2"), a.path)
    assert not (tmp_path / "home/not-yet").exists()
    # A misconfigured one is left out; the hooks still answer.
    (tmp_path / "home/not-a-repo").mkdir()
    (tmp_path / "home/not-a-repo/file").write_text("x")
    user.write_text(user.read_text().replace("~/not-yet", "~/not-a-repo"))
    text = context_of(hook("session", load("session_start", a.path, session_id="s3"), a.path)[1])
    assert "~personal/" not in text and "corpus wiki" in text


def test_stop_counts_an_entry_stored_in_the_personal_memory(wiki, hook, cli, tmp_path):
    user_config(tmp_path)
    hook("ambient", load("pre_tool_use_edit", wiki.path, session_id="p1"), wiki.path)
    code, _, err = cli("memory", "store", "--personal", "keys", "fix: flush the cache before rotating", cwd=wiki.path)
    assert code == 0, err
    assert (tmp_path / "home/kb/memory/keys.md").is_file()
    assert hook("stop", load("stop", wiki.path, session_id="p1"), wiki.path) == (0, None)
