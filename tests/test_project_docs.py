"""The project's own docs read by topic: no page names internal work items, the benchmarks page and the research
log stay within the page-size lint limit, and the research log is searched as a corpus of its own."""

from __future__ import annotations

import re
from pathlib import Path

from gitwiki import config

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted((ROOT / "docs").rglob("*.md")) + [ROOT / "README.md"]
# Work-log wording: "Core (issue 3)", "Issue-15 experiments", "this branch", "the third round", "other helpers' jobs".
WORK_ITEMS = re.compile(
    r"\bissues? \d|\bIssue-\d|\bthis branch\b|\bwork items?\b|\b(first|second|third|fourth) round\b|\bhelpers'", re.I
)


def test_no_doc_names_a_work_item():
    found = [
        f"{page.relative_to(ROOT)}:{n}: {line.strip()}"
        for page in PAGES
        for n, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1)
        if WORK_ITEMS.search(line)
    ]
    assert found == []


def test_the_benchmarks_page_and_the_research_log_fit_the_page_size_limit():
    limit = config.LintConfig().max_page_bytes
    pages = [ROOT / "docs" / "benchmarks.md", *sorted((ROOT / "docs" / "research").glob("*.md"))]
    sizes = {page.name: page.stat().st_size for page in pages}
    assert {name: size for name, size in sizes.items() if size > limit} == {}
    assert len(sizes) > 2  # the research log holds the history the benchmarks page used to


def test_the_research_log_is_a_corpus_apart_from_the_user_docs():
    corpora = {c.name: c for c in config.load(ROOT).corpora}
    page = "docs/research/ranking.md"
    assert (ROOT / page).is_file()
    assert not config.matches(corpora["docs"], page)
    assert config.matches(corpora["research"], page)
    assert config.matches(corpora["docs"], "docs/benchmarks.md")
