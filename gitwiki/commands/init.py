from __future__ import annotations

import argparse


def register(sub) -> None:
    p = sub.add_parser(
        "init", help="write .gitwiki.toml with one corpus", description="Write .gitwiki.toml with one [[corpus]]."
    )
    p.add_argument("--path", default="wiki", help="the corpus folder, relative to the repo root (default: wiki)")
    p.add_argument("--name", default="wiki", help="the corpus name (default: wiki)")
    p.add_argument("--force", action="store_true", help="overwrite an existing .gitwiki.toml")
    p.add_argument("--agents", action="store_true", help=AGENTS_HELP)
    p.set_defaults(func=init)


AGENTS_HELP = "also write how to keep the wiki into AGENTS.md (replacing an earlier gitwiki section)"


def init(args: argparse.Namespace) -> int:
    from gitwiki.config import REPO_CONFIG_NAME, init_text, normalize_corpus_path
    from gitwiki.errors import UsageError
    from gitwiki.fs import atomic_write
    from gitwiki.gitrepo import GitRepo

    repo = GitRepo.discover(args.chdir)
    target = repo.root / REPO_CONFIG_NAME
    path = normalize_corpus_path(args.path, "--path")
    if target.exists() and not args.force and not args.agents:
        raise UsageError(f"{target} exists; edit it, or pass --force to overwrite it")
    if target.exists() and not args.force:
        print(f"kept {target} (pass --force to overwrite it)")
    else:
        atomic_write(target, init_text(path, args.name))
        print(f"wrote {target} (corpus {args.name!r} at {path or '.'}/); next: gitwiki index")
    if args.agents:
        from gitwiki.conventions import with_agents_section

        agents_file = repo.root / "AGENTS.md"
        existing = agents_file.read_text(encoding="utf-8") if agents_file.is_file() else ""
        atomic_write(agents_file, with_agents_section(existing, path))
        print(f"{'updated' if existing else 'wrote'} {agents_file} (how to keep the wiki, for coding agents)")
    return 0
