"""`gitwiki hooks install|uninstall|status`: gitwiki's entries in a Claude Code settings file, edited in place.

Ours are the matcher groups (`hooks` → event → `{"matcher": …, "hooks": [{"type": "command", "command":
"gitwiki-hook TYPE", …}]}`) and the `permissions.allow` rules that `install` added, exactly as it wrote
them. A command that merely runs gitwiki-hook, or an identical entry the user wrote before us, is the
user's: the record beside the settings file (`gitwiki-hooks.json`) says what was added, and `uninstall`
removes only that. The file is edited as text (jsontext.py): every other byte stays as it was, numbers
included, and uninstall after install gives the original bytes back. A file that is not strict JSON of
the settings' shape is reported and never rewritten.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

from gitwiki.agent_hooks import (
    HOOK_TIMEOUT,
    HOOK_TOOL,
    HOOK_TOOL_FIELDS,
    HOOK_TYPES,
    MCP_PREFIXES,
    HookType,
    permissions,
)
from gitwiki.agent_hooks.jsontext import JsonTextError, Node, insert, parse, remove, render
from gitwiki.errors import UsageError
from gitwiki.fs import atomic_write, read_bounded

DEFAULT_COMMAND = "gitwiki"
PROGRAMS = ("gitwiki", "gitwiki.exe")
HOOK_PROGRAMS = ("gitwiki-hook", "gitwiki-hook.exe")  # console scripts installed beside PROGRAMS
RECORD = "gitwiki-hooks.json"  # beside the settings file: what install added to it
PLUGIN = "gitwiki@"  # `enabledPlugins` keys of the plugin, from any marketplace: gitwiki@<marketplace>


class HookState(NamedTuple):
    name: str
    event: str
    state: str  # installed | duplicated (ours, and an identical entry of the user's) | yours | missing
    server: str | None = None  # ours, installed as an `mcp_tool` hook: the MCP server that answers it


class Status(NamedTuple):
    hooks: list[HookState]
    writes: int  # of the write tools, how many the rules file allows (ours or the user's) and no rule refuses
    rules: Path  # the file that holds them
    plugin: list[str]  # settings files that enable the gitwiki plugin
    others: list[str]  # "EVENT: command" of the user's entries that run a gitwiki hook (not ours)
    # gitwiki tools (bare names) a deny or ask rule of the user's matches, which wins over any allow (a rule's
    # or the approve-mcp hook's): tool → "deny rule in FILE"
    refused: dict[str, str] = {}


def project_settings(root: Path) -> Path:
    return root / ".claude" / "settings.json"


def local_settings(root: Path) -> Path:
    """Where a project install keeps the write rules: the workspace's own file, which Claude Code honours in a
    workspace the user has not trusted (it ignores .claude/settings.json's permission rules there)."""
    return root / ".claude" / "settings.local.json"


def user_settings() -> Path:
    base = os.environ.get("CLAUDE_CONFIG_DIR") or os.path.join(os.path.expanduser("~"), ".claude")
    return Path(base) / "settings.json"


def command_for(hook: HookType, program: str = DEFAULT_COMMAND) -> str:
    """`gitwiki-hook TYPE`, the lean entry point, from beside `program` (`/opt/gw/bin/gitwiki` gives
    `/opt/gw/bin/gitwiki-hook`); a `program` that is not one path to gitwiki (`uvx --from gitwiki-search
    gitwiki`) keeps the CLI form `PROGRAM hook TYPE`."""
    folder, name = os.path.split(program)
    if name in PROGRAMS and not any(c.isspace() for c in program):
        return f"{os.path.join(folder, HOOK_PROGRAMS[PROGRAMS.index(name)])} {hook.name}"
    return f"{program} hook {hook.name}"


def group_for(hook: HookType, program: str = DEFAULT_COMMAND, server: str | None = None) -> dict[str, Any]:
    """The matcher group install writes for `hook`: exactly this, and nothing else, is ours. With `server` (gitwiki's
    MCP server as registered), the hooks it can answer are `mcp_tool` hooks calling it: no process per event."""
    group: dict[str, Any] = {"matcher": hook.matcher} if hook.matcher else {}
    if server is not None and hook.name in HOOK_TOOL_FIELDS:
        given = {field: "${" + field + "}" for field in HOOK_TOOL_FIELDS[hook.name]}
        entry = {"type": "mcp_tool", "server": server, "tool": HOOK_TOOL, "input": {"type": hook.name, **given}}
        group["hooks"] = [{**entry, "timeout": HOOK_TIMEOUT}]
    else:
        group["hooks"] = [{"type": "command", "command": command_for(hook, program), "timeout": HOOK_TIMEOUT}]
    return group


def hooks_table(program: str = DEFAULT_COMMAND, server: str | None = None) -> dict[str, Any]:
    """Our part of a settings file's `hooks` (also the plugin's hooks/hooks.json)."""
    table: dict[str, list[Any]] = {}
    for hook in HOOK_TYPES:
        table.setdefault(hook.event, []).append(group_for(hook, program, server))
    return table


class _Record(NamedTuple):
    """What install added to one settings file: hook groups, allow rules, and the containers it created
    (removed again when uninstall leaves them empty)."""

    hooks: list[dict[str, Any]]  # {"hook": name, "event": event, "group": group}
    rules: list[str]
    created: list[list[str]]  # key paths, e.g. ["hooks", "Stop"]
    made: bool = False  # the file itself: removed again when uninstall leaves it `{}`

    def json(self) -> dict[str, Any]:
        return {
            "hooks": self.hooks,
            "rules": self.rules,
            "created": self.created,
            **({"file": True} if self.made else {}),
        }


def install(
    path: Path,
    rules_path: Path,
    program: str = DEFAULT_COMMAND,
    allow_writes: bool = False,
    server: str | None = None,
) -> Status:
    """Add our hooks to `path` and, with `allow_writes`, the rules that allow gitwiki's writing MCP tools to
    `rules_path` (its reads are allowed by the approve-mcp hook); with `server`, the hooks it can answer as
    `mcp_tool` hooks calling it. Our entries from an earlier install that differ (another command, a matcher since
    changed, writes no longer wanted) are replaced, and ours that are missing are added again: running it twice
    changes nothing."""
    hooks = [{"hook": h.name, "event": h.event, "group": group_for(h, program, server)} for h in HOOK_TYPES]
    rules = permissions.write_rules() if allow_writes else []
    if rules_path == path:
        _converge(path, hooks, rules)
    else:
        _converge(path, hooks, [])
        _converge(rules_path, [], rules)
    return status(path, rules_path, program, server)


def uninstall(path: Path, rules_path: Path, program: str = DEFAULT_COMMAND) -> Status:
    """Remove exactly what install added and recorded; everything else stays, byte for byte."""
    for where in dict.fromkeys([path, rules_path]):
        _converge(where, [], [])
    return status(path, rules_path, program)


def status(path: Path, rules_path: Path, program: str = DEFAULT_COMMAND, server: str | None = None) -> Status:
    """What of ours `path` holds; `server`: the MCP server an install would hand hooks to (an entry of either form
    that install did not write is the user's)."""
    text = _read(path) or "{}"
    record = _load_record(path)
    hooks = []
    for hook in HOOK_TYPES:
        ours = [e for e in record.hooks if e["hook"] == hook.name and _count(text, ["hooks", e["event"]], e["group"])]
        forms = _forms(hook, program, server)
        via = None
        if ours:
            present = sum(_count(text, ["hooks", hook.event], g) for g in _unique(e["group"] for e in ours))
            state = "duplicated" if present > len(ours) else "installed"
            via = next(
                (h.get("server") for e in ours for h in e["group"]["hooks"] if h.get("type") == "mcp_tool"), None
            )
        else:
            state = "yours" if any(_count(text, ["hooks", hook.event], g) for g in forms) else "missing"
        hooks.append(HookState(hook.name, hook.event, state, via))
    rules_text = _read(rules_path) or "{}"
    refused = refusals([path, rules_path, *_beside(path), user_settings(), *MANAGED_SETTINGS])
    writes = sum(
        1
        for tool, rule in zip(permissions.WRITE_TOOLS, permissions.write_rules(), strict=True)
        if _count(rules_text, ["permissions", "allow"], rule) and tool not in refused
    )
    return Status(hooks, writes, rules_path, plugin_enabled(path), _others(text, program, server), refused)


def _forms(hook: HookType, program: str, server: str | None) -> list[dict[str, Any]]:
    """The groups install writes for `hook`: as a command, and as an `mcp_tool` hook of `server` where it can be."""
    return _unique([group_for(hook, program), group_for(hook, program, server)])


def _unique(groups: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for group in groups:
        if group not in found:
            found.append(group)
    return found


# Claude Code's managed (enterprise) settings, whose rules apply in every project (Linux, then macOS).
MANAGED_SETTINGS = (
    Path("/etc/claude-code/managed-settings.json"),
    Path("/Library/Application Support/ClaudeCode/managed-settings.json"),
)


def _beside(path: Path) -> list[Path]:
    """A project's other settings file: settings.json and settings.local.json are read together."""
    if path.parent.name != ".claude" or path == user_settings():
        return []
    return [path.with_name("settings.json"), path.with_name("settings.local.json")]


def refusals(files: list[Path]) -> dict[str, str]:
    """gitwiki's MCP tools (bare names, as registered under `gitwiki`) that a `permissions.deny` or `.ask` rule in
    `files` matches: Claude Code applies deny, then ask, before any allow, from every settings file it reads. A
    file that cannot be read or parsed counts as having no rules (status reports the two it edits)."""
    found: dict[str, str] = {}
    for kind in ("deny", "ask"):
        for file in dict.fromkeys(files):
            try:
                data = json.loads(read_bounded(file).decode("utf-8"))
            except (OSError, ValueError, UsageError):
                continue
            rules = data.get("permissions", {}).get(kind) if isinstance(data, dict) else None
            if not isinstance(rules, list):
                continue
            for tool in (*permissions.READ_TOOLS, *permissions.WRITE_TOOLS):
                name = MCP_PREFIXES[0] + tool
                if tool not in found and any(isinstance(r, str) and permissions.rule_matches(r, name) for r in rules):
                    found[tool] = f"{kind} rule in {file}"
    return found


def _others(text: str, program: str, server: str | None = None) -> list[str]:
    """The commands in `text` that run a gitwiki hook but are not a group install writes: the user's own, or
    an install's from before the record (shown, so that a hook running twice can be found and removed)."""
    ours = [_tree(render(g)).value for h in HOOK_TYPES for g in _forms(h, program, server)]
    found = []
    hooks = _find(text, ["hooks"])
    table = hooks.value if hooks is not None and isinstance(hooks.value, dict) else {}
    for event, groups in table.items():
        for group in groups:
            if group in ours:
                continue
            for entry in group.get("hooks", []):
                command = entry.get("command") if isinstance(entry, dict) else None
                if isinstance(command, str) and ("gitwiki-hook" in command or "gitwiki hook" in command):
                    found.append(f"{event}: {command}")
    return found


def _converge(path: Path, hooks: list[dict[str, Any]], rules: list[str]) -> None:
    """Make our part of `path` exactly `hooks` (entries {"hook", "event", "group"}) and `rules`: remove
    what the record holds beyond them, append what is missing, record what was added."""
    if not (hooks or rules or path.exists() or _record_path(path).exists()):
        return  # nothing to add, nothing added: not even the folder is made
    with _locked(path.parent):
        _converge_locked(path, hooks, rules)


@contextlib.contextmanager
def _locked(folder: Path) -> Iterator[None]:
    """One install or uninstall at a time per settings folder: the file and its record are read, edited and
    written together (a lock on the folder itself, so no lock file is left beside the settings)."""
    folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _converge_locked(path: Path, hooks: list[dict[str, Any]], rules: list[str]) -> None:
    original = _read(path)
    # A file saved with CRLF line ends (a Windows editor) is edited as LF and written back with CRLF, so the
    # bytes we did not add stay as they were and what we add follows them.
    crlf = "\r\n" in original and original.count("\r\n") == original.count("\n")
    text = original.replace("\r\n", "\n") if crlf else original
    text = text if text.strip() else "{}\n"
    record = _load_record(path)
    if hooks or rules:
        record = record._replace(made=record.made or not os.path.lexists(path))
    for entry in [e for e in record.hooks if e not in hooks]:
        text = _remove_last(text, ["hooks", entry["event"]], entry["group"])
        record.hooks.remove(entry)
    for rule in [r for r in record.rules if r not in rules]:
        text = _remove_last(text, ["permissions", "allow"], rule)
        record.rules.remove(rule)
    for entry in hooks:  # one the user has already (not recorded) is theirs and not added twice
        if not _count(text, ["hooks", entry["event"]], entry["group"]):
            text = _append(text, ["hooks", entry["event"]], entry["group"], record)
            if entry not in record.hooks:  # recorded but missing: removed by hand, added again
                record.hooks.append(entry)
    for rule in rules:
        if not _count(text, ["permissions", "allow"], rule):
            text = _append(text, ["permissions", "allow"], rule, record)
            if rule not in record.rules:
                record.rules.append(rule)
    text = _drop_empty(text, record)
    unmade = not hooks and not rules and record.made and text.strip() == "{}"  # as it was: no file
    if not hooks and not rules:
        record.created.clear()
        record = record._replace(made=False)
    _save_record(path, record)  # first: an entry written but not recorded would become the user's
    if crlf:
        text = text.replace("\n", "\r\n")
    if unmade:
        path.unlink(missing_ok=True)
    elif text != original and (original or hooks or rules):
        atomic_write(path, text)


def plugin_enabled(path: Path) -> list[str]:
    """The settings files beside `path` (and the user's) whose `enabledPlugins` turn the gitwiki plugin on:
    its hooks then run beside these (the second to answer an event stays silent, docs/agent-hooks.md)."""
    found = []
    for candidate in dict.fromkeys([path, path.with_name("settings.local.json"), user_settings()]):
        try:
            data = json.loads(read_bounded(candidate).decode("utf-8"))
        except (OSError, ValueError, UsageError):
            continue
        enabled = data.get("enabledPlugins") if isinstance(data, dict) else None
        if isinstance(enabled, dict) and any(k.startswith(PLUGIN) and v is True for k, v in enabled.items()):
            found.append(str(candidate))
    return found


def _read(path: Path) -> str:
    """The settings text ("" when the file does not exist), checked: strict JSON of the settings' shape."""
    try:
        # bounded, a regular file (a checkout brings its settings): decoded as bytes, the line ends as they are
        text = read_bounded(path, what="settings file", fix=_HANDS_OFF).decode("utf-8")
    except FileNotFoundError:
        return ""
    except UnicodeDecodeError as e:
        raise UsageError(f"{path} is not UTF-8 ({e.reason} at byte {e.start}); {_HANDS_OFF}") from None
    if text.strip():
        try:
            problem = _shape_problem(_tree(text).value)
        except JsonTextError as e:
            raise UsageError(f"{path} is not valid JSON ({e}); {_HANDS_OFF}") from None
        if problem:
            raise UsageError(f"{path}: {problem}; {_HANDS_OFF}")
    return text


_HANDS_OFF = "fix it by hand, gitwiki leaves it as it is"


def _shape_problem(data: object) -> str | None:
    if not isinstance(data, dict):
        return "the settings must be a JSON object"
    hooks = data.get("hooks", {})
    if not isinstance(hooks, dict):
        return '"hooks" must be an object of event names'
    for event, groups in hooks.items():
        if not isinstance(groups, list) or not all(isinstance(g, dict) for g in groups):
            return f'"hooks.{event}" must be a list of matcher groups'
        if not all(isinstance(g.get("hooks", []), list) for g in groups):
            return f'"hooks.{event}[].hooks" must be a list'
    allowed = data.get("permissions", {})
    if not isinstance(allowed, dict) or not isinstance(allowed.get("allow", []), list):
        return '"permissions" must be an object whose "allow" is a list of rules'
    return None


@functools.lru_cache(maxsize=16)
def _tree(text: str) -> Node:
    """`parse(text)`, kept: an install looks up a dozen places in each version of the text (never changed)."""
    return parse(text)


def _find(text: str, keys: list[str]) -> Node | None:
    node: Node | None = _tree(text)
    for key in keys:
        node = node.member(key) if node is not None and isinstance(node.value, dict) else None
    return node


def _count(text: str, keys: list[str], value: object) -> int:
    """How many items of the list at `keys` are exactly `value`."""
    node = _find(text, keys)
    wanted = _tree(render(value)).value
    return sum(1 for child in node.children if child.value == wanted) if node is not None else 0


def _remove_last(text: str, keys: list[str], value: object) -> str:
    """`text` without the last item of the list at `keys` that is exactly `value` (unchanged if none)."""
    node = _find(text, keys)
    wanted = _tree(render(value)).value
    if node is None or not isinstance(node.value, list):
        return text
    for i in range(len(node.children) - 1, -1, -1):
        if node.children[i].value == wanted:
            return remove(text, node, i)
    return text


def _append(text: str, keys: list[str], value: object, record: _Record) -> str:
    """`text` with `value` appended to the list at `keys`, creating (and recording) the objects and the list
    on the way."""
    for depth in range(len(keys)):
        node = _find(text, keys[: depth + 1])
        if node is None:
            parent = _find(text, keys[:depth])
            assert parent is not None  # the loop made it, or it is the document
            empty: object = [] if depth == len(keys) - 1 else {}
            text = insert(text, parent, empty, keys[depth])
            record.created.append(keys[: depth + 1])
    target = _find(text, keys)
    assert target is not None
    return insert(text, target, value)


def _drop_empty(text: str, record: _Record) -> str:
    """Remove the containers install created that hold nothing now, deepest first."""
    for keys in sorted(record.created, key=len, reverse=True):
        node = _find(text, keys)
        parent = _find(text, keys[:-1])
        if node is None or parent is None:
            record.created.remove(keys)
        elif not node.children:
            text = remove(text, parent, max(i for i, k in enumerate(parent.keys) if k == keys[-1]))
            record.created.remove(keys)
    return text


def _record_path(path: Path) -> Path:
    return path.with_name(RECORD)


def _load_record(path: Path) -> _Record:
    where = _record_path(path)
    try:
        data = json.loads(where.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return _Record([], [], [])
    except (OSError, ValueError) as e:
        raise UsageError(f"cannot read {where} ({e}); fix or delete it (it lists what gitwiki added)") from None
    entry = data.get(path.name, {}) if isinstance(data, dict) else None
    if not isinstance(entry, dict) or not _is_record(entry):
        raise UsageError(f"{where} is not a record gitwiki wrote; fix or delete it (it lists what gitwiki added)")
    return _Record(
        list(entry.get("hooks", [])),
        list(entry.get("rules", [])),
        list(entry.get("created", [])),
        entry.get("file") is True,
    )


def _is_record(entry: dict[str, Any]) -> bool:
    hooks, rules, created = entry.get("hooks", []), entry.get("rules", []), entry.get("created", [])
    return (
        isinstance(hooks, list)
        and all(isinstance(e, dict) and {"hook", "event", "group"} <= e.keys() for e in hooks)
        and isinstance(rules, list)
        and all(isinstance(r, str) for r in rules)
        and isinstance(created, list)
        and all(isinstance(k, list) and k and all(isinstance(s, str) for s in k) for k in created)
    )


def _save_record(path: Path, record: _Record) -> None:
    where = _record_path(path)
    try:
        data = json.loads(where.read_text(encoding="utf-8"))
    except FileNotFoundError:
        data = {}
    empty = not (record.hooks or record.rules or record.created or record.made)
    if empty:
        data.pop(path.name, None)
    else:
        data[path.name] = record.json()
    if data:
        where.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(where, json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    elif where.exists():
        where.unlink()
