"""The project's own docs read by topic: no page names internal work items, every page lints clean with gitwiki's
own linter (one topic per page within the page-size limit, no broken links or anchors, no orphans), and the research
log is searched as a corpus of its own."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
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


def test_the_projects_own_docs_lint_clean(repo, cli):
    """`gitwiki lint` on a copy of the committed docs and .gitwiki.toml: no finding at all, so no page over the
    20,000-byte limit (GW011), no broken link (GW005) or anchor, no orphan; the limit is the default, not raised."""
    assert config.load(ROOT).lint.max_page_bytes == config.LintConfig().max_page_bytes
    tracked = subprocess.run(
        ["git", "ls-files", "-z", "docs", ".gitwiki.toml"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split("\0")
    for rel in filter(None, tracked):
        (repo.path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(ROOT / rel, repo.path / rel)
    repo.commit("docs")
    code, out, err = cli("lint", "--format", "json", cwd=repo.path)
    report = json.loads(out)
    found = [f"{f['path']}:{f['line']}: {f['code']} {f['message']}" for f in report["findings"]]
    assert (code, found, report["errors"], report["warnings"]) == (0, [], 0, 0), err
    assert sum(rel.endswith(".md") for rel in tracked) > 40  # every page of both corpora was there to lint


def test_the_research_log_is_a_corpus_apart_from_the_user_docs():
    corpora = {c.name: c for c in config.load(ROOT).corpora}
    page = "docs/research/ranking.md"
    assert (ROOT / page).is_file()
    assert not config.matches(corpora["docs"], page)
    assert config.matches(corpora["research"], page)
    assert config.matches(corpora["docs"], "docs/benchmarks.md")


# A runner given a bare `gitwiki` fetches the PyPI project of that name, which is not this one (the distribution is
# gitwiki-search): `uvx gitwiki`, `uv tool install gitwiki`, `pipx run gitwiki` would all install it.
RUNNER = re.compile(r"\b(?:uvx|uv\s+tool\s+(?:run|install)|pipx\s+(?:run|install))\b(?P<rest>[^`\n]*)")
FROM_US = re.compile(r"--(?:from|spec)[ =](?:gitwiki-search\b|git\+https://github\.com/gitwiki/gitwiki\b)")


def wrong_runners(text: str) -> list[str]:
    """Each runner command in `text` that names gitwiki without saying to take it from gitwiki-search."""
    found = []
    for match in RUNNER.finditer(text):
        rest = match["rest"]
        if re.search(r"(?<![\w-])gitwiki(?![\w-])", rest) and not FROM_US.search(rest):
            found.append(match[0].strip())
    return found


def test_wrong_runners_are_found():
    assert wrong_runners("run `uvx gitwiki index`, or `uv tool install gitwiki`; `pipx run gitwiki`") == [
        "uvx gitwiki index",
        "uv tool install gitwiki",
        "pipx run gitwiki",
    ]
    assert wrong_runners("`uvx --from gitwiki-search gitwiki index` or `uvx --from=gitwiki-search gitwiki`") == []
    assert wrong_runners("`uv tool install gitwiki-search`, `uvx ruff`, `pipx run --spec gitwiki-search gitwiki`") == []


def test_no_doc_template_or_plugin_runs_the_unrelated_pypi_gitwiki():
    shipped = [*PAGES, ROOT / "action.yml", *(ROOT / "templates").rglob("*"), *(ROOT / "plugins").rglob("*")]
    shipped += [*(ROOT / "ci").rglob("*"), *(ROOT / "gitwiki").rglob("*.py")]  # help texts and docstrings
    found = [
        f"{path.relative_to(ROOT)}: {command}"
        for path in shipped
        if path.is_file()
        for command in wrong_runners(path.read_text(encoding="utf-8"))
    ]
    assert found == []
