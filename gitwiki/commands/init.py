from __future__ import annotations

import argparse

from gitwiki.commands.options import add_init_arguments


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "init", help="write .gitwiki.toml with one corpus", description="Write .gitwiki.toml with one [[corpus]]."
    )
    add_init_arguments(p)
