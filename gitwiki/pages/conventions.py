"""The wiki conventions as text for agents: the AGENTS.md section `gitwiki init --agents` writes."""

from __future__ import annotations

import re
from pathlib import Path
from typing import NamedTuple

from gitwiki.fs import atomic_write

AGENTS_FILE = "AGENTS.md"
START, END = "<!-- gitwiki:agents -->", "<!-- /gitwiki:agents -->"


def agents_section(wiki_path: str) -> str:
    where = f"`{wiki_path}/`" if wiki_path else "this repository's markdown"
    return f"""{START}
## Keeping the wiki

The team's knowledge lives in the gitwiki wiki at {where}. Search it before answering or writing:
`gitwiki ground "QUESTION"` (MCP tool `ground`), then read the hits by line range (`read_markdown`).

- Update the page that covers a topic instead of adding a near-duplicate.
- One topic per page; the file name is a lower-case kebab-case slug (`deploy-rollback.md`); the first
  line is `# Title`, the only H1. Split pages past 20 KB.
- Put answers under headings that say what they answer; link related pages with relative links; cite
  sources with footnotes (`[^1]`).
- Never edit between `<!-- GITWIKI:INDEX-START -->` and `<!-- GITWIKI:INDEX-END -->`: it is generated.
- `gitwiki lint` must pass before a commit (the pre-commit hook runs it); fix its warnings too.
{END}
"""


def with_agents_section(existing: str, wiki_path: str) -> str:
    """`existing` AGENTS.md text with the gitwiki section replaced in place, or appended."""
    section = agents_section(wiki_path)
    block = re.compile(re.escape(START) + r".*?" + re.escape(END) + r"\n?", re.DOTALL)
    if block.search(existing):
        return block.sub(lambda _: section, existing, count=1)
    if not existing:
        return section
    return existing + ("" if existing.endswith("\n\n") else "\n" if existing.endswith("\n") else "\n\n") + section


class AgentsReport(NamedTuple):
    file: Path
    updated: bool  # the file existed before

    def describe(self) -> str:
        return f"{'updated' if self.updated else 'wrote'} {self.file} (how to keep the wiki, for coding agents)"


def write_agents(root: Path, wiki_path: str) -> AgentsReport:
    """Write or refresh the gitwiki section of `root`/AGENTS.md."""
    target = root / AGENTS_FILE
    existing = target.read_text(encoding="utf-8") if target.is_file() else ""
    atomic_write(target, with_agents_section(existing, wiki_path))
    return AgentsReport(target, bool(existing))
