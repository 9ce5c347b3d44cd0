from __future__ import annotations

import argparse
import json
import os
import shutil

# The variables that choose the model and the index; the pinned snippet carries those set here.
ENV = ("GITWIKI_MODEL", "GITWIKI_MODEL_PATH", "GITWIKI_INDEX_DIR", "HF_HUB_OFFLINE")


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
        "path of the gitwiki executable, so it works from any client working directory, and carries the "
        "GITWIKI_MODEL, GITWIKI_MODEL_PATH, GITWIKI_INDEX_DIR and HF_HUB_OFFLINE set in this shell as `env`.",
    )
    config.add_argument("--name", default="gitwiki", help="server name in the client (default gitwiki)")
    config.add_argument(
        "--project",
        action="store_true",
        help="portable form for a committed .mcp.json: `gitwiki serve`, run from the project root",
    )
    config.set_defaults(func=mcp_config)


def mcp_config(args: argparse.Namespace) -> int:
    from gitwiki.git.gitrepo import GitRepo

    entry: dict[str, object]
    if args.project:
        entry = {"command": "gitwiki", "args": ["serve"]}
    else:
        root = GitRepo.discover(args.chdir).root
        entry = {"command": shutil.which("gitwiki") or "gitwiki", "args": ["-C", str(root), "serve"]}
        # Clients start servers with their own environment, not this shell's: without these the server
        # would silently search lexically (or with another model than `gitwiki index` used).
        env = {name: os.environ[name] for name in ENV if os.environ.get(name)}
        if "GITWIKI_MODEL_PATH" in env:
            env["GITWIKI_MODEL_PATH"] = os.path.abspath(env["GITWIKI_MODEL_PATH"])
        if env:
            entry["env"] = env
    print(json.dumps({"mcpServers": {args.name: entry}}, indent=2))
    return 0
