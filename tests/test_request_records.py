"""The records a request travels in (issue 32): a search option, a memory-search filter or a stored entry's field is
named where it is asked for and where it is used, not in every layer between. One test adds a throwaway search option
to a copy of the package, in three places, and sees it reach the ranking from the CLI and from Python; the others
count, from the source, the signatures and records that still list the options."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys

from tests.helpers import ROOT

PACKAGE = ROOT / "gitwiki"
# The search options a caller can set (SearchOptions' fields): a signature or record naming four or more of them
# restates the list, and a new option would have to be added there too.
SEARCH_OPTIONS = {"mode", "fusion", "top_files", "chunks_per_file", "limit", "snippet_chars", "full", "explain"}
# Where they may stand: the request as asked, the options as resolved, and the MCP tool, whose JSON schema is its
# signature (gitwiki/mcp/tools.json) and so stays flat.
SEARCH_PLACES = {"search.request.SearchRequest", "search.searcher.SearchOptions", "mcp.wiki_tools.GroundTool.ground"}
# Where an option is not restated but lives: its [search] default, and the ranking that uses it (the pure
# `rank_pages`, which the hooks call without a SearchOptions).
SEARCH_HOMES = {"config.SearchConfig", "search.ranking.rank_pages"}


def _listings(names: set[str], least: int) -> set[str]:
    """Every function signature and class body (its annotated fields) in gitwiki/ naming `least` or more of `names`,
    as module.Class.function."""
    found = set()
    for file in PACKAGE.rglob("*.py"):
        module = ".".join(file.relative_to(PACKAGE).with_suffix("").parts)
        tree = ast.parse(file.read_text())
        stack: list[tuple[ast.AST, str]] = [(tree, module)]
        while stack:
            node, where = stack.pop()
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.ClassDef):
                    here = f"{where}.{child.name}"
                    fields = {
                        s.target.id
                        for s in child.body
                        if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
                    }
                    if len(fields & names) >= least:
                        found.add(here)
                    stack.append((child, here))
                elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                    here = f"{where}.{child.name}"
                    a = child.args
                    params = {p.arg for p in [*a.posonlyargs, *a.args, *a.kwonlyargs]}
                    if len(params & names) >= least:
                        found.add(here)
                    stack.append((child, here))
    return found


def test_the_search_options_are_listed_in_three_places():
    assert _listings(SEARCH_OPTIONS, 4) - SEARCH_HOMES == SEARCH_PLACES


def test_a_throwaway_search_option_reaches_the_ranking_from_three_edits(tmp_path, repo):
    repo.commit(
        "init", {".gitwiki.toml": "[embeddings]\nenabled = false\n", "wiki/deploy.md": "# Deploy\n\nShip it.\n"}
    )
    copy = tmp_path / "copy"
    shutil.copytree(PACKAGE, copy / "gitwiki", ignore=shutil.ignore_patterns("__pycache__"))
    edits = {  # the places a new option is added: the request, the resolved options, the CLI flag
        "search/request.py": ("    explain: bool = False  # trace", "    throwaway: int | None = None\n"),
        "search/searcher.py": ("    explain: bool = False  # trace", "    throwaway: int | None = None\n"),
        "commands/ground.py": ('    p.add_argument("--committed"', '    p.add_argument("--throwaway", type=int)\n'),
    }
    for rel, (anchor, added) in edits.items():
        file = copy / "gitwiki" / rel
        text = file.read_text()
        assert text.count(anchor) == 1, f"{rel}: the anchor {anchor!r} moved; update this test"
        file.write_text(text.replace(anchor, added + anchor))
    script = f"""
from gitwiki.search import searcher
seen = []
search = searcher.Searcher.search
def spy(self, view, query, options, embedder):
    seen.append(options.throwaway)
    return search(self, view, query, options, embedder)
searcher.Searcher.search = spy
from gitwiki.cli import main
from gitwiki.search.request import SearchRequest
from gitwiki.wiki import Wiki
assert main(["-C", {str(repo.path)!r}, "ground", "--no-server", "--throwaway", "7", "ship"]) == 0
Wiki.open({str(repo.path)!r}).search(SearchRequest("ship", throwaway=8))
print("seen", seen)
"""
    env = {**os.environ, "PYTHONPATH": str(copy)}
    run = [sys.executable, "-c", script]
    done = subprocess.run(run, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "seen [7, 8]"
    assert "deploy.md" in done.stdout


# memory search's filters and a stored entry's fields, and where they may be listed: the record, and the MCP tool
# (flat: its JSON schema). `store.store` is the Python callers' shortcut that builds one BatchItem; `Entry` is the
# entry as stored, not a request.
MEMORY_FILTERS = {"limit", "after", "before", "days", "hours", "tag", "topic", "source", "mode"}
MEMORY_SEARCH_PLACES = {"memory.search.MemoryQuery", "mcp.memory_tools.MemoryTools.memory_search"}
ENTRY_FIELDS = {"topic", "text", "tags", "source", "confidence", "links", "force"}
STORE_PLACES = {
    "memory.store.BatchItem",
    "memory.store.store",
    "mcp.memory_tools.MemoryTools.memory_store",
    "memory.entry.Entry",
}


def test_memory_search_filters_are_listed_in_two_places():
    assert _listings(MEMORY_FILTERS, 5) == MEMORY_SEARCH_PLACES


def test_a_stored_entry_is_listed_by_its_record_and_the_tool():
    assert _listings(ENTRY_FIELDS, 5) == STORE_PLACES
