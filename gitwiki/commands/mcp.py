from __future__ import annotations

import argparse
import json
import shutil


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "mcp", help="MCP client set-up", description="Helpers for connecting MCP clients to `gitwiki serve`."
    )
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    config = actions.add_parser(
        "config",
        help="print the JSON snippet that registers gitwiki with an MCP client",
        description="Print an `mcpServers` entry for Claude Desktop, Cursor, Claude Code's .mcp.json and "
        "other clients that launch stdio servers. By default it pins this repo with -C and the absolute "
        "path of the gitwiki executable, so it works from any client working directory.",
    )
    config.add_argument("--name", default="gitwiki", help="server name in the client (default gitwiki)")
    config.add_argument(
        "--project",
        action="store_true",
        help="portable form for a committed .mcp.json: `gitwiki serve`, run from the project root",
    )
    config.set_defaults(func=mcp_config)


def mcp_config(args: argparse.Namespace) -> int:
    from gitwiki.gitrepo import GitRepo

    if args.project:
        entry = {"command": "gitwiki", "args": ["serve"]}
    else:
        root = GitRepo.discover(args.chdir).root
        entry = {"command": shutil.which("gitwiki") or "gitwiki", "args": ["-C", str(root), "serve"]}
    print(json.dumps({"mcpServers": {args.name: entry}}, indent=2))
    return 0
