"""One function per hook type: an event in, Claude Code's answer out (ambient.py and failures.py hold the
ones that parse source files and error output)."""

from __future__ import annotations

from typing import Any, NamedTuple

from gitwiki.agent_hooks import briefing, status
from gitwiki.agent_hooks.lookup import Lookup, Note
from gitwiki.agent_hooks.protocol import context, keep_going
from gitwiki.agent_hooks.state import Session
from gitwiki.config import matches
from gitwiki.git import gitcli

ASK = "search them with the gitwiki MCP tools or `gitwiki ground QUERY`"


class Call(NamedTuple):
    event: dict[str, Any]
    lookup: Lookup
    session: Session
    # SessionStart: the briefing's key (briefing.key), made before the index code loaded to look for a kept one;
    # None: made here
    made_of: list[Any] | None = None

    @property
    def limit(self) -> int:
        return self.lookup.settings.max_chars

    def answer(self, event: str, title: str, notes: list[Note], query: str = "") -> dict[str, Any] | None:
        """Context made of `notes` under `title`, which are then never injected again in this session."""
        if not notes:
            return None
        for note in notes:
            self.session.injected(note.key, note.topic)
        return context(event, f"{title}\n{self.lookup.render(notes, query)}", self.limit)

    def search(self, query: str) -> list[Note]:
        """The best sections for `query` not yet injected: the checkout's owner's when one is up, else our own."""
        from gitwiki.agent_hooks import owner  # the socket client: only the hooks that search load it

        where = self.event.get("cwd")
        found = owner.search_all(self.lookup, where if isinstance(where, str) else ".", query)
        return self.lookup.pick(self.lookup.search_all(query) if found is None else found, self.session.seen)


def session_start(call: Call) -> dict[str, Any] | None:
    from gitwiki.agent_hooks import memory  # and, when a memory page changed, the library: ~7 ms of imports

    if call.event.get("source") == "compact":
        return context("SessionStart", after_compaction(call), call.limit)
    lookup = call.lookup
    # Stamped before anything is read: a change made meanwhile leaves a key that no longer matches.
    made_of = call.made_of or briefing.key(lookup.root, lookup.git_dir, lookup.config, lookup.index_dir)
    lines = [
        "gitwiki: this repository keeps a wiki and an agent memory as markdown in git; "
        f"{ASK} before answering, and store what you learn with the gitwiki memory tools."
    ]
    if lookup.store is None:
        lines.append("There is no gitwiki index yet: run `gitwiki index`.")
        return context("SessionStart", "\n".join(lines), call.limit)
    corpora = lookup.config.corpora
    folders = [c.path for c in corpora]
    known = made_of[3] if made_of is not None else None  # the key's walk of the folders, not made twice
    head, changed_all = status.worktree_status(lookup.root, lookup.git_dir, lookup.index_dir, folders, known)
    changed_all = _unsearched(lookup, changed_all)
    states = {c.name: lookup.store.state(c.name) for c in corpora}
    moved = head is not None and any(s is not None and s.commit != head for s in states.values())
    trees = gitcli.head_trees(lookup.root, [c.path for c in corpora])[1] if moved else {}
    for corpus in corpora:
        state = states[corpus.name]
        if state is None:
            lines.append(f"- corpus {corpus.name} ({corpus.prefix or './'}): not indexed; run `gitwiki index`")
            continue
        changed = [p for p in changed_all if matches(corpus, p)]
        line = f"- corpus {corpus.name} ({corpus.prefix or './'}): {lookup.store.page_count(corpus.name)} pages, "
        line += f"indexed at {state.commit[:12]}"
        if head is not None and state.commit != head and state.tree != trees.get(corpus.path, ""):
            line += f", behind HEAD {head[:12]}: run `gitwiki index`"
        if changed:
            line += f"; {len(changed)} pages changed in the worktree are not in the hooks' answers until committed"
        lines.append(line)
    known = memory.overview(lookup)
    if known.topics:
        lines.append(memory.render_topics(known.topics))
        lines.append(known.meta)
    if made_of is not None:  # the next session answers with it while nothing it is made of changes (briefing.py)
        briefing.keep(lookup.index_dir, made_of, "\n".join(lines), known.checkpoint, known.until)
    lines.extend(briefing.checkpoint_lines(known.checkpoint))
    return context("SessionStart", "\n".join(lines), call.limit)


def _unsearched(lookup: Lookup, changed: list[str]) -> list[str]:
    """The changed pages whose worktree version the hooks' answers do not show: all but the memory pages
    whose new version the index already holds, which Lookup.paths overlays (a page stored this session)."""
    on_disk = lookup.memory_blobs() if any(map(lookup.is_memory, changed)) else {}
    return [p for p in changed if p not in on_disk or lookup.paths.get(on_disk[p]) != p]


def after_compaction(call: Call) -> str:
    """What the compaction summary may have lost: the phase, the focus topics, edits and the checkpoint."""
    s = call.session
    lines = [f"gitwiki (after compaction): phase {s.phase}."]
    if s.focus(8):
        lines.append(f"Focus topics this session: {', '.join(s.focus(8))} ({ASK}).")
    if s.edits:
        lines.append(f"Files edited this session: {', '.join(s.edits[-10:])}.")
    from gitwiki.agent_hooks import memory

    lines.extend(briefing.checkpoint_lines(memory.overview(call.lookup).checkpoint))
    return "\n".join(lines)


def prompt(call: Call) -> dict[str, Any] | None:
    text = call.event.get("prompt")
    if not isinstance(text, str) or not text.strip():
        return None
    return call.answer(
        "UserPromptSubmit", f"gitwiki sections for this prompt ({ASK} for more):", call.search(text), text
    )


def pre_compact(call: Call) -> dict[str, Any] | None:
    """Claude Code adds no hook output to the context at PreCompact; the SessionStart that follows (source
    "compact") does. So: let this session's notes be injected again, and leave the re-injection to it."""
    call.session.forget_injected()
    return None


def stop(call: Call) -> dict[str, Any] | None:
    s = call.session
    if call.event.get("stop_hook_active") or not s.edits or s.data["reminded"]:
        return None
    from gitwiki.agent_hooks import memory

    if memory.stored_since(call.lookup, s.started):
        return None
    s.data["reminded"] = True
    shown = ", ".join(s.edits[:5]) + (f" and {len(s.edits) - 5} more" if len(s.edits) > 5 else "")
    return keep_going(
        f"gitwiki: this session edited {shown} and stored nothing in memory. If you learned something worth "
        "keeping (a gotcha, a decision and why, where the work stopped), store it now with the gitwiki memory "
        "tools, with a [source: path:line] where it applies; if not, stop."
    )


def subagent(call: Call) -> dict[str, Any] | None:
    from gitwiki.agent_hooks import memory

    topics = memory.overview(call.lookup).topics
    if not topics:
        return None
    return context("SubagentStart", f"gitwiki {memory.render_topics(topics, 30)}; {ASK} before answering.", call.limit)
