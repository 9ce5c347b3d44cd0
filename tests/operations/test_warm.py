"""The warm-up of a long-lived process (`operations.warm`): a lexical-mode checkout never loads the model for it."""

from __future__ import annotations

import threading

import pytest

from gitwiki.wiki import Wiki
from tests.helpers import DEPLOY


@pytest.mark.parametrize("mode", ["lexical", "hybrid"])
def test_the_warm_up_loads_the_model_only_when_search_is_not_lexical(repo, monkeypatch, mode):
    from gitwiki.operations.warm import warm_up

    repo.commit("init", {".gitwiki.toml": f'[search]\nmode = "{mode}"\n', "wiki/deploy.md": DEPLOY})
    wiki = Wiki.open(repo.path)
    wiki.index(lexical=True)
    asked: list[str] = []
    monkeypatch.setattr(Wiki, "embedder", lambda self: asked.append("model") or None)  # a load, not made
    warm_up(wiki, threading.Lock())
    wiki.close()
    assert asked == ([] if mode == "lexical" else ["model"])
