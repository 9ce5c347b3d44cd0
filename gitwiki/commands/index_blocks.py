from __future__ import annotations

import argparse
import sys


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "index-blocks",
        help="regenerate the page listings between GITWIKI:INDEX markers in index.md files",
        description="Rewrite the text between <!-- GITWIKI:INDEX-START --> and <!-- GITWIKI:INDEX-END --> in "
        "the index files above the given pages (default: every index file of every corpus). Text outside "
        "the markers is never touched. Exits 1 when a file changed (or would change, with --check): pre-commit's "
        "fixer convention, so a commit stops for the rewritten index files to be added; --scaffold, a set-up step "
        "pre-commit never runs, exits 0 when it did what it was asked.",
    )
    p.add_argument("files", nargs="*", metavar="FILE", help="changed pages; their folders' index files are refreshed")
    p.add_argument("--check", action="store_true", help="report stale blocks without writing")
    p.add_argument(
        "--scaffold", action="store_true", help="create a missing index file (title and markers) at each corpus root"
    )
    p.set_defaults(func=index_blocks)


def index_blocks(args: argparse.Namespace) -> int:
    # Imported when the command runs: cli.py imports every command module to build its parser.
    from gitwiki import config as config_mod
    from gitwiki.commands.options import repo_relative
    from gitwiki.git import gitcli
    from gitwiki.pages.index_blocks import refresh
    from gitwiki.pages.pagefacts import FactsCache

    root, common_dir, _ = gitcli.discover(args.chdir)
    config = config_mod.load(root)
    files = repo_relative(root, args.chdir, args.files) if args.files else None
    facts = FactsCache.load(config_mod.index_dir(config, root, common_dir))
    result = refresh(root, config, files, facts=facts, check=args.check, scaffold=args.scaffold)
    facts.save()
    for error in result.errors:  # every malformed file is reported, and left unchanged
        print(f"gitwiki: error: {error}", file=sys.stderr)
    verb = "would update" if args.check else "updated"
    for path in result.changed:
        print(f"{verb} {path}")
    if args.scaffold:
        from gitwiki.markdown.index_block import END_MARKER, START_MARKER
        from gitwiki.pages.index_blocks import unmarked_fronts

        for path in unmarked_fronts(root, config):  # there already, so not made: the listing needs its markers
            print(f"{path} has no index block: put {START_MARKER} and {END_MARKER} where its page list should go")
    if args.scaffold and not args.check:
        return 1 if result.errors else 0
    return 1 if result.changed or result.errors else 0
