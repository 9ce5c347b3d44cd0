from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "hooks",
        help="install, remove or show gitwiki's Claude Code hooks and tool permissions",
        description="Add gitwiki's Claude Code hooks to .claude/settings.json (or the user settings with --user): "
        "they bring wiki and memory context, and let Claude Code run gitwiki's read-only MCP tools and its "
        "memory writes that only add (store, batch, checkpoint) without asking, in every mode. Every other byte "
        "of the file stays as it was. `uninstall` removes exactly what `install` added (recorded in "
        "gitwiki-hooks.json beside the settings); `status` shows it. A settings file that is not valid JSON is "
        "reported and left as it is.",
    )
    p.add_argument("action", choices=("install", "uninstall", "status"))
    p.add_argument("--user", action="store_true", help="the user settings (~/.claude/settings.json), not the project's")
    p.add_argument(
        "--command",
        dest="program",
        default="gitwiki",
        metavar="PROGRAM",
        help="how Claude Code runs gitwiki, e.g. an absolute path (default: gitwiki on PATH)",
    )
    p.add_argument(
        "--allow-writes",
        action="store_true",
        help="install: also let Claude Code run gitwiki's other writing tools (add_markdown, delete_markdown, "
        "index, memory_edit, memory_topics's writing actions) without asking: permission rules in "
        ".claude/settings.local.json (with --user, the user settings)",
    )
    p.add_argument(
        "--via",
        choices=("command", "mcp"),
        default="command",
        help="install: how the prompt, tool and stop hooks run. command (default): a gitwiki-hook process per event; "
        "mcp: calls to gitwiki's MCP server already running in the session, no process (every Claude Code that uses "
        "these settings must have the server registered; see docs/agent-hooks.md)",
    )
    p.set_defaults(func=hooks)


def hooks(args: argparse.Namespace) -> int:
    from gitwiki.agent_hooks import permissions, registration, settings
    from gitwiki.git import gitcli

    root = None if args.user else gitcli.discover(args.chdir).root
    if root is None:
        path = rules = settings.user_settings()
    else:
        path, rules = settings.project_settings(root), settings.local_settings(root)
    registered = None  # read for install and status only: ~/.claude.json can be large
    if root is not None and args.action != "uninstall":
        registered = registration.registered_server(root, [path, rules, settings.user_settings()])
    server = (registered or "gitwiki") if args.via == "mcp" else None
    if args.action == "install":
        found = settings.install(path, rules, args.program, args.allow_writes, server)
    elif args.action == "status":
        found = settings.status(path, rules, args.program, registered or "gitwiki")
    else:
        found = settings.uninstall(path, rules, args.program)
    print(f"settings: {path}")
    for s in found.hooks:
        print(f"  {s.name} ({s.event}): {s.state}" + (f", answered by the MCP server {s.server}" if s.server else ""))
    total = len(permissions.WRITE_TOOLS)
    # A deny or ask rule of the user's wins over our allow rules and over the approve-mcp hook's allow.
    allowed = f"{found.writes} of {total} allowed"
    if not any(tool in found.refused for tool in permissions.WRITE_TOOLS):
        allowed = {0: "asked", total: "allowed"}.get(found.writes, allowed)
    approve = next(s.state for s in found.hooks if s.name == "approve-mcp")
    reads = "asked" if approve == "missing" else "allowed by the approve-mcp hook"
    refused_reads = [tool for tool in permissions.READ_TOOLS if tool in found.refused]
    if refused_reads and approve != "missing":
        reads += f" except {len(refused_reads)} your rules decide"
    print(f"  MCP reads: {reads}")
    adds = "asked" if approve == "missing" else "allowed by the approve-mcp hook"
    refused_adds = [tool for tool in (*permissions.ADD_TOOLS, permissions.TOPICS) if tool in found.refused]
    if refused_adds and approve != "missing":
        adds += f" except {len(refused_adds)} your rules decide"
    print(f"  MCP memory adds (memory_store, memory_batch, topics checkpoint): {adds}")
    print(f"  MCP writes ({total} tools): {allowed} (rules in {found.rules})")
    for tool, rule in found.refused.items():
        print(f"    {tool}: {'denied' if rule.startswith('deny') else 'asked'} by your {rule}")
    for other in found.others:
        print(f"  yours, also running a gitwiki hook: {other}")
    # an mcp_tool hook whose server Claude Code does not run adds nothing at each event: say so
    for name in sorted({s.server for s in found.hooks if s.server and s.server != registered and root is not None}):
        print(
            f"note: the hooks call the MCP server {name}, which Claude Code does not have registered for this "
            "project: register it (claude mcp add), or gitwiki hooks install --via command"
        )
    for where in found.plugin:
        print(
            f"note: the gitwiki plugin is enabled in {where}: its hooks run beside these, and the second to "
            "answer an event stays silent"
        )
    if args.action == "install" and args.via == "command" and registered is not None:
        print(
            f"tip: Claude Code runs gitwiki's MCP server ({registered}) here: with --via mcp the hooks are calls "
            "to it, no process per event, where everyone using these settings has it registered"
        )
    if args.action == "install" and not _has_index(args.chdir):
        print("next: gitwiki index (the hooks read the index and never build it)")
    return 0


def _has_index(start: str) -> bool:
    from gitwiki import config
    from gitwiki.git import gitcli
    from gitwiki.index.store import DB_NAME

    checkout = gitcli.discover(start)
    return (config.index_dir(config.load(checkout.root), checkout.root, checkout.common_dir) / DB_NAME).is_file()
