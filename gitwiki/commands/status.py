from __future__ import annotations

import argparse
import json


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
    print(json.dumps(report.to_json(), indent=2) if args.json else report.text())
    return report.exit_code
