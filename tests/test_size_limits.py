"""Big pages and interrupted runs (issue 11, items 11 and 15): chunking is linear in sections, oversized pages
are skipped and named, queries embed within a budget, one page cannot crowd out the others, and Ctrl-C keeps
the embedding already done."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gitwiki.errors import UsageError
from gitwiki.index.indexer import EMBED_BATCH
from gitwiki.markdown.chunker import parse_page
from gitwiki.wiki import Wiki
from tests.helpers import needs_model

LEXICAL = "[embeddings]\nenabled = false\n"


def _sections(n: int, salt: str = "") -> str:
    return "".join(f"## Section {i}\n\nSome words about section {i}{salt}.\n\n" for i in range(n))


def _best_of(runs: int, fn) -> float:
    best = float("inf")
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - started)
    return best


def test_chunking_is_linear_in_sections():
    assert len(parse_page(_sections(10_000)).chunks) == 10_000
    # Fresh text each run: the chunker remembers the parts it parsed, and a remembered page proves nothing.
    salts = iter(range(1_000_000))
    ratio = _best_of(3, lambda: parse_page(_sections(10_000, f"b{next(salts)}"))) / _best_of(
        3, lambda: parse_page(_sections(1_000, f"s{next(salts)}"))
    )
    assert ratio < 35  # 10x the sections: 12x measured (28x on a loaded host); the quadratic lookup: 50x and more


def test_one_page_owning_most_matches_leaves_room_for_the_others(repo, cli):
    repo.write(".gitwiki.toml", LEXICAL)
    repo.write(
        "big.md", "# Big\n\n" + "".join(f"## Deploy {i}\n\ndeploy deploy deploy step {i}\n\n" for i in range(600))
    )
    for i in range(6):
        repo.write(f"small{i}.md", f"# Small {i}\n\nOnce we deploy, page {i} applies.\n")
    repo.commit("pages")
    code, out, err = cli("ground", "deploy", "--json", "--top-files", "5", cwd=repo.path)
    assert code == 0, err
    docs = json.loads(out)["docs"]
    assert len(docs) == 5 and docs[0]["path"] == "big.md"  # 2 pages before the candidate pool grew


def test_pages_over_the_size_limit_are_searched_up_to_it_and_named_everywhere(repo, cli):
    repo.write(".gitwiki.toml", LEXICAL + "[search]\nmax_page_bytes = 2000\n")
    repo.write(
        "huge.md", "# Huge\n\n" + "deploy notes\n" * 160 + "## Tail\n\nthe walrus past the limit\n" + "x\n" * 200
    )
    repo.write("fine.md", "# Fine\n\ndeploy notes\n")
    repo.commit("pages")
    code, out, err = cli("index", "-q", cwd=repo.path)  # what the post-commit hook runs
    assert code == 0 and "huge.md: 2,523 bytes, over the 2,000-byte limit" in err and "split the page" in err
    code, out, err = cli("index", "--json", "--rebuild", cwd=repo.path)
    assert json.loads(out)[0]["truncated"] == {"huge.md": 2523}
    code, out, err = cli("ground", "deploy", "--json", cwd=repo.path)
    assert sorted(d["path"] for d in json.loads(out)["docs"]) == ["fine.md", "huge.md"]  # its head is searched
    code, out, _ = cli("ground", "walrus", cwd=repo.path)  # its tail is not, and the footer says why
    assert "no results" in out
    code, out, _ = cli("ground", "deploy", cwd=repo.path)
    assert "1 page(s) searched only up to [search] max_page_bytes: huge.md" in out
    code, out, _ = cli("status", cwd=repo.path)
    assert "searched only up to [search] max_page_bytes (2,000): huge.md" in out
    code, out, _ = cli("lint", "huge.md", cwd=repo.path)
    assert code == 1 and "GW013" in out


def test_a_page_is_cut_after_a_whole_line_and_never_inside_a_character():
    from gitwiki.pagetext import head

    assert head(b"ab\ncd\nef", 7) == b"ab\ncd\n" and head(b"ab\ncd", 10) == b"ab\ncd"
    assert head("é".encode() * 4, 5) == "éé".encode()  # one long line: back to a character's first byte


@needs_model
def test_query_time_embedding_has_a_budget_and_the_answer_says_so(repo, cli):
    repo.write(".gitwiki.toml", "[search]\nembed_budget = 8\n")
    repo.commit("config", {"kept.md": "# Kept\n\nThe committed deploy guide.\n"})
    assert cli("index", cwd=repo.path)[0] == 0
    repo.write(
        "draft.md", "# Draft\n\n" + "".join(f"## Part {i}\n\nDeploy step {i} of the draft.\n\n" for i in range(30))
    )
    repo.write("note.md", "# Note\n\nA short deploy note.\n")
    code, out, err = cli("ground", "deploy", "--json", "--top-files", "5", cwd=repo.path)
    assert code == 0, err
    result = json.loads(out)
    assert result["mode"] == "hybrid" and result["lexical_only"] == ["draft.md"]
    assert {"draft.md", "note.md", "kept.md"} <= {d["path"] for d in result["docs"]}
    code, out, err = cli("ground", "deploy", cwd=repo.path)
    assert "1 searched lexically only (embedding budget): draft.md" in out


class _InterruptedEmbedder:
    """Embeds like a model (unit vectors) until `stop_after` texts, then the user presses Ctrl-C."""

    model_id, dim = "test/interrupted", 4

    def __init__(self, stop_after: int | None):
        self.stop_after = stop_after
        self.embedded = 0

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        for start in range(0, len(texts), 32):  # as fastembed works: batches of 32 inside one call
            self.embedded += len(texts[start : start + 32])
            if self.stop_after is not None and self.embedded > self.stop_after:
                raise KeyboardInterrupt
        return np.tile(np.array([1, 0, 0, 0], np.float32), (len(texts), 1))

    def embed_query(self, text: str) -> np.ndarray:
        return np.array([1, 0, 0, 0], np.float32)


def test_ctrl_c_keeps_the_embedding_done_so_far(repo, monkeypatch):
    repo.commit(
        "pages",
        {f"p{i}.md": f"# P{i}\n\n" + "".join(f"## S{j}\n\nText {i} {j}.\n\n" for j in range(10)) for i in range(30)},
    )
    wiki = Wiki.open(repo.path)
    monkeypatch.setattr(wiki, "embedder", lambda: _InterruptedEmbedder(stop_after=100))
    with pytest.raises(KeyboardInterrupt):
        wiki.index()
    kept = wiki.store.counts()["vectors"]
    assert kept == 100 // EMBED_BATCH * EMBED_BATCH and kept >= 60  # at most one small batch lost (main: all 100)
    monkeypatch.setattr(wiki, "embedder", lambda: _InterruptedEmbedder(stop_after=None))
    (report,) = wiki.index()
    assert report.embedded == 300 - kept and wiki.store.counts()["vectors"] == 300
    wiki.close()


@given(text=st.text(max_size=300), limit=st.integers(1, 400))
@settings(max_examples=200, deadline=None)
def test_a_cut_page_is_a_prefix_within_the_limit_that_still_decodes(text, limit):
    from gitwiki.pagetext import head

    data = text.encode("utf-8")
    cut = head(data, limit)
    assert data.startswith(cut) and len(cut) <= limit and (cut == data or len(data) > limit)
    cut.decode("utf-8")  # never ends inside a character
    if b"\n" in data[:limit] and len(data) > limit:
        assert cut.endswith(b"\n")  # whole lines when there is one within the limit


def test_a_query_past_the_cap_is_refused_at_once_by_the_cli_and_the_mcp_server(repo, cli, tmp_path):
    """A 100 MB `ground` query was searched: 42 s and 1.55 GB. Past MAX_QUERY_CHARS it is a usage error, in the
    library, before any work; a query at the cap is searched as usual."""
    import anyio

    from gitwiki.search.searcher import MAX_QUERY_CHARS
    from tests.mcp.client import connect, refused

    repo.commit("init", {".gitwiki.toml": LEXICAL, "wiki/faq.md": "# FAQ\n\nAsk the platform team.\n"})
    at_cap = ("platform " * MAX_QUERY_CHARS)[:MAX_QUERY_CHARS]
    code, out, err = cli("ground", at_cap, "--json", "--no-server", cwd=repo.path)
    assert code == 0, err
    assert json.loads(out)["docs"][0]["path"] == "wiki/faq.md"
    huge = "platform " * 2_000_000  # 18 MB
    started = time.perf_counter()
    code, out, err = cli("ground", huge, "--no-server", cwd=repo.path)
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and "the query is 18,000,000 characters; at most 4,000 are searched" in err
    assert time.perf_counter() - started < 10  # a bound against searching it, not a speed claim
    wiki = Wiki.open(repo.path)
    with pytest.raises(UsageError, match="at most 4,000"):
        wiki.search(at_cap + "x")
    wiki.close()

    async def main():
        with (tmp_path / "serve.log").open("w") as log:  # not the captured stderr: the server needs a real file
            async with connect(repo.path, errlog=log) as session:
                return await refused(session, "ground", query=at_cap + "x")

    error = anyio.run(main)
    assert error.error.code == -32602 and "the query is 4,001 characters" in error.error.message
    from gitwiki.cli import build_parser

    usage = build_parser("ground")._subparsers._group_actions[0].choices["ground"].format_help()
    assert f"at most {MAX_QUERY_CHARS:,} characters" in " ".join(usage.split())  # said where it is asked
