"""What the source tests build: upstream repositories behind bare remotes, a checkout's [[repository]] entries and
the consent and sync it needs, and a checkout with two local corpora."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.helpers import LEXICAL, GitRepoFixture

TWO = """[embeddings]
enabled = false

[[corpus]]
name = "ops"
path = "ops"

[[corpus]]
name = "dev"
path = "dev"
"""
PAGES = {
    ".gitwiki.toml": TWO,
    "ops/deploy.md": "# Deploy\n\nRoll out the release with kubectl and watch the canary.\n",
    "ops/oncall.md": "# On call\n\nPage the platform team when the canary fails.\n",
    "dev/build.md": "# Build\n\nThe release build runs make and signs the canary binary.\n",
    "dev/style.md": "# Style\n\nFormat code with ruff before review.\n",
}


class Upstream:
    """A working repo that pushes to a bare one; the bare one is what gitwiki fetches."""

    def __init__(self, where: Path, pages: dict[str, str]):
        where.mkdir()
        (where / "work").mkdir()
        self.work = GitRepoFixture(where / "work")
        self.bare = where / "remote.git"
        self.work.commit("pages", pages)
        subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(self.bare)], check=True)
        self.work.git("remote", "add", "origin", str(self.bare))
        self.push()

    @property
    def url(self) -> str:
        return self.bare.as_uri()

    def push(self, *flags: str) -> None:
        self.work.git("push", "-q", *flags, "origin", "main")


def declare(*repos: tuple[str, Upstream], extra: str = LEXICAL) -> str:
    entries = "".join(f'[[repository]]\nname = "{name}"\nurl = "{up.url}"\n\n' for name, up in repos)
    return entries + extra


def allow(cli, cwd: Path, *names: str) -> None:
    """Consent to the checkout's own [[repository]] entries, as its user would after reading them."""
    code, out, err = cli("repo", "allow", *names, cwd=cwd)
    assert code == 0 and "allowed " in out, err


def sync(cli, cwd: Path, *args: str) -> list[dict]:
    code, out, err = cli("repo", "sync", "--json", *args, cwd=cwd)
    assert code == 0, err
    return json.loads(out)
