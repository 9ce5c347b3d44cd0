from __future__ import annotations

import argparse
import sys


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "git-hooks",
        help="install plain git hooks that refresh the index in the background (no pre-commit needed)",
        description="Manage post-commit, post-merge, post-checkout and post-rewrite hooks that run "
        "`gitwiki index -q` in the background. Existing hooks are kept and run first; core.hooksPath is honoured.",
    )
    p.add_argument("action", choices=("install", "uninstall", "status"))
    p.set_defaults(func=git_hooks)


def git_hooks(args: argparse.Namespace) -> int:
    from gitwiki.git import git_hooks as hooks
    from gitwiki.git.gitrepo import GitRepo

    repo = GitRepo.discover(args.chdir)
    states = getattr(hooks, args.action)(repo)
    print(f"hooks folder: {hooks.hooks_dir(repo)}")
    for s in states:
        extra = " (runs the previous hook first)" if s.chained else ""
        extra += " (another tool's hook; `install` keeps it and chains it)" if s.state == "foreign" else ""
        print(f"  {s.name}: {s.state}{extra}")
    if args.action != "uninstall" and (twice := hooks.double_indexing(repo)):
        print(f"gitwiki: warning: {twice}", file=sys.stderr)
    return 0
