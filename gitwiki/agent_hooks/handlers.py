"""One function per hook type (the ambient one lives in ambient.py): an event in, Claude Code's answer out."""

from __future__ import annotations

import re
from typing import NamedTuple

from gitwiki import gitcli
from gitwiki.agent_hooks import MCP_PREFIXES, memory
from gitwiki.agent_hooks.extract import BUILD_COMMAND, error_lines
from gitwiki.agent_hooks.lookup import Lookup, Note
from gitwiki.agent_hooks.protocol import allow_permission, context, keep_going
from gitwiki.agent_hooks.state import Session
from gitwiki.config import matches

ASK = "search them with the gitwiki MCP tools or `gitwiki ground QUERY`"
# Lines that say a build or test run failed, in the output of a command that did not report its exit status.
_FAILED = re.compile(r"\bFAILED\b|\bFAIL\b|\bERROR\b|\berror(?:\[\w+\])?:|Traceback|panic:|fatal:|\bfailed\b")


class Call(NamedTuple):
    event: dict
    lookup: Lookup
    session: Session

    @property
    def limit(self) -> int:
        return self.lookup.settings.max_chars

    def answer(self, event: str, title: str, notes: list[Note], query: str = "") -> dict | None:
        """Context made of `notes` under `title`, which are then never injected again in this session."""
        if not notes:
            return None
        for note in notes:
            self.session.injected(note.key, note.topic)
        return context(event, f"{title}\n{self.lookup.render(notes, query)}", self.limit)

    def search(self, query: str) -> list[Note]:
        return self.lookup.pick(self.lookup.search(query), self.session.seen)


def session_start(call: Call) -> dict | None:
    if call.event.get("source") == "compact":
        return context("SessionStart", after_compaction(call), call.limit)
    lookup = call.lookup
    lines = [
        "gitwiki: this repository keeps a wiki and an agent memory as markdown in git; "
        f"{ASK} before answering, and store what you learn with the gitwiki memory tools."
    ]
    if lookup.store is None:
        lines.append("There is no gitwiki index yet: run `gitwiki index`.")
        return context("SessionStart", "\n".join(lines), call.limit)
    corpora = lookup.config.corpora
    head, trees = gitcli.head_trees(lookup.root, [c.path for c in corpora])
    for corpus in corpora:
        state = lookup.store.state(corpus.name)
        if state is None:
            lines.append(f"- corpus {corpus.name} ({corpus.prefix or './'}): not indexed; run `gitwiki index`")
            continue
        fresh = head is None or state.tree == trees.get(corpus.path, "")
        changed = [p for p in gitcli.changed_files(lookup.root, corpus.path) if matches(corpus, p)]
        line = f"- corpus {corpus.name} ({corpus.prefix or './'}): {lookup.store.page_count(corpus.name)} pages, "
        line += f"indexed at {state.commit[:12]}" + ("" if fresh else f", behind HEAD {head[:12]}: run `gitwiki index`")
        if changed:
            line += f"; {len(changed)} pages changed in the worktree are not in the hooks' answers until committed"
        lines.append(line)
    topics = memory.topics(lookup)
    if topics:
        lines.append(memory.render_topics(topics))
    lines.extend(_checkpoint(lookup))
    return context("SessionStart", "\n".join(lines), call.limit)


def after_compaction(call: Call) -> str:
    """What the compaction summary may have lost: the phase, the focus topics, edits and the checkpoint."""
    s = call.session
    lines = [f"gitwiki (after compaction): phase {s.phase}."]
    if s.focus(8):
        lines.append(f"Focus topics this session: {', '.join(s.focus(8))} ({ASK}).")
    if s.edits:
        lines.append(f"Files edited this session: {', '.join(s.edits[-10:])}.")
    lines.extend(_checkpoint(call.lookup))
    return "\n".join(lines)


def _checkpoint(lookup: Lookup) -> list[str]:
    found = memory.checkpoint(lookup)
    if found is None:
        return []
    return [f"Checkpoint ({_age(found.age_s)} ago, {found.path}):", found.text]


def prompt(call: Call) -> dict | None:
    text = call.event.get("prompt")
    if not isinstance(text, str) or not text.strip():
        return None
    return call.answer(
        "UserPromptSubmit", f"gitwiki sections for this prompt ({ASK} for more):", call.search(text), text
    )


def post_build(call: Call) -> dict | None:
    tool_input = call.event.get("tool_input") or {}
    command = tool_input.get("command") if isinstance(tool_input, dict) else None
    if not isinstance(command, str) or not BUILD_COMMAND.search(command):
        return None
    call.session.phase = "Verify"
    response = call.event.get("tool_response")
    output, status = _output(response)
    if not (status not in (None, 0) or (status is None and _FAILED.search(output))):
        return None
    return _error_notes(call, "PostToolUse", output)


def error_context(call: Call) -> dict | None:
    error = call.event.get("error")
    if not isinstance(error, str) or call.event.get("is_interrupt"):
        return None
    return _error_notes(call, "PostToolUseFailure", error)


def _error_notes(call: Call, event: str, output: str) -> dict | None:
    call.session.phase = "Debug"
    lines = error_lines(output)
    if not lines:
        return None
    query = " ".join(lines)
    return call.answer(event, f"gitwiki notes on this error ({lines[0][:80]}):", call.search(query), query)


def _output(response) -> tuple[str, int | None]:
    """A Bash tool response's text and exit status (None when it does not say)."""
    if not isinstance(response, dict):
        return (response if isinstance(response, str) else ""), None
    text = "\n".join(str(response.get(k) or "") for k in ("stdout", "stderr", "output"))
    for key in ("exit_code", "exitCode", "returncode", "code"):
        if isinstance(response.get(key), int):
            return text, response[key]
    return text, None


def pre_compact(call: Call) -> dict | None:
    """Claude Code adds no hook output to the context at PreCompact; the SessionStart that follows (source
    "compact") does. So: let this session's notes be injected again, and leave the re-injection to it."""
    call.session.forget_injected()
    return None


def stop(call: Call) -> dict | None:
    s = call.session
    if call.event.get("stop_hook_active") or not s.edits or s.data["reminded"]:
        return None
    if memory.stored_since(call.lookup, s.started):
        return None
    s.data["reminded"] = True
    shown = ", ".join(s.edits[:5]) + (f" and {len(s.edits) - 5} more" if len(s.edits) > 5 else "")
    return keep_going(
        f"gitwiki: this session edited {shown} and stored nothing in memory. If you learned something worth "
        "keeping (a gotcha, a decision and why, where the work stopped), store it now with the gitwiki memory "
        "tools, with a [source: path:line] where it applies; if not, stop."
    )


def subagent(call: Call) -> dict | None:
    topics = memory.topics(call.lookup)
    if not topics:
        return None
    return context("SubagentStart", f"gitwiki {memory.render_topics(topics, 30)}; {ASK} before answering.", call.limit)


def approve_mcp(event: dict) -> dict | None:
    """Allow a tool of gitwiki's own MCP server; any other tool gets no answer (Claude Code asks as usual)."""
    tool = event.get("tool_name")
    if not isinstance(tool, str):
        return None
    for prefix in MCP_PREFIXES:
        if tool.startswith(prefix) and re.fullmatch(r"[A-Za-z0-9_]+", tool[len(prefix) :]):
            return allow_permission()
    return None


def _age(seconds: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit}"
    return f"{int(seconds)}s"
