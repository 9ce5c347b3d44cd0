from __future__ import annotations

import argparse


def register(sub) -> None:
    p = sub.add_parser(
        "hooks",
        help="install, remove or show gitwiki's Claude Code hooks and tool permissions",
        description="Add gitwiki's Claude Code hooks, and permission rules that let Claude Code run gitwiki's "
        "read-only MCP tools without asking, to .claude/settings.json (or the user settings with --user); "
        "every other byte of the file stays as it was. `uninstall` removes exactly what `install` added "
        "(recorded in gitwiki-hooks.json beside the settings); `status` shows it. A settings file that is "
        "not valid JSON is reported and left as it is.",
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
        help="install: also let Claude Code run gitwiki's writing tools (add_markdown, delete_markdown, index, "
        "memory_store, memory_batch, memory_edit, memory_topics) without asking",
    )
    p.set_defaults(func=hooks)


def hooks(args: argparse.Namespace) -> int:
    from gitwiki import gitcli
    from gitwiki.agent_hooks import settings

    path = settings.user_settings() if args.user else settings.project_settings(gitcli.discover(args.chdir).root)
    if args.action == "install":
        found = settings.install(path, args.program, args.allow_writes)
    else:
        found = getattr(settings, args.action)(path, args.program)
    print(f"settings: {path}")
    for s in found.hooks:
        print(f"  {s.name} ({s.event}): {s.state}")
    for r in found.rules:
        allowed = f"{r.present} of {r.total} allowed" if 0 < r.present < r.total else "asked"
        print(f"  MCP {r.kind} ({r.total} tools): {'allowed' if r.present == r.total else allowed}")
    for where in found.plugin:
        print(
            f"note: the gitwiki plugin is enabled in {where}: its hooks run beside these, and the second to "
            "answer an event stays silent"
        )
    if args.action == "install" and not _has_index(args.chdir):
        print("next: gitwiki index (the hooks read the index and never build it)")
    return 0


def _has_index(start: str) -> bool:
    from gitwiki import config, gitcli
    from gitwiki.store import DB_NAME

    checkout = gitcli.discover(start)
    return (config.index_dir(config.load(checkout.root), checkout.root, checkout.common_dir) / DB_NAME).is_file()
