from __future__ import annotations

import argparse
import sys


def register(sub) -> None:
    p = sub.add_parser(
        "index-blocks",
        help="regenerate the page listings between GITWIKI:INDEX markers in index.md files",
        description="Rewrite the text between <!-- GITWIKI:INDEX-START --> and <!-- GITWIKI:INDEX-END --> in "
        "the index files above the given pages (default: every index file of every corpus). Text outside "
        "the markers is never touched. Exits 1 when a file changed (or would change, with --check).",
    )
    p.add_argument("files", nargs="*", metavar="FILE", help="changed pages; their folders' index files are refreshed")
    p.add_argument("--check", action="store_true", help="report stale blocks without writing")
    p.add_argument(
        "--scaffold", action="store_true", help="create a missing index file (title and markers) at each corpus root"
    )
    p.set_defaults(func=index_blocks)


def index_blocks(args: argparse.Namespace) -> int:
    from gitwiki import config as config_mod
    from gitwiki import gitcli
    from gitwiki.commands.lint import repo_relative
    from gitwiki.index_blocks import BlockError, WorktreeCorpus, ancestor_indexes, create_front_index, refresh_file
    from gitwiki.pagefacts import FactsCache

    root, common_dir = gitcli.discover(args.chdir)
    config = config_mod.load(root)
    files = repo_relative(root, args.chdir, args.files) if args.files else None
    facts = FactsCache.load(config_mod.index_dir(config, root, common_dir))
    changed, failed = [], False
    for corpus in config.corpora:
        pages = WorktreeCorpus(root, corpus, config, facts)
        if files is None:
            targets = pages.index_files()
        else:
            wanted = {i for f in files if _in_corpus(corpus, f) for i in ancestor_indexes(corpus, config, f)}
            targets = sorted((i for i in wanted if (root / i).is_file()), key=lambda p: (-p.count("/"), p))
        created = create_front_index(pages, check=args.check) if args.scaffold else None
        if created:
            changed.append(created)
            targets = targets if args.check else [*targets, created]
        for index_path in targets:
            try:
                if refresh_file(pages, index_path, check=args.check) and index_path not in changed:
                    changed.append(index_path)
            except BlockError as e:  # report every malformed file, leave each unchanged
                print(f"gitwiki: error: {e}", file=sys.stderr)
                failed = True
    facts.save()
    verb = "would update" if args.check else "updated"
    for path in changed:
        print(f"{verb} {path}")
    return 1 if changed or failed else 0


def _in_corpus(corpus, path: str) -> bool:
    return not corpus.path or path.startswith(corpus.path + "/")
