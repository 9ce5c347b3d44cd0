from __future__ import annotations

import argparse


def register(sub) -> None:
    p = sub.add_parser(
        "hooks",
        help="install, remove or show gitwiki's Claude Code hooks",
        description="Merge gitwiki's Claude Code hooks into .claude/settings.json (or the user settings with "
        "--user), keeping every other hook; `uninstall` removes exactly gitwiki's; `status` shows them. "
        "A settings file that is not valid JSON is reported and left as it is.",
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
    p.set_defaults(func=hooks)


def hooks(args: argparse.Namespace) -> int:
    from gitwiki import gitcli
    from gitwiki.agent_hooks import settings

    path = settings.user_settings() if args.user else settings.project_settings(gitcli.discover(args.chdir).root)
    if args.action == "install":
        states = settings.install(path, args.program)
    else:
        states = getattr(settings, args.action)(path)
    print(f"settings: {path}")
    for s in states:
        print(f"  {s.name} ({s.event}): {s.state}")
    if args.action == "install" and not _has_index(args.chdir):
        print("next: gitwiki index (the hooks read the index and never build it)")
    return 0


def _has_index(start: str) -> bool:
    from gitwiki import config, gitcli
    from gitwiki.store import DB_NAME

    checkout = gitcli.discover(start)
    return (config.index_dir(config.load(checkout.root), checkout.root, checkout.common_dir) / DB_NAME).is_file()
