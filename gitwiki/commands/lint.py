from __future__ import annotations

import argparse
import sys
from pathlib import Path


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "lint",
        help="check pages: links, anchors, headings, mermaid, front matter, orphans",
        description="Lint the given pages (default: every staged page). Links resolve against the whole "
        "corpus as staged for commit. Prints path:line:col: CODE message; exits 1 when there are errors "
        "(warnings alone exit 0). Disable a rule in [lint] disable, a corpus's lint_disable, or on a page "
        "with <!-- gitwiki: disable=GW003 -->.",
    )
    p.add_argument("files", nargs="*", metavar="FILE", help="pages to lint (paths relative to the current directory)")
    p.add_argument("--format", choices=("text", "json", "github"), default="text", help="output format (default: text)")
    p.add_argument("--list-rules", action="store_true", help="print the rules and exit")
    p.set_defaults(func=lint)


def lint(args: argparse.Namespace) -> int:
    # Imported when the command runs: cli.py imports every command module to build its parser.
    from gitwiki.lint import RULES

    if args.list_rules:
        for code, rule in RULES.items():
            print(f"{code} {rule.name} ({rule.severity}): {rule.summary}")
        return 0

    from gitwiki import config as config_mod
    from gitwiki.commands.options import repo_relative
    from gitwiki.git import gitcli
    from gitwiki.lint import lint_repo
    from gitwiki.lint.output import FORMATS

    checkout = gitcli.discover(args.chdir)
    config = config_mod.load(checkout.root)
    files = repo_relative(checkout.root, args.chdir, args.files) if args.files else None
    if files is None and Path(args.chdir).resolve() != Path(checkout.root).resolve():
        # Links resolve against the whole corpus, so the default is the whole repo, wherever it is run from.
        print(
            f"gitwiki lint: no FILE given, so every staged page of {checkout.root} is linted, not only this "
            "folder's (pass FILEs, e.g. `gitwiki lint *.md`, for these)",
            file=sys.stderr,
        )
    run = lint_repo(checkout, config, files)
    sys.stdout.write(FORMATS[args.format](run.findings))
    errors = sum(f.severity == "error" for f in run.findings)
    if args.format == "text" and run.findings:
        warnings = len(run.findings) - errors
        print(f"gitwiki lint: {errors} error(s), {warnings} warning(s) in {run.files} page(s)", file=sys.stderr)
    return 1 if errors else 0
