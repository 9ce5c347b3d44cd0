"""`gitwiki-hook TYPE` and `gitwiki hook TYPE`: one event in, one answer out, and never a failure the agent would see.

Any error is logged to `agent-hooks.log` in the index dir and the hook answers nothing with exit 0;
stdin that is not a JSON object gets no answer either. Outside a git repository the hooks stay silent.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitwiki.agent_hooks import BY_NAME, HOOK_TOOL_FIELDS, HookType
from gitwiki.agent_hooks.protocol import parse_event
from gitwiki.errors import GitwikiError

if TYPE_CHECKING:
    from gitwiki.git.gitcli import Checkout

LOG_NAME = "agent-hooks.log"
LOG_MAX = 256 * 1024  # bytes before the log is rotated to agent-hooks.log.1


def run(name: str, raw: bytes, cwd: str) -> str:
    """The hook's stdout: a JSON answer, or "" for none."""
    event = parse_event(raw)
    if event is None:
        return ""
    hook = BY_NAME[name]
    if not hook.repository:
        try:
            return _dump(_handler(hook)(event))
        except Exception:  # a field of a type the handler did not expect: logged where the checkout keeps it
            _log_near(event, cwd, name)
            return ""
    checkout = _checkout(event, cwd)
    if checkout is None:
        return ""
    if name == "stop" and _quiet_stop(event, checkout):
        return ""
    made_of = None
    if name == "session" and event.get("source") != "compact":
        briefed, made_of = _kept_briefing(event, raw, checkout)
        if briefed is not None:
            return briefed
    # The index code loads only past this point: a hook that needs no repository answers without it.
    from gitwiki.agent_hooks.handlers import Call
    from gitwiki.agent_hooks.lookup import Lookup
    from gitwiki.agent_hooks.state import open_session

    log_dir = checkout.common_dir / "gitwiki"
    lookup = None
    try:
        handler = _handler(hook)
        lookup = Lookup.from_checkout(checkout)
        log_dir = lookup.index_dir
        # No session state where there is no index: the index dir is not made for it (checked without opening the
        # index, which a hook the owner answers never needs).
        session_id = event.get("session_id") if lookup.indexed else None
        with open_session(lookup.index_dir, session_id if isinstance(session_id, str) else "") as session:
            if not session.first_to_answer(name, _same_event(name, event, raw), event.get("transcript_path")):
                return ""  # the plugin's copy and the settings' one
            return _dump(handler(Call(event, lookup, session, made_of)))
    except Exception:
        import traceback  # 1.5 ms with linecache and tokenize, paid only when something went wrong

        _log(log_dir, name, traceback.format_exc())
        return ""
    finally:
        if lookup is not None:
            lookup.close()


def served(name: str, raw: bytes, cwd: str) -> str | None:
    """`run`, for the owner answering a hook that `gitwiki-hook` sent it (agent_hooks/forward.py); None for a type
    this version does not know (the hook then answers by itself)."""
    return run(name, raw, cwd) if name in BY_NAME else None


def _same_event(name: str, event: dict[str, Any], raw: bytes) -> bytes:
    """What makes two deliveries of a hook one event: its bytes, but for a hook Claude Code may also hand to the MCP
    server (an `mcp_tool` hook of the settings beside the plugin's command) the fields both forms carry, as they came
    (the cwd as Claude Code wrote it or resolved)."""
    fields = HOOK_TOOL_FIELDS.get(name)
    if fields is None:
        return raw
    return json.dumps([event.get(f) for f in fields if f != "cwd"], ensure_ascii=False).encode("utf-8", "surrogatepass")


def _checkout(event: dict[str, Any], cwd: str) -> Checkout | None:
    """The git checkout the event's `cwd` (else `cwd`) is in; None outside one, or for no path at all ("\\0")."""
    from gitwiki.git import gitcli

    where = event.get("cwd")
    start = where if isinstance(where, str) else cwd
    try:
        return gitcli.find_checkout(start) or gitcli.discover(start)
    except (GitwikiError, OSError, ValueError):
        return None


def _quiet_stop(event: dict[str, Any], checkout: Checkout) -> bool:
    """Whether the Stop hook has nothing to say, seen from the session's state alone: nothing edited, or reminded
    already (handlers.stop). Every `claude -p` ends with a Stop hook, and most edit nothing: this answers before
    the index, SQLite and the ranking load (~10 ms of the hook's ~60). False when unsure: the handler decides."""
    if event.get("stop_hook_active"):
        return True
    session_id = event.get("session_id")
    try:
        from gitwiki import config as config_mod
        from gitwiki.agent_hooks import cache
        from gitwiki.agent_hooks.state import peek

        config = config_mod.load(checkout.root, read=cache.config_reader(checkout.common_dir / "gitwiki"))
        index = config_mod.index_dir(config, checkout.root, checkout.common_dir)
        data = peek(index, session_id) if isinstance(session_id, str) and session_id else {}
    except Exception:  # a config error and the like: the full path logs it
        return False
    return not data.get("edited") or bool(data.get("reminded"))


def _kept_briefing(event: dict[str, Any], raw: bytes, checkout: Checkout) -> tuple[str | None, list[Any] | None]:
    """SessionStart's answer from the briefing the last session kept (briefing.py), before the index code loads:
    SQLite, the store and the ranking are a third of the hook's CPU; and the briefing's key. No answer when none
    still holds: the full path makes it with that key (and logs what is wrong, if anything is)."""
    made_of = None
    try:
        from gitwiki import config as config_mod
        from gitwiki.agent_hooks import briefing, cache

        config = config_mod.load(checkout.root, read=cache.config_reader(checkout.common_dir / "gitwiki"))
        index = config_mod.index_dir(config, checkout.root, checkout.common_dir)
        made_of = briefing.key(checkout.root, checkout.git_dir, config, index)
        text = briefing.cached(index, made_of) if made_of is not None else None
    except Exception:
        return None, made_of
    if text is None:
        return None, made_of
    from gitwiki.agent_hooks.protocol import context
    from gitwiki.agent_hooks.state import open_session

    session_id = event.get("session_id")
    try:
        with open_session(index, session_id if isinstance(session_id, str) else "") as session:
            if not session.first_to_answer("session", raw, event.get("transcript_path")):  # the plugin's copy
                return "", made_of
    except Exception:
        import traceback

        _log(index, "session", traceback.format_exc())
        return "", made_of
    return _dump(context("SessionStart", text, config.agent_hooks.max_chars)), made_of


def _log_near(event: dict[str, Any], cwd: str, name: str) -> None:
    """Log the exception being handled in the checkout's gitwiki folder; nowhere outside a checkout."""
    import traceback

    checkout = _checkout(event, cwd)
    if checkout is not None:
        _log(checkout.common_dir / "gitwiki", name, traceback.format_exc())


def _handler(hook: HookType) -> Callable[..., dict[str, Any] | None]:
    """The hook's function, its module imported now: a hook loads only its own code."""
    module, function = hook.handler.split(":")
    return getattr(importlib.import_module(f"gitwiki.agent_hooks.{module}"), function)


def _dump(answer: dict[str, Any] | None) -> str:
    return json.dumps(answer, ensure_ascii=False) if answer else ""


def _log(folder: Path, name: str, trace: str) -> None:
    with contextlib.suppress(OSError):
        folder.mkdir(parents=True, exist_ok=True)
        log = folder / LOG_NAME
        if log.is_file() and log.stat().st_size > LOG_MAX:
            log.replace(log.with_name(LOG_NAME + ".1"))
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        with log.open("a", encoding="utf-8") as f:
            f.write(f"{stamp} gitwiki hook {name}: {trace.rstrip()}\n")
