"""Two upstream repositories (`platform`, `handbook`) behind bare remotes, and a `checkout` that declares both and
has allowed them."""

from __future__ import annotations

import pytest

from tests.sources.helpers import Upstream, allow, declare


@pytest.fixture
def platform(tmp_path) -> Upstream:
    return Upstream(
        tmp_path / "platform",
        {
            "wiki/deploy.md": "# Deploy\n\nWe roll out with kubernetes canaries.\n",
            "wiki/oncall.md": "# On call\n\nPage the platform team.[^1]\n\n[^1]: Rota in the HR tool.\n",
            "README.md": "# Platform\n\nThe readme mentions kubernetes too.\n",
        },
    )


@pytest.fixture
def handbook(tmp_path) -> Upstream:
    return Upstream(
        tmp_path / "handbook",
        {
            ".gitwiki.toml": '[[corpus]]\nname = "hb"\npath = "docs"\n',
            "docs/holidays.md": "# Holidays\n\nTwenty-five days of annual leave.\n",
        },
    )


@pytest.fixture
def checkout(repo, platform, handbook, cli):
    repo.commit(
        "init",
        {".gitwiki.toml": declare(("platform", platform), ("handbook", handbook)), "wiki/a.md": "# A\n\nlocal page\n"},
    )
    allow(cli, repo.path)
    return repo
