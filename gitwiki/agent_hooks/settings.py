"""`gitwiki hooks install|uninstall|status`: our entries in a Claude Code settings file, merged with the rest.

A settings file maps `hooks` → event → a list of matcher groups `{"matcher": …, "hooks": [{"type": "command",
"command": …}]}`. Ours are the command hooks that run `gitwiki-hook TYPE` (or `gitwiki hook TYPE`, the CLI
form); everything else in the file is kept as it was, key order included, and a file that is not valid JSON
of that shape is reported, never rewritten.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import NamedTuple

from gitwiki.agent_hooks import BY_NAME, HOOK_TIMEOUT, HOOK_TYPES, HookType
from gitwiki.errors import UsageError
from gitwiki.fs import atomic_write

DEFAULT_COMMAND = "gitwiki"
PROGRAMS = ("gitwiki", "gitwiki.exe")
HOOK_PROGRAMS = ("gitwiki-hook", "gitwiki-hook.exe")  # console scripts installed beside PROGRAMS


class HookState(NamedTuple):
    name: str
    event: str
    state: str  # installed | missing | changed (ours, with another event or matcher) | duplicated


def project_settings(root: Path) -> Path:
    return root / ".claude" / "settings.json"


def user_settings() -> Path:
    base = os.environ.get("CLAUDE_CONFIG_DIR") or os.path.join(os.path.expanduser("~"), ".claude")
    return Path(base) / "settings.json"


def command_for(hook: HookType, program: str = DEFAULT_COMMAND) -> str:
    """`gitwiki-hook TYPE`, the lean entry point, from beside `program` (`/opt/gw/bin/gitwiki` gives
    `/opt/gw/bin/gitwiki-hook`); a `program` that is not one path to gitwiki (`uvx gitwiki`) keeps the CLI
    form `PROGRAM hook TYPE`."""
    folder, name = os.path.split(program)
    if name in PROGRAMS and not any(c.isspace() for c in program):
        return f"{os.path.join(folder, HOOK_PROGRAMS[PROGRAMS.index(name)])} {hook.name}"
    return f"{program} hook {hook.name}"


def hook_type_of(command: object) -> str | None:
    """The hook type a command runs if it is one of ours, else None: `… gitwiki-hook TYPE`, or the CLI form
    `… gitwiki hook TYPE` that installs before the lean entry point wrote (and still write for a program
    that is not a path to gitwiki)."""
    if not isinstance(command, str):
        return None
    words = [os.path.basename(w.strip("\"'")) for w in command.split()]
    for i in range(len(words) - 1):
        if words[i] in HOOK_PROGRAMS and words[i + 1] in BY_NAME:
            return words[i + 1]
        if words[i] in PROGRAMS and words[i + 1] == "hook" and i + 2 < len(words) and words[i + 2] in BY_NAME:
            return words[i + 2]
    return None


def hooks_table(program: str = DEFAULT_COMMAND) -> dict:
    """Our part of a settings file (also the plugin's hooks/hooks.json)."""
    table: dict[str, list] = {}
    for hook in HOOK_TYPES:
        group: dict = {"matcher": hook.matcher} if hook.matcher else {}
        group["hooks"] = [{"type": "command", "command": command_for(hook, program), "timeout": HOOK_TIMEOUT}]
        table.setdefault(hook.event, []).append(group)
    return table


def read(path: Path) -> dict:
    """The settings in `path` ({} when it does not exist); a malformed file is an error that names it."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as e:
        raise UsageError(f"cannot read {path} ({e.strerror})") from None
    try:
        data = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError as e:
        raise UsageError(f"{path} is not valid JSON ({e}); fix it by hand, gitwiki leaves it as it is") from None
    problem = _shape_problem(data)
    if problem:
        raise UsageError(f"{path}: {problem}; fix it by hand, gitwiki leaves it as it is")
    return data


def _shape_problem(data) -> str | None:
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
    return None


def _without_ours(hooks: dict) -> dict:
    """`hooks` minus every command hook of ours; groups and events left empty by that are dropped."""
    out: dict = {}
    for event, groups in hooks.items():
        kept_groups = []
        for group in groups:
            entries = group.get("hooks", [])
            kept = [e for e in entries if not (isinstance(e, dict) and hook_type_of(e.get("command")))]
            if kept or not entries:
                kept_groups.append({**group, "hooks": kept} if len(kept) != len(entries) else group)
        if kept_groups or not groups:
            out[event] = kept_groups
    return out


def install(path: Path, program: str = DEFAULT_COMMAND) -> list[HookState]:
    data = read(path)
    hooks = _without_ours(data.get("hooks", {}))
    for event, groups in hooks_table(program).items():
        hooks.setdefault(event, []).extend(groups)
    _write(path, {**data, "hooks": hooks})
    return status(path)


def uninstall(path: Path) -> list[HookState]:
    data = read(path)
    if "hooks" in data:
        hooks = _without_ours(data["hooks"])
        if hooks:
            data["hooks"] = hooks
        else:
            del data["hooks"]
        _write(path, data)
    return status(path)


def status(path: Path) -> list[HookState]:
    found: dict[str, list[tuple[str, str | None]]] = {}
    for event, groups in read(path).get("hooks", {}).items():
        for group in groups:
            for entry in group.get("hooks", []):
                name = hook_type_of(entry.get("command")) if isinstance(entry, dict) else None
                if name:
                    found.setdefault(name, []).append((event, group.get("matcher") or None))
    out = []
    for hook in HOOK_TYPES:
        where = found.get(hook.name, [])
        if not where:
            state = "missing"
        elif len(where) > 1:
            state = "duplicated"
        else:
            state = "installed" if where[0] == (hook.event, hook.matcher) else "changed"
        out.append(HookState(hook.name, hook.event, state))
    return out


def _write(path: Path, data: dict) -> None:
    atomic_write(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")
