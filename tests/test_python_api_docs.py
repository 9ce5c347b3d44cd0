"""docs/python-api.md runs: each python block, in order and in one namespace, in a repository holding the pages the
page describes, prints exactly the text block under it. The page fails this test when the library it shows drifts."""

from __future__ import annotations

import contextlib
import io
import re

from tests.helpers import ROOT

PAGE = ROOT / "docs" / "python-api.md"
BLOCK = re.compile(r"```(python|text)\n(.*?)```", re.S)
DEPLOY = "# Deploy\n\nWe deploy with argo.\n\n## Rollback\n\nTo roll back a release, run make rollback\nand say so in #ops.\n"
FAQ = "# FAQ\n\nAsk the platform team.\n"


def examples() -> list[tuple[str, str | None]]:
    """(code, the output shown under it, None when none is) for each python block of the page."""
    blocks = BLOCK.findall(PAGE.read_text(encoding="utf-8"))
    found: list[tuple[str, str | None]] = []
    for kind, text in blocks:
        if kind == "python":
            found.append((text, None))
        else:
            assert found and found[-1][1] is None, "a text block stands under one python block"
            found[-1] = (found[-1][0], text)
    return found


def test_every_example_prints_what_the_page_shows(repo, monkeypatch):
    repo.commit(
        "pages", {".gitwiki.toml": "[embeddings]\nenabled = false\n", "wiki/deploy.md": DEPLOY, "wiki/faq.md": FAQ}
    )
    monkeypatch.chdir(repo.path)
    namespace: dict[str, object] = {}
    shown = examples()
    assert len(shown) >= 8
    for code, expected in shown:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(code, str(PAGE), "exec"), namespace)
        assert out.getvalue() == (expected or ""), code
