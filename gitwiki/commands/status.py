from __future__ import annotations

import argparse
import json
import time
from typing import Any


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "status",
        help="corpora, indexed commit vs HEAD, dirty pages, model, index size",
        description="Show each corpus: pages and chunks indexed, the indexed commit against HEAD, "
        "uncommitted pages, the embedding model, and where the index lives.",
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument(
        "--check",
        action="store_true",
        help="also check the index and each synced repository's for damage and rows that do not read back "
        "(reads all of them); exit 4 if damaged",
    )
    p.set_defaults(func=status)


def status(args: argparse.Namespace) -> int:
    from gitwiki.operations.status import status as gather
    from gitwiki.wiki import Wiki

    report = gather(Wiki.open(args.chdir), check=args.check)
    owner = _owner(args.chdir)
    if args.json:
        print(json.dumps({**report.to_json(), "owner": owner}, indent=2))
    else:
        print(report.text())
        print(_owner_line(owner))
    return report.exit_code


def _owner(chdir: str) -> dict[str, Any] | None:
    """The checkout's owner as it reports itself (`gitwiki serve`, docs/mcp.md); None when none answers."""
    from gitwiki.serve import owner

    where = owner.place(chdir)
    return None if where is None else owner.ask(where, "status")


def _owner_line(owner: dict[str, Any] | None) -> str:
    if owner is None:
        return "owner: none (the next `gitwiki serve` starts one)"
    since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(float(owner.get("since", 0))))
    rss = owner.get("rss_kib")
    memory = f", RSS {int(rss) / 1024:.0f} MiB" if isinstance(rss, int) else ""
    return (
        f"owner: pid {owner.get('pid')} since {since}, {owner.get('sessions')} session(s) now, "
        f"{owner.get('served')} served{memory}"
    )
